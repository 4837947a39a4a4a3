import { applyPlan, approvePlan, InvalidPlanError, PlanBrakeError, SelfApprovalError } from '../plans/index.js';
import { RequestProblem, type ReviewRoute, type RouteContext, type RouteResult } from './context.js';
import { planIdParam } from './plans.js';

/**
 * A plan approved or applied from the review page, as `sweeper approve` and `sweeper
 * apply` do it (src/plans/), the viewer the actor of each audit row. `resolver` routes:
 * registerRoutes has checked the viewer, the CSRF token and SWEEPER_UI_RESOLVERS.
 */
async function approve(ctx: RouteContext): Promise<RouteResult> {
  const id = planIdParam(ctx);
  const actor = signedIn(ctx);
  const approval = await approvePlan(ctx.deps.pool, { planId: id, actor, now: ctx.deps.clock() }).catch(refusal);
  ctx.deps.logger.info({ plan: id, actor, outcome: approval.outcome }, 'review page: plan approval');
  return { kind: 'redirect', location: `/plans/${id}?done=approved` };
}

async function apply(ctx: RouteContext): Promise<RouteResult> {
  const id = planIdParam(ctx);
  const actor = signedIn(ctx);
  const { pool, clock, logger } = ctx.deps;
  await applyPlan({ pool, clock, logger, evidence: ctx.deps.evidence ?? null }, { planId: id, actor }).catch(refusal);
  return { kind: 'redirect', location: `/plans/${id}?done=applied` };
}

function signedIn(ctx: RouteContext): string {
  if (!ctx.viewer) throw new RequestProblem(401, 'Nobody is signed in.');
  return ctx.viewer.name;
}

/** The library's refusals as the page's answers; anything else is a failure (500). */
function refusal(error: unknown): never {
  if (error instanceof SelfApprovalError) throw new RequestProblem(403, error.message);
  if (error instanceof InvalidPlanError) throw new RequestProblem(404, error.message);
  if (error instanceof PlanBrakeError) throw new RequestProblem(409, error.message);
  if ((error as { code?: unknown }).code === '42501') {
    throw new RequestProblem(
      403,
      "This page's database role may approve plans but not apply them (it cannot repair): apply with sweeper apply FILE, " +
        'or see docs/plans.md for the role that may.',
    );
  }
  throw error;
}

export const planActionRoutes: ReviewRoute[] = [
  { method: 'POST', path: '/plans/:id/approve', access: 'resolver', handler: approve },
  { method: 'POST', path: '/plans/:id/apply', access: 'resolver', handler: apply },
];
