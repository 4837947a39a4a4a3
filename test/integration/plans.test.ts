import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import {
  applyExitCode,
  applyPlan,
  approvePlan,
  makePlan,
  requirePlan,
  SelfApprovalError,
} from '../../src/plans/index.js';
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
