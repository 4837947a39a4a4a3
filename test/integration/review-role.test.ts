import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.js';
import { createTestDatabase, roleSettings, type TestDatabase } from '../support/db.js';
import { makePlan } from '../../src/plans/index.js';
import { sweepOptions } from '../../src/sweep/sweep.js';
import { reviewApp, seedReviewScenario, Visitor, type ReviewScenario } from '../support/review.js';
import { charge, memorySweepDeps, seedClaim } from '../support/scenario.js';

/**
 * jobs/sql/review-role.sql: the review page connected as `sweeper_review` shows every
 * page and closes findings with their audit rows, and the role can do nothing else.
 */
const NOW = new Date('2026-11-10T12:00:00Z');
let db: TestDatabase;
let review: Pool;
let scenario: ReviewScenario;
let app: FastifyInstance;

beforeAll(async () => {
  db = await createTestDatabase();
  scenario = await seedReviewScenario(db.pool, NOW);
  const sql = await readFile(fileURLToPath(new URL('../../jobs/sql/review-role.sql', import.meta.url)), 'utf8');
  await db.pool.query(sql);
  // The role is set at connection start-up, before any query can be sent on it.
  const url = new URL(db.url);
  url.searchParams.set('options', '-c role=sweeper_review');
  review = createPool(url.toString(), { max: 4 });
  ({ app } = await reviewApp(review, NOW));
});
afterAll(async () => {
  await app.close();
  await review.end();
  await db.drop();
});

describe('the review role', () => {
  it('serves every page and closes findings, one and many, each with its audit row', async () => {
    expect((await review.query('SELECT current_user AS u')).rows[0].u).toBe('sweeper_review');
    const alice = new Visitor(app);
    await alice.signIn('alice');
    const [one, two] = scenario.open.duplicate_effect!;
    const [three] = scenario.open.unattributed_charge!;
    for (const url of ['/', '/?state=any&min=1', `/findings/${one}`, '/runs', '/plans'])
      expect((await alice.get(url)).statusCode, url).toBe(200);
    const single = await alice.submit(`/findings/${one}`, `/findings/${one}/close`, {
      action: 'not_duplicate',
      note: 'meant',
    });
    expect(single.statusCode).toBe(303);
    const many = await alice.submit('/', '/findings/close', {
      id: [String(two), String(three)],
      action: 'resolve',
      note: 'done',
    });
    expect(many.body).toContain('Resolved 2 findings');
    const { rows } = await db.pool.query<{ finding_id: string; actor: string }>(
      'SELECT finding_id, actor FROM recon_repairs WHERE finding_id = ANY($1::bigint[]) ORDER BY finding_id',
      [[one, two, three]],
    );
    expect(rows.map((r) => [Number(r.finding_id), r.actor])).toEqual(
      [one!, two!, three!].sort((a, b) => a - b).map((id) => [id, 'alice']),
    );
    const verdict = await db.pool.query(`SELECT details ->> 'verdict' AS v FROM recon_findings WHERE id = $1`, [one]);
    expect(verdict.rows[0].v).toBe('not_duplicate');
  });

  it('cannot change anything else: no DDL, no other column, no claim, payment, mirror or audit change', async () => {
    const id = scenario.open.amount_mismatch![0];
    const refused = [
      'CREATE TABLE sneaky (id int)',
      `UPDATE recon_findings SET category = 'lost_effect' WHERE id = ${id}`,
      `UPDATE recon_findings SET last_seen_run = 'forged' WHERE id = ${id}`,
      `INSERT INTO recon_findings (category, account, subject, state, first_seen_run, last_seen_run, first_seen_at, last_seen_at)
         VALUES ('lost_effect', 'platform', 'x', 'open', 'r', 'r', now(), now())`,
      'DELETE FROM recon_findings',
      'DELETE FROM recon_repairs',
      `UPDATE payments SET amount = 1`,
      `UPDATE idempotency_keys SET status = 'released'`,
      `UPDATE stripe_charges SET amount = 1`,
      `INSERT INTO recon_refunds (charge_id, account, kept_charge_id, finding_id, amount, currency, idempotency_key, state, run_id, created_at, updated_at)
         VALUES ('a', 'platform', 'b', 1, 1, 'usd', 'k', 'intent', 'r', now(), now())`,
      `UPDATE recon_watermarks SET watermark = now()`,
      `SELECT sweeper_ensure_day_partitions('stripe_charges', current_date, current_date)`,
    ];
    for (const sql of refused) await expect(review.query(sql), sql).rejects.toMatchObject({ code: '42501' });
    // Nor an audit row it inserted: it has no right to, and the table refuses it to everyone anyway.
    await expect(review.query(`UPDATE recon_repairs SET actor = 'mallory'`)).rejects.toMatchObject({ code: '42501' });
  });

  it('approves a plan, with its audit row, but cannot apply one (403, saying how)', async () => {
    const at = new Date(NOW.getTime() - 2 * 3_600_000);
    await seedClaim(db.pool, { tenantId: 'shop', key: 'k-plan', status: 'in_flight', createdAt: at });
    const stripe = [
      charge({ id: 'ch_plan', created: at.getTime() / 1000, tenantId: 'shop', idempotencyKey: 'k-plan' }),
    ];
    const window = { from: new Date(NOW.getTime() - 3 * 3_600_000), to: new Date(NOW.getTime() - 3_600_000) };
    const { body } = await makePlan(
      memorySweepDeps(db.pool, () => stripe, NOW),
      sweepOptions({ mode: 'backfill', accounts: ['platform'], window }),
      { author: 'bob', now: NOW },
    );
    expect(body.steps.map((s) => s.kind)).toEqual(['complete_claim']);
    const alice = new Visitor(app);
    await alice.signIn('alice');
    expect((await alice.get(`/plans/${body.id}`)).statusCode).toBe(200);
    const approved = await alice.submit(`/plans/${body.id}`, `/plans/${body.id}/approve`, {});
    expect(approved.statusCode, approved.body).toBe(303);
    const applied = await alice.submit(`/plans/${body.id}`, `/plans/${body.id}/apply`, {});
    expect(applied.statusCode).toBe(403);
    expect(applied.body).toMatch(/database role may approve plans but not apply them/);
    const events = await db.pool.query(`SELECT action, actor FROM recon_plan_events WHERE plan_id = $1 ORDER BY id`, [
      body.id,
    ]);
    expect(events.rows).toEqual([
      { action: 'planned', actor: 'bob' },
      { action: 'approved', actor: 'alice' },
    ]);
    await expect(review.query(`UPDATE recon_plans SET author = 'alice'`)).rejects.toMatchObject({ code: '42501' });
    await expect(review.query(`UPDATE recon_plan_steps SET state = 'applied'`)).rejects.toMatchObject({
      code: '42501',
    });
  });

  it('has lock, statement and idle-in-transaction limits of its own', async () => {
    expect(await roleSettings(db.pool, 'sweeper_review')).toEqual(
      expect.arrayContaining([
        'lock_timeout=30s',
        'statement_timeout=1min',
        'idle_in_transaction_session_timeout=1min',
      ]),
    );
  });
});
