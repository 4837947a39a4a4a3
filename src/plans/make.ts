import { sweep, type SweepDeps, type SweepOptions, type SweepReport } from '../sweep/sweep.js';
import { PLAN_FORMAT, type PlanBody } from './format.js';
import { PlanRecorder } from './recorder.js';
import { newPlanId, savePlan } from './store.js';

/**
 * `sweeper run|backfill --plan`: the sweep as a dry run (it writes nothing of its own),
 * keeping every step it would take with what each step read, then the plan saved in the
 * database. A sweep that fails for an account throws (SweepFailedError, with every
 * account's report) and saves no plan: a plan is all of what a run would do, or nothing.
 */
export async function makePlan(
  deps: SweepDeps,
  options: SweepOptions,
  args: { author: string; now: Date },
): Promise<{ body: PlanBody; digest: string; reports: SweepReport[] }> {
  const recorder = new PlanRecorder({ idempotencyWindowMs: deps.idempotencyWindowMs });
  const reports = await sweep({ ...deps, planner: recorder }, { ...options, dryRun: true });
  const body: PlanBody = {
    format: PLAN_FORMAT,
    id: newPlanId(args.now),
    created_at: args.now.toISOString(),
    author: args.author,
    mode: options.mode,
    accounts: [...options.accounts],
    options: { refund_duplicates: options.refundDuplicates, allow_mass_repair: options.allowMassRepair },
    reports,
    steps: recorder.steps,
  };
  const digest = await savePlan(deps.pool, body);
  return { body, digest, reports };
}
