import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_SIZE } from '../../src/serve/findings-query.js';
import { readOpenSeries } from '../../src/serve/runs-query.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { csrfOf, HOSTILE, reviewApp, seedReviewScenario, Visitor, type ReviewScenario } from '../support/review.js';

/**
 * What the review page shows, through `inject` on a real database: the list and its
 * filters, counts and pages; one finding's evidence, dashboard links and audit trail;
 * closing many at once; the runs and the series of open findings; and markup from
 * Stripe's metadata, shown as text wherever it appears.
 */
const HOUR = 3_600_000;
const NOW = new Date('2026-11-10T12:00:00Z');

let db: TestDatabase;
let scenario: ReviewScenario;
let app: FastifyInstance;
let alice: Visitor;

beforeAll(async () => {
  db = await createTestDatabase();
  scenario = await seedReviewScenario(db.pool, NOW);
  // The page's clock two hours after the sweep that found everything.
  ({ app } = await reviewApp(db.pool, new Date(NOW.getTime() + 2 * HOUR)));
  alice = new Visitor(app);
  await alice.signIn('alice');
});
afterAll(async () => {
  await app.close();
  await db.drop();
});

/** The finding ids a list page shows, in order. */
const listed = (html: string) => [...html.matchAll(/<tr data-finding="(\d+)">/g)].map((m) => Number(m[1]));
const ids = (category: string) => scenario.open[category] ?? [];

describe('the findings list', () => {
  it('shows the open findings, oldest first, with the count per category', async () => {
    const page = await alice.get('/');
    expect(page.statusCode).toBe(200);
    const all = Object.values(scenario.open)
      .flat()
      .sort((a, b) => a - b);
    expect(listed(page.body)).toEqual(all);
    expect(page.body).toContain(`data-total="${all.length}"`);
    expect(page.body).toMatch(/duplicate_effect<strong>2<\/strong>/);
    expect(page.body).toMatch(/unattributed_charge<strong>4<\/strong>/);
    // The repaired claim_without_effect is not open.
    expect(page.body).not.toMatch(/<td>claim_without_effect<\/td>/);
  });

  it('filters by category, state, tenant, account, age and amount', async () => {
    expect(listed((await alice.get('/?category=duplicate_effect')).body)).toEqual(ids('duplicate_effect'));
    const repaired = listed((await alice.get('/?state=repaired')).body);
    expect(repaired).toHaveLength(1);
    expect(listed((await alice.get('/?state=any')).body)).toContain(repaired[0]);
    expect(listed((await alice.get('/?tenant=shop&category=stale_claim')).body)).toEqual(ids('stale_claim'));
    expect(listed((await alice.get('/?tenant=nobody')).body)).toEqual([]);
    expect(listed((await alice.get('/?account=acct_other')).body)).toEqual([]);
    expect(listed((await alice.get('/?account=platform')).body)).toHaveLength(
      Object.values(scenario.open).flat().length,
    );
    // Found two hours before the page's clock: over 1h ago, not over 1d ago.
    expect(listed((await alice.get('/?age=1h')).body).length).toBeGreaterThan(0);
    expect(listed((await alice.get('/?age=1d')).body)).toEqual([]);
    // 10, 50 and 120 USD without metadata, 6.66 USD with markup in it; amounts in major units.
    const between = listed((await alice.get('/?category=unattributed_charge&min=40&max=100')).body);
    expect(between).toHaveLength(1);
    expect((await alice.get(`/findings/${between[0]}`)).body).toContain('50.00 USD');
    expect(listed((await alice.get('/?category=unattributed_charge&min=6.66&max=6.66')).body)).toHaveLength(1);
  });

  it('says what it could not read in a filter instead of failing', async () => {
    const page = await alice.get('/?category=nonsense&age=soon&min=lots');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('category &quot;nonsense&quot; is not one of');
    expect(page.body).toContain('age &quot;soon&quot; is not a duration');
    expect(page.body).toContain('min &quot;lots&quot; is not an amount');
  });

  it(`pages by id, ${PAGE_SIZE} at a time, forwards and back`, async () => {
    // Seventy more findings of an account of their own.
    await db.pool.query(
      `INSERT INTO recon_findings (category, account, subject, state, details, first_seen_run, last_seen_run, first_seen_at, last_seen_at)
       SELECT 'unattributed_charge', 'acct_paged', 'ch_paged_' || i, 'open', '{}', 'run_x', 'run_x', $1, $1
         FROM generate_series(1, 70) AS i`,
      [NOW],
    );
    const first = await alice.get('/?account=acct_paged');
    const one = listed(first.body);
    expect(one).toHaveLength(PAGE_SIZE);
    expect(first.body).toContain('data-total="70"');
    const next = /href="([^"]+)" rel="next"/.exec(first.body)?.[1]?.replace(/&amp;/g, '&');
    expect(next).toBe(`/?state=open&account=acct_paged&after=${one[PAGE_SIZE - 1]}`);
    const second = await alice.get(next!);
    const two = listed(second.body);
    expect(two).toHaveLength(20);
    expect(Math.min(...two)).toBeGreaterThan(Math.max(...one));
    expect(second.body).not.toContain('rel="next"');
    const previous = /href="([^"]+)" rel="prev"/.exec(second.body)?.[1]?.replace(/&amp;/g, '&');
    expect(listed((await alice.get(previous!)).body)).toEqual(one);
  });
});

describe('one finding', () => {
  it('shows the evidence side by side, with a dashboard link per charge', async () => {
    const [id] = ids('duplicate_effect');
    const page = await alice.get(`/findings/${id}`);
    expect(page.statusCode).toBe(200);
    const body = page.body;
    expect(body).toContain('duplicate_effect');
    expect(body).toContain('order-1');
    // Both payment rows, both charges (kept and extra), each charge linked in test mode by its PaymentIntent.
    expect(body.match(/Payment row <span class="sub">#\d+/g)).toHaveLength(2);
    expect(body).toMatch(/Charge <span class="sub">kept/);
    expect(body).toMatch(/Charge <span class="sub">extra/);
    expect(body).toContain('href="https://dashboard.stripe.com/test/payments/pi_order1_a"');
    expect(body).toContain('href="https://dashboard.stripe.com/test/payments/pi_order1_b"');
    expect(body).toContain('rel="noopener noreferrer"');
    expect(body).toContain('Nothing was done to this finding yet.');
    expect(body).toContain('value="not_duplicate"');
  });

  it('marks the fact the evidence disagrees on', async () => {
    const page = await alice.get(`/findings/${ids('amount_mismatch')[0]}`);
    const amountRow = /<tr class="differs"><th scope="row">amount[\s\S]*?<\/tr>/.exec(page.body)?.[0] ?? '';
    expect(amountRow).toContain('20.00 USD');
    expect(amountRow).toContain('25.00 USD');
    expect(page.body).not.toContain('value="not_duplicate"');
  });

  it('tells the sweep’s automatic actions from a person’s in the audit trail', async () => {
    const { rows } = await db.pool.query<{ id: string }>(`SELECT id FROM recon_findings WHERE state = 'repaired'`);
    const repaired = await alice.get(`/findings/${rows[0]!.id}`);
    expect(repaired.body).toMatch(/<tr class="automatic">[\s\S]*badge automatic[\s\S]*run run_/);
    expect(repaired.body).not.toContain('action="/findings/');

    const id = ids('stale_claim')[0]!;
    const closed = await alice.submit(`/findings/${id}`, `/findings/${id}/close`, {
      action: 'ignore',
      note: 'retried <b>by hand</b>',
    });
    expect(closed.headers.location).toBe(`/findings/${id}?done=ignored`);
    const after = await alice.get(closed.headers.location as string);
    expect(after.body).toContain('Ignored.');
    expect(after.body).toMatch(/<tr class="person">[\s\S]*badge person">person<\/span> alice[\s\S]*ignored/);
    expect(after.body).toContain('retried &lt;b&gt;by hand&lt;/b&gt;');
    expect(after.body).not.toContain('<b>by hand</b>');
    // Closing it again (a second tab, a form posted twice) is refused, saying by whom it was closed.
    const replay = await alice.post(`/findings/${id}/close`, {
      _csrf: csrfOf(after.body),
      action: 'resolve',
      note: 'again',
    });
    expect(replay.statusCode).toBe(409);
    expect(replay.body).toContain('already ignored (by alice)');
  });

  it('refuses a close without a note, and a finding that does not exist', async () => {
    const id = ids('amount_mismatch')[0]!;
    const blank = await alice.submit(`/findings/${id}`, `/findings/${id}/close`, { action: 'resolve', note: '   ' });
    expect(blank.statusCode).toBe(400);
    expect(blank.body).toContain('Write a note');
    expect((await alice.get('/findings/999999')).statusCode).toBe(404);
    expect((await alice.get('/findings/abc')).statusCode).toBe(404);
  });
});

describe('closing many at once', () => {
  it('closes each selected finding with its own audit row, and says which it could not', async () => {
    const [a, b, c] = ids('unattributed_charge');
    const duplicate = ids('duplicate_effect')[1]!;
    const response = await alice.submit('/?category=unattributed_charge', '/findings/close', {
      id: [String(a), String(b), String(c), String(duplicate)],
      action: 'not_duplicate',
      note: 'reviewed',
      back: '/?category=unattributed_charge',
    });
    expect(response.statusCode).toBe(200);
    // Not-a-duplicate is for duplicates only: the duplicate_effect is closed, the others are named.
    expect(response.body).toContain('Marked not a duplicate 1 finding');
    expect(response.body.match(/not-a-duplicate is for duplicate_effect and suspected_duplicate/g)).toHaveLength(3);
    const resolved = await alice.submit('/?category=unattributed_charge', '/findings/close', {
      id: [String(a), String(b), String(duplicate)],
      action: 'resolve',
      note: 'refunded by hand, PAY-1',
    });
    expect(resolved.body).toContain('Resolved 2 findings');
    expect(resolved.body).toContain(`#${duplicate}</a>: finding ${duplicate} is already resolved (by alice)`);
    const { rows } = await db.pool.query<{ finding_id: string; actor: string; action: string }>(
      'SELECT finding_id, actor, action FROM recon_repairs WHERE finding_id = ANY($1::bigint[]) ORDER BY finding_id',
      [[a, b, duplicate]],
    );
    expect(rows.map((r) => [Number(r.finding_id), r.actor, r.action])).toEqual(
      [
        [a, 'alice', 'resolved'],
        [b, 'alice', 'resolved'],
        [duplicate, 'alice', 'not_duplicate'],
      ].sort((x, y) => Number(x[0]) - Number(y[0])),
    );
  });
});

describe('markup from Stripe', () => {
  it('is shown as text in the list and on the finding, never as markup', async () => {
    const list = await alice.get('/?category=unattributed_charge&state=any');
    const { rows } = await db.pool.query<{ id: string }>(
      `SELECT id FROM recon_findings WHERE charge_id = 'ch_hostile'`,
    );
    for (const body of [list.body, (await alice.get(`/findings/${rows[0]!.id}`)).body]) {
      expect(body).toContain('&lt;img src=x onerror=alert(1)&gt;');
      expect(body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      expect(body).not.toContain(HOSTILE.tenant);
      expect(body).not.toContain(HOSTILE.key);
    }
  });
});

describe('runs and charts', () => {
  it('lists the runs with their counts and draws the open findings and completeness', async () => {
    const page = await alice.get('/runs?range=1d');
    expect(page.statusCode).toBe(200);
    const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM recon_runs');
    for (const r of rows) expect(page.body).toContain(`data-run="${r.id}"`);
    expect(page.body).toMatch(/<polygon\s+class="band c\d+"\s+data-series="duplicate_effect"/);
    expect(page.body).toContain('aria-label="completeness per day of platform"');
  });

  it('counts what was open at each instant from first_seen_at and closed_at', async () => {
    const t = (h: number) => new Date(NOW.getTime() + h * HOUR);
    await db.pool.query(
      `INSERT INTO recon_findings (category, account, subject, state, details, first_seen_run, last_seen_run,
                                   first_seen_at, last_seen_at, closed_at)
       VALUES ('stale_claim', 'acct_series', 'a', 'open', '{}', 'r', 'r', $1, $1, NULL),      -- open from 1h
              ('stale_claim', 'acct_series', 'b', 'resolved', '{}', 'r', 'r', $2, $2, $3),    -- open 2h..4h
              ('lost_effect', 'acct_series', 'c', 'resolved', '{}', 'r', 'r', $4, $4, $5),    -- open before the range until 3h
              ('lost_effect', 'acct_series', 'd', 'repaired', '{}', 'r', 'r', $2, $2, $2),    -- repaired as found: never open
              ('lost_effect', 'acct_series', 'e', 'resolved', '{}', 'r', 'r', $4, $4, $6)     -- closed before the range`,
      [t(1), t(2), t(4), t(-10), t(3), t(-5)],
    );
    const series = await readOpenSeries(db.pool, { from: t(0), to: t(5), points: 6, account: 'acct_series' });
    expect(series.at.map((d) => d.toISOString())).toEqual([0, 1, 2, 3, 4, 5].map((h) => t(h).toISOString()));
    expect(Object.fromEntries(series.byCategory)).toEqual({
      stale_claim: [0, 1, 2, 2, 1, 1],
      lost_effect: [1, 1, 1, 0, 0, 0],
    });
  });
});
