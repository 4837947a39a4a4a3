import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import type { Queryable } from '../../src/db/pool.js';
import { applyPlan, approvePlan, makePlan, requirePlan } from '../../src/plans/index.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { cloneDatabase, createTestDatabase, type TestDatabase } from '../support/db.js';
import { copyOf, memoryApplyDeps, PLAN_NOW, planOptions, seedPlanHistory } from '../support/plans.js';
import { checkProperty } from '../support/properties.js';
import { memoryEvidence, memorySweepDeps } from '../support/scenario.js';

/**
 * Evidence that moves between plan and apply (docs/plans.md "When a step is applied"): for
 * any set of moves, each touching what one step read (its claim, a payment row, a charge at
 * Stripe), the apply refuses exactly the moved steps, naming each, and applies every other
 * one; a moved claim is left as the writer left it; the refund is POSTed only when its
 * charge did not move. Each case runs on its own copy of a database holding the plan
 * (seedPlanHistory's seven steps), approved by a second person.
 */
/** A move, and the step that read what it moves (`subject`: the key of that step's claim). */
type Move = { subject: string; db?: string; stripe?: (c: NormalizedCharge[]) => void; names: RegExp };
const set = (id: string, change: Partial<NormalizedCharge>) => (charges: NormalizedCharge[]) => {
  Object.assign(
    charges.find((c) => c.id === id)!,
    change,
  );
};
const MOVES: readonly Move[] = [
  {
    subject: 'k-cwe',
    db: `UPDATE idempotency_keys SET attempt = attempt + 1 WHERE key = 'k-cwe'`,
    names: /claim acme\/k-cwe changed/,
  },
  { subject: 'k-cwf', stripe: set('ch_cwf', { amount: 1001 }), names: /charge ch_cwf changed at Stripe/ },
  {
    subject: 'k-stale',
    db: `UPDATE idempotency_keys SET attempt = attempt + 1 WHERE key = 'k-stale'`,
    names: /claim acme\/k-stale/,
  },
  { subject: 'k-ewc', stripe: set('ch_ewc', { amountRefunded: 100 }), names: /charge ch_ewc changed at Stripe/ },
  { subject: 'k-orphan', stripe: set('ch_orphan', { disputed: true }), names: /charge ch_orphan changed at Stripe/ },
  {
    subject: 'k-drift',
    db: `UPDATE payments SET disputed = true WHERE charge_id = 'ch_drift'`,
    names: /payment row of ch_drift/,
  },
  { subject: 'k-dup', stripe: set('ch_dup2', { amountRefunded: 1000 }), names: /charge ch_dup2 changed at Stripe/ },
];

let template: TestDatabase;
let stripe: NormalizedCharge[];
let planId: string;
/** The step of each subject. */
const stepOf = new Map<string, number>();

beforeAll(async () => {
  template = await createTestDatabase({ poolSize: 2 });
  await ensureDayPartitions(template.pool, { from: '2026-11-01', to: '2026-11-15' });
  stripe = await seedPlanHistory(template.pool);
  const charges = copyOf(stripe);
  const deps = memorySweepDeps(template.pool, () => charges, PLAN_NOW, { evidence: memoryEvidence(() => charges) });
  const { body } = await makePlan(deps, planOptions(), { author: 'alice', now: PLAN_NOW });
  planId = body.id;
  for (const move of MOVES)
    stepOf.set(
      move.subject,
      body.steps.find((s) => s.evidence.some((e) => e.object === 'claim' && e.key === move.subject))!.step,
    );
  expect(new Set(stepOf.values()).size).toBe(MOVES.length);
  await approvePlan(template.pool, { planId, actor: 'carol', now: PLAN_NOW });
  await template.pool.end(); // a template must have no connections
});
afterAll(async () => {
  await template.drop();
});

const claimStatus = async (db: Queryable, key: string) =>
  (await db.query<{ status: string }>(`SELECT status FROM idempotency_keys WHERE key = $1`, [key])).rows[0]?.status;

describe('a plan whose evidence moved', () => {
  it('never applies a moved step, and applies every other', async () => {
    await checkProperty('plans: moved evidence', { normal: 4, deep: 60 }, [fc.subarray([...MOVES])], async (moves) => {
      const db = await cloneDatabase(template.name, { poolSize: 2 });
      try {
        const charges = copyOf(stripe);
        for (const move of moves) {
          if (move.db) await db.pool.query(move.db);
          move.stripe?.(charges);
        }
        const evidence = memoryEvidence(() => charges);
        const report = await applyPlan(memoryApplyDeps(db.pool, evidence), { planId, actor: 'bob' });
        const moved = moves.map((m) => stepOf.get(m.subject)!).sort((a, b) => a - b);
        expect(report.refused.map((s) => s.step)).toEqual(moved);
        for (const move of moves)
          expect(report.refused.find((s) => s.step === stepOf.get(move.subject))?.reason).toMatch(move.names);
        expect(report.applied.map((s) => s.step)).toEqual([1, 2, 3, 4, 5, 6, 7].filter((n) => !moved.includes(n)));
        expect(report.pending).toEqual([]);
        const has = (subject: string) => moves.some((m) => m.subject === subject);
        expect(evidence.calls.refundPosts).toBe(has('k-dup') ? 0 : 1);
        expect(await claimStatus(db.pool, 'k-cwe')).toBe(has('k-cwe') ? 'in_flight' : 'completed');
        expect(await claimStatus(db.pool, 'k-stale')).toBe(has('k-stale') ? 'in_flight' : 'released');
        const states = [...(await requirePlan(db.pool, planId)).steps.values()].map((s) => s.state);
        expect(states).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => (moved.includes(n) ? 'refused' : 'applied')));
      } finally {
        await db.drop();
      }
    });
  });
});
