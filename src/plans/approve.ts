import { inTransaction, type Pool } from '../db/pool.js';
import { ExitCode } from '../exit-codes.js';
import { sameName } from '../serve/names.js';
import { loadPlan, recordPlanEvent } from './store.js';
import { InvalidPlanError } from './format.js';

/**
 * Four eyes on money (docs/plans.md "Approval"): a plan's refunds are applied only once
 * someone other than its author approved it. Names compare as the review page compares
 * them (without regard to case): "Alice" cannot approve alice's plan.
 */
export class SelfApprovalError extends Error {
  override readonly name = 'SelfApprovalError';
  readonly exitCode = ExitCode.notAllowed;
}

export interface Approval {
  planId: string;
  /** `approved` now, or `already` by someone before (the first approval stands). */
  outcome: 'approved' | 'already';
  approvedBy: string;
  approvedAt: Date;
  moneySteps: number;
}

/** Who may approve a plan: anyone but its author. The message when they may not; null when they may. */
export function approvalProblem(planId: string, author: string, approver: string): string | null {
  if (!sameName(author, approver)) return null;
  return (
    `${approver} made plan ${planId} and cannot approve it: four eyes on money need a second person ` +
    `(someone else runs sweeper approve ${planId} --by THEIR_NAME)`
  );
}

export async function approvePlan(pool: Pool, args: { planId: string; actor: string; now: Date }): Promise<Approval> {
  return inTransaction(pool, async (tx) => {
    const plan = await loadPlan(tx, args.planId, { lock: true });
    if (!plan) throw new InvalidPlanError(`there is no plan ${args.planId} in this database: nothing was approved`);
    const problem = approvalProblem(plan.id, plan.author, args.actor);
    if (problem) throw new SelfApprovalError(problem);
    const moneySteps = plan.body.steps.filter((s) => s.moves_money).length;
    if (plan.approvedBy !== null && plan.approvedAt !== null) {
      return {
        planId: plan.id,
        outcome: 'already',
        approvedBy: plan.approvedBy,
        approvedAt: plan.approvedAt,
        moneySteps,
      };
    }
    await tx.query(`UPDATE recon_plans SET approved_by = $2, approved_at = $3 WHERE id = $1`, [
      plan.id,
      args.actor,
      args.now,
    ]);
    await recordPlanEvent(tx, {
      planId: plan.id,
      action: 'approved',
      actor: args.actor,
      at: args.now,
      details: { author: plan.author, money_steps: moneySteps, digest: plan.digest },
    });
    return { planId: plan.id, outcome: 'approved', approvedBy: args.actor, approvedAt: args.now, moneySteps };
  });
}
