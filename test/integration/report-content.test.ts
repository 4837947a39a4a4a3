import { mkdir, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAlerter, readOpenFindings } from '../../src/alerts/index.js';
import { silentLogger } from '../../src/log.js';
import { writeReport } from '../../src/report/findings-report.js';
import { judgeSlice, type JudgeContext } from '../../src/sweep/judge/index.js';
import type { ChargeFact, ClaimFact, IdentityFacts } from '../../src/sweep/facts.js';
import type { Finding } from '../../src/sweep/judge/types.js';
import { runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { factBuilders } from '../support/facts.js';

/**
 * What a report row and an alert say about a finding's own time and, for a duplicate,
 * its charges: the findings are made by the real judge, then stored as the sweep
 * stores them (details plus reason), so the report reads the shapes the sweep writes.
 */

const NOW = new Date('2026-11-10T12:00:00Z');
const DAY = 86_400_000;
const daysAgo = (d: number) => new Date(NOW.getTime() - d * DAY);
const ACCOUNT = 'acct_report1';
let db: TestDatabase;

const facts = factBuilders(NOW);
const ctx: JudgeContext = facts.context({ retentionMs: 60 * DAY });
// A month-old key of a connected account, in euros.
const charge = (over: Partial<ChargeFact>): ChargeFact =>
  facts.charge({
    id: 'ch_x',
    account: ACCOUNT,
    created: daysAgo(30),
    amount: 4200,
    amountCaptured: 4200,
    currency: 'eur',
    paymentIntent: 'pi_x',
    idempotencyKey: 'order-1',
    ...over,
  });
const claim = (over: Partial<ClaimFact>): ClaimFact =>
  facts.claim({
    key: 'order-1',
    accountId: ACCOUNT,
    createdAt: daysAgo(30),
    updatedAt: daysAgo(30),
    responseChargeId: 'ch_x',
    answerObject: null,
    answerStatus: null,
    answerMapped: null,
    amount: 4200,
    currency: 'eur',
    ...over,
  });
const identity = (i: Partial<IdentityFacts>): IdentityFacts =>
  facts.identity({ account: ACCOUNT, key: 'order-1', ...i });
const judged = (i: IdentityFacts, category: string): Finding => {
  const found = judgeSlice({ identities: [i], looseCharges: [], looseEffects: [] }, ctx).findings.find(
    (f) => f.category === category,
  );
  if (!found) throw new Error(`the judge made no ${category}`);
  return found;
};

async function store(f: Finding, firstSeen: Date): Promise<number> {
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO recon_findings (category, account, subject, charge_id, tenant_id, idempotency_key, state, details,
                                 first_seen_run, last_seen_run, first_seen_at, last_seen_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'open', $7, 'run_seed', 'run_seed', $8, $8) RETURNING id`,
    [
      f.category,
      ACCOUNT,
      f.subject,
      f.chargeId,
      f.tenantId,
      f.idempotencyKey,
      JSON.stringify({ ...f.details, ...(f.reason ? { reason: f.reason } : {}) }),
      firstSeen,
    ],
  );
  return rows[0]!.id;
}

async function csvRows(): Promise<Array<Record<string, string>>> {
  let text = '';
  const out = new Writable({ write: (c: Buffer, _e, done) => ((text += c.toString()), done()) });
  await writeReport(db.pool, { account: ACCOUNT }, 'csv', out);
  return parse(text, { columns: true }) as Array<Record<string, string>>;
}

const ids: Record<string, number> = {};

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(
    `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at)
     VALUES ('run_seed', 'backfill', $1, $2, $3, 'succeeded', $3, $3)`,
    [ACCOUNT, daysAgo(40), NOW],
  );
  // One key charged three times, 30, 29 and 28 days ago; the first is the kept charge.
  const three = [
    charge({ id: 'ch_kept' }),
    charge({ id: 'ch_x2', created: daysAgo(29), amount: 4200 }),
    charge({ id: 'ch_x3', created: daysAgo(28), amount: 990 }),
  ];
  ids.duplicate = await store(
    judged(identity({ claim: claim({ responseChargeId: 'ch_kept' }), charges: three }), 'duplicate_charge'),
    NOW,
  );
  // Money no one can attribute, created 12 days ago, found today.
  ids.unattributed = await store(
    judged(
      identity({
        tenantId: 'ghost',
        tenantKnown: false,
        charges: [charge({ id: 'ch_ghost', created: daysAgo(12), tenantId: 'ghost' })],
      }),
      'unattributed_charge',
    ),
    NOW,
  );
  // A stored success with no charge and no payment row: only the claim's own time.
  ids.lost = await store(
    judged(
      identity({
        key: 'order-9',
        claim: claim({ key: 'order-9', createdAt: daysAgo(5), updatedAt: daysAgo(5), responseChargeId: null }),
      }),
      'lost_effect',
    ),
    NOW,
  );
  // A charge Stripe returned unreadable has no time of its own.
  await db.pool.query(
    `INSERT INTO recon_findings (category, account, subject, charge_id, state, details, first_seen_run, last_seen_run, first_seen_at, last_seen_at)
     VALUES ('unattributed_charge', $1, 'ch_bad', 'ch_bad', 'open', '{"malformed": "currency is not three letters"}', 'run_seed', 'run_seed', $2, $2)`,
    [ACCOUNT, NOW],
  );
});
afterAll(async () => {
  await db.drop();
});

describe('report rows', () => {
  it('a duplicate_charge carries the kept charge’s amount and currency and the number of live charges', async () => {
    const row = (await csvRows()).find((r) => Number(r.id) === ids.duplicate)!;
    expect(row).toMatchObject({
      category: 'duplicate_charge',
      charge_id: 'ch_kept',
      charge_amount: '4200',
      currency: 'eur',
      live_charges: '3',
      charge_status: 'succeeded',
    });
  });

  it('evidence_at is the charge’s own creation (the earliest live charge of a duplicate), else the claim’s; first_seen_at stays when the sweep found it', async () => {
    const rows = new Map((await csvRows()).map((r) => [r.id, r]));
    expect(rows.get(String(ids.duplicate))).toMatchObject({
      evidence_at: '2026-10-11T12:00:00Z',
      first_seen_at: '2026-11-10T12:00:00Z',
    });
    expect(rows.get(String(ids.unattributed))).toMatchObject({ evidence_at: '2026-10-29T12:00:00Z', live_charges: '' });
    expect(rows.get(String(ids.lost))).toMatchObject({ evidence_at: '2026-11-05T12:00:00Z', charge_id: '' });
    expect([...rows.values()].find((r) => r.charge_id === 'ch_bad')).toMatchObject({ evidence_at: '' });
  });

  it('the JSON report has the same columns, numbers as numbers', async () => {
    let text = '';
    const out = new Writable({ write: (c: Buffer, _e, done) => ((text += c.toString()), done()) });
    await writeReport(db.pool, { account: ACCOUNT, category: 'duplicate_charge' }, 'json', out);
    expect(JSON.parse(text)).toEqual([
      expect.objectContaining({ charge_amount: 4200, live_charges: 3, evidence_at: '2026-10-11T12:00:00Z' }),
    ]);
  });
});

describe('the oldest open finding in alerts', () => {
  it('is dated by its evidence (30 days), not by when the sweep first saw it (today)', async () => {
    const open = await readOpenFindings(db.pool, ACCOUNT);
    expect(open.oldestOpenAt).toEqual(daysAgo(30));

    const bodies: string[] = [];
    const alerter = createAlerter({
      pool: db.pool,
      config: {
        slack: { webhookUrl: 'https://hooks.slack.invalid/services/T0/B0/secretpath' },
        pagerduty: undefined,
        webhook: undefined,
        repeatMs: 3_600_000,
      },
      clock: () => NOW,
      logger: silentLogger(),
      fetch: async (_url, init) => {
        bodies.push(String(init?.body));
        return new Response('ok', { status: 200 });
      },
    });
    expect(await alerter.notifyAccount({ runId: 'run_seed', account: ACCOUNT })).toMatchObject({ sent: 1, failed: 0 });
    expect(JSON.parse(bodies[0]!).text).toContain(
      'Oldest open finding: 30d old (evidence dated 2026-10-11T12:00:00.000Z)',
    );
  });
});

describe('sweeper report --out', () => {
  it('a directory exits 64 with one line saying to name a file, and writes nothing there', async () => {
    const dir = path.join(tmpdir(), `sweeper-report-dir-${process.pid}`);
    await mkdir(dir, { recursive: true });
    for (const out of [dir, `${dir}/`]) {
      const result = await runCli(['report', '--out', out], { DATABASE_URL: db.url });
      expect(result.code).toBe(64);
      expect(result.stderr.trim()).toBe(
        `sweeper: --out ${out} is a directory: give the file to write, e.g. --out ${dir}/findings.csv`,
      );
    }
    expect(await readdir(dir)).toEqual([]);
    expect(
      await readdir(tmpdir()).then((names) =>
        names.filter((n) => n.startsWith(`sweeper-report-dir-${process.pid}.tmp`)),
      ),
    ).toEqual([]);
  });
});
