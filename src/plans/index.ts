/**
 * Saved plans (docs/plans.md, DESIGN.md §10): `sweeper run|backfill --plan FILE` writes
 * every step a run would take with the evidence each step read; `sweeper apply FILE`
 * applies the steps whose evidence is unchanged; `sweeper approve PLAN_ID` is the second
 * person a refund needs. A library: the CLI and the review page pass the pool, the clock,
 * the logger and (when they have one) Stripe's own word.
 */
export {
  applyExitCode,
  applyPlan,
  PlanBrakeError,
  type ApplyDeps,
  type ApplyReport,
  type StepReport,
} from './apply.js';
export { approvalProblem, approvePlan, SelfApprovalError, type Approval } from './approve.js';
export {
  InvalidPlanError,
  PLAN_FORMAT,
  planFileText,
  readPlanFile,
  type EvidenceEntry,
  type PlanBody,
  type PlanFile,
  type PlanStep,
} from './format.js';
export { makePlan } from './make.js';
export {
  listPlans,
  loadPlan,
  planEvents,
  planOfFile,
  PLAN_ID_PATTERN,
  requirePlan,
  type PlanEvent,
  type PlanSummary,
  type StoredPlan,
  type StoredStep,
} from './store.js';
