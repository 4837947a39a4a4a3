import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import {
  applyExitCode,
  applyPlan,
  approvePlan,
  InvalidPlanError,
  makePlan,
  planFileText,
  planOfFile,
  readPlanFile,
  requirePlan,
  SelfApprovalError,
  type PlanBody,
} from '../../src/plans/index.js';
import { planDigest } from '../../src/plans/format.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { sweep } from '../../src/sweep/sweep.js';
import { cloneDatabase, createTestDatabase, type TestDatabase } from '../support/db.js';
import {
  copyOf,
  domainRows,
  memoryApplyDeps,
  PLAN_NOW,
  planOptions,
  repairedFindings,
  seedPlanHistory,
} from '../support/plans.js';
import { memoryEvidence, memorySweepDeps } from '../support/scenario.js';

/**
 * Plan and apply against a real run (docs/plans.md): on two copies of one database (CREATE
 * DATABASE … TEMPLATE), a backfill in one, and in the other the same backfill as a plan,
 * then applied. Row for row the same claims, directory and payment rows; the refund only
 * once a second person approved, and then the same refund.
 */
let source: TestDatabase;
let real: TestDatabase;
let planned: TestDatabase;
let stripe: NormalizedCharge[];

beforeAll(async () => {
  source = await createTestDatabase({ poolSize: 2 });
  await ensureDayPartitions(source.pool, { from: '2026-11-01', to: '2026-11-15' });
  stripe = await seedPlanHistory(source.pool);
  await source.pool.end();
  [real, planned] = [await cloneDatabase(source.name), await cloneDatabase(source.name)];
});
afterAll(async () => {
  await real.drop();
  await planned.drop();
  await source.drop();
});

describe('a plan applied', () => {
  it('yields, row for row, what the real run yields; refunds only once approved', async () => {
    const planStripe = copyOf(stripe);
    const planEvidence = memoryEvidence(() => planStripe);
    const charges = copyOf(stripe);
    const realEvidence = memoryEvidence(() => charges);
    const [realReport] = await sweep(
      memorySweepDeps(real.pool, () => charges, PLAN_NOW, { evidence: realEvidence }),
      planOptions(),
    );
    const { body, reports } = await makePlan(
      memorySweepDeps(planned.pool, () => planStripe, PLAN_NOW, { evidence: planEvidence }),
      planOptions(),
      { author: 'alice', now: PLAN_NOW },
    );
    // The plan run counted what the real run did, and wrote nothing but the plan.
    expect(reports[0]?.repaired).toEqual(realReport?.repaired);
    expect(body.steps.map((s) => [s.category, s.kind])).toEqual([
      ['claim_without_effect', 'complete_claim'],
      ['claim_without_effect', 'complete_claim'],
      ['stale_claim', 'release_claim'],
      ['effect_without_claim', 'recreate_claim'],
      ['orphan_charge', 'recreate_claim'],
      ['status_drift', 'update_effect'],
      ['duplicate_charge', 'refund_duplicates'],
    ]);
    expect(body.steps.find((s) => s.moves_money)?.refunds).toEqual([
      {
        charge_id: 'ch_dup2',
        kept_charge_id: 'ch_dup1',
        amount: 1000,
        currency: 'usd',
        idempotency_key: 'sweeper_refund_v1_ch_dup2',
      },
    ]);

    const first = await applyPlan(memoryApplyDeps(planned.pool, planEvidence), { planId: body.id, actor: 'bob' });
    expect(first.applied.map((s) => s.step)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(first.pending.map((s) => [s.step, s.reason])).toEqual([
      [7, expect.stringMatching(/awaits approval by someone other than alice/)],
    ]);
    expect(applyExitCode(first)).toBe(3);
    const realRows = await domainRows(real.pool);
    const afterFirst = await domainRows(planned.pool);
    expect(afterFirst.claims).toEqual(realRows.claims);
    expect(afterFirst.directory).toEqual(realRows.directory);
    expect(afterFirst.payments).toEqual(realRows.payments);
    expect(afterFirst.refunds).toEqual([]);
    expect(planEvidence.refunds).toEqual([]);

    await expect(approvePlan(planned.pool, { planId: body.id, actor: 'Alice', now: PLAN_NOW })).rejects.toThrow(
      SelfApprovalError,
    );
    await approvePlan(planned.pool, { planId: body.id, actor: 'carol', now: PLAN_NOW });
    const second = await applyPlan(memoryApplyDeps(planned.pool, planEvidence), { planId: body.id, actor: 'bob' });
    expect(second.applied.map((s) => s.step)).toEqual([7]);
    expect(second.refunds).toEqual({ made: 1, cancelled: 0, left: 0 });
    expect(await domainRows(planned.pool)).toEqual(await domainRows(real.pool));
    expect(planEvidence.refunds.map((r) => [r.chargeId, r.amount, r.metadata.sweeper_refund_key])).toEqual(
      realEvidence.refunds.map((r) => [r.chargeId, r.amount, r.metadata.sweeper_refund_key]),
    );
    expect(await repairedFindings(planned.pool)).toEqual(await repairedFindings(real.pool));

    // Idempotent: a third apply applies nothing, and POSTs nothing.
    const third = await applyPlan(memoryApplyDeps(planned.pool, planEvidence), { planId: body.id, actor: 'bob' });
    expect([third.applied, third.refused, third.pending]).toEqual([[], [], []]);
    expect(third.earlier.applied).toBe(7);
    expect(planEvidence.calls.refundPosts).toBe(1);
    const stored = await requirePlan(planned.pool, body.id);
    expect([...stored.steps.values()].map((s) => s.state)).toEqual(Array(7).fill('applied'));
  });
});

describe('evidence that moved between plan and apply', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await cloneDatabase(source.name);
  });
  afterAll(async () => {
    await db.drop();
  });

  it('refuses and names each moved step, applies the others, and never applies a refused step later', async () => {
    const charges = copyOf(stripe);
    const evidence = memoryEvidence(() => charges);
    const deps = memorySweepDeps(db.pool, () => charges, PLAN_NOW, { evidence });
    const { body } = await makePlan(deps, planOptions(), { author: 'alice', now: PLAN_NOW });
    // Between plan and apply: the caller retried k-stale (a writer moved the claim), and
    // Stripe refunded more of ch_drift than the plan read.
    await db.pool.query(
      `UPDATE idempotency_keys SET attempt = 2, locked_until = $1 WHERE tenant_id = 'acme' AND key = 'k-stale'`,
      [new Date(PLAN_NOW.getTime() + 60_000)],
    );
    const drift = charges.find((c) => c.id === 'ch_drift')!;
    drift.amountRefunded = 600;
    await approvePlan(db.pool, { planId: body.id, actor: 'carol', now: PLAN_NOW });

    const first = await applyPlan(memoryApplyDeps(db.pool, evidence), { planId: body.id, actor: 'bob' });
    expect(first.refused.map((s) => [s.step, s.subject, s.reason])).toEqual([
      [3, expect.stringContaining('k-stale'), expect.stringMatching(/claim acme\/k-stale changed/)],
      [6, 'ch_drift', expect.stringMatching(/charge ch_drift changed at Stripe/)],
    ]);
    expect(first.applied.map((s) => s.step)).toEqual([1, 2, 4, 5, 7]);
    expect(applyExitCode(first)).toBe(3);
    // The moved rows are as the writer left them: nothing of the plan landed on them.
    const stale = await db.pool.query(`SELECT status, attempt FROM idempotency_keys WHERE key = 'k-stale'`);
    expect(stale.rows).toEqual([{ status: 'in_flight', attempt: 2 }]);
    const payment = await db.pool.query(`SELECT amount_refunded FROM payments WHERE charge_id = 'ch_drift'`);
    expect(payment.rows).toEqual([{ amount_refunded: 0 }]);

    // A second apply applies nothing, and names the refused steps again.
    const second = await applyPlan(memoryApplyDeps(db.pool, evidence), { planId: body.id, actor: 'bob' });
    expect([second.applied, second.refused, second.pending]).toEqual([[], [], []]);
    expect(second.earlier.refused.map((s) => s.step)).toEqual([3, 6]);
    expect(applyExitCode(second)).toBe(3);
    expect(evidence.calls.refundPosts).toBe(1);
    const events = await db.pool.query(`SELECT action, actor FROM recon_plan_events WHERE plan_id = $1 ORDER BY id`, [
      body.id,
    ]);
    expect(events.rows).toEqual([
      { action: 'planned', actor: 'alice' },
      { action: 'approved', actor: 'carol' },
      { action: 'applied', actor: 'bob' },
      { action: 'applied', actor: 'bob' },
    ]);
  });

  it('refuses a refund whose charge Stripe refunded since the plan: nothing is POSTed', async () => {
    const fresh = await cloneDatabase(source.name);
    try {
      const charges = copyOf(stripe);
      const evidence = memoryEvidence(() => charges);
      const deps = memorySweepDeps(fresh.pool, () => charges, PLAN_NOW, { evidence });
      const { body } = await makePlan(deps, planOptions(), { author: 'alice', now: PLAN_NOW });
      charges.find((c) => c.id === 'ch_dup2')!.amountRefunded = 1000;
      await approvePlan(fresh.pool, { planId: body.id, actor: 'carol', now: PLAN_NOW });
      const report = await applyPlan(memoryApplyDeps(fresh.pool, evidence), { planId: body.id, actor: 'bob' });
      expect(report.refused.map((s) => [s.step, s.reason])).toEqual([
        [7, expect.stringMatching(/charge ch_dup2 changed at Stripe/)],
      ]);
      expect(evidence.calls.refundPosts).toBe(0);
      expect((await fresh.pool.query(`SELECT count(*)::int AS n FROM recon_refunds`)).rows).toEqual([{ n: 0 }]);
    } finally {
      await fresh.drop();
    }
  });
});

describe('plan files that are not this database’s plan', () => {
  it('refuses an altered file, a re-digested forgery and another database’s plan as a whole (65)', async () => {
    const a = await cloneDatabase(source.name);
    const b = await cloneDatabase(source.name);
    try {
      const charges = copyOf(stripe);
      const deps = (db: TestDatabase) =>
        memorySweepDeps(db.pool, () => charges, PLAN_NOW, { evidence: memoryEvidence(() => charges) });
      const { body } = await makePlan(deps(a), planOptions(), { author: 'alice', now: PLAN_NOW });
      const text = planFileText(body);
      expect((await planOfFile(a.pool, readPlanFile(text, 'plan.json'), 'plan.json')).id).toBe(body.id);

      // Altered: a refund's amount raised in the file.
      const altered = text.replace('"amount": 1000', '"amount": 100000');
      expect(altered).not.toBe(text);
      expect(() => readPlanFile(altered, 'plan.json')).toThrow(/altered after sweeper wrote it/);
      expect(() => readPlanFile(altered, 'plan.json')).toThrow(expect.objectContaining({ exitCode: 65 }));
      // Altered and its digest recomputed: the file agrees with itself, not with the database.
      const forged = JSON.parse(altered) as { plan: PlanBody };
      const reDigested = JSON.stringify({ digest: planDigest(forged.plan), plan: forged.plan });
      const file = readPlanFile(reDigested, 'plan.json');
      await expect(planOfFile(a.pool, file, 'plan.json')).rejects.toThrow(InvalidPlanError);
      await expect(planOfFile(a.pool, file, 'plan.json')).rejects.toThrow(/the digests differ/);
      // Another database's plan (b is a copy of the same history, but never made it).
      await expect(planOfFile(b.pool, readPlanFile(text, 'plan.json'), 'plan.json')).rejects.toThrow(
        /which this database did not make/,
      );
      expect(() => readPlanFile('{"not":"a plan"}', 'x.json')).toThrow(InvalidPlanError);
      expect(() => readPlanFile('not json', 'x.json')).toThrow(InvalidPlanError);
      await expect(approvePlan(b.pool, { planId: body.id, actor: 'carol', now: PLAN_NOW })).rejects.toThrow(
        InvalidPlanError,
      );
      // Nothing of the plan reached b.
      expect((await b.pool.query(`SELECT count(*)::int AS n FROM recon_plan_events`)).rows).toEqual([{ n: 0 }]);
    } finally {
      await a.drop();
      await b.drop();
    }
  });
});
