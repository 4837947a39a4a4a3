import { inTransaction, type Pool, type PoolClient, type Queryable } from '../db/pool.js';
import { ExitCode } from '../exit-codes.js';
import type { Logger } from '../log.js';
import { recordFindings } from '../sweep/findings-store.js';
import type { Finding } from '../sweep/judge/index.js';
import type { ProviderEvidence } from '../sweep/provider.js';
import { recordRefundIntents, settleRefundIntents, type RefundFinding } from '../sweep/refunds.js';
import { refundFact } from '../sweep/refund-facts.js';
import { executeRefundRepairs } from '../sweep/refund-repairs.js';
import { executeRepairs } from '../sweep/repairs.js';
import { countOpenFindings } from '../sweep/runs-store.js';
import { entryKey, stepVerdict, UNREADABLE, type StepView, type Verdict } from './decide.js';
import { chargeVersion, objectKey, refundVersion } from './evidence.js';
import { findingFromJson, type EvidenceEntry, type PlanStep } from './format.js';
import {
  decideSteps,
  loadPlan,
  recordPlanEvent,
  requirePlan,
  type StepDecision,
  type StepState,
  type StoredPlan,
} from './store.js';
import { claimVersions, intentVersions, mirroredCharges, paymentVersions, refundRowVersions } from './versions.js';

/**
 * `sweeper apply` and the review page's Apply (docs/plans.md): each step still planned
 * whose evidence is unchanged is applied with the same compare-and-swap guards as a real
 * run (executeRepairs, the refund outbox); each step whose evidence moved is refused and
 * named; refunds wait for a second person's approval. One transaction for the repairs,
 * holding the plan's row (one apply of a plan at a time); the refunds are then made
 * through the outbox, as a run makes them, each re-read from Stripe before its POST.
 */

export interface ApplyDeps {
  pool: Pool;
  clock: () => Date;
  logger: Logger;
  /**
   * Stripe's own word: the plan's charges re-read by id, a release's key searched, the
   * refunds made. Null (the review page without STRIPE_API_KEY): the database's word only
   * (the mirror for charges), and releases and refunds wait for an apply with Stripe's word.
   */
  evidence: ProviderEvidence | null;
  signal?: AbortSignal;
}

export interface StepReport {
  step: number;
  account: string;
  category: string;
  subject: string;
  action: string;
  moves_money: boolean;
  reason?: string;
}

export interface ApplyReport {
  plan_id: string;
  actor: string;
  /** Whether charges were checked against Stripe itself (else against the mirror). */
  stripes_word: boolean;
  applied: StepReport[];
  refused: StepReport[];
  /** Left planned: awaiting approval, or a step they follow. */
  pending: StepReport[];
  /** Decided by an earlier apply: how many were applied, and those refused. */
  earlier: { applied: number; refused: StepReport[] };
  /** Refunds made now, cancelled by Stripe's word before the POST, left in the outbox for the next run. */
  refunds: { made: number; cancelled: number; left: number };
  /** Open findings of the plan's accounts after the apply (those the plan repairs no longer among them). */
  open_findings: number;
}

/** The repair brake held the plan's run: a plan made without --allow-mass-repair is not applied past it. */
export class PlanBrakeError extends Error {
  override readonly name = 'PlanBrakeError';
  readonly exitCode = ExitCode.failed;
}

/** 0: every step of the plan applied and no finding open; 3: a step refused or waiting, or findings open. */
export function applyExitCode(report: ApplyReport): number {
  const clean =
    report.refused.length === 0 &&
    report.pending.length === 0 &&
    report.earlier.refused.length === 0 &&
    report.open_findings === 0;
  return clean ? ExitCode.reconciled : ExitCode.unreconciled;
}

export async function applyPlan(deps: ApplyDeps, args: { planId: string; actor: string }): Promise<ApplyReport> {
  const plan = await requirePlan(deps.pool, args.planId);
  assertNoBrake(plan);
  // Stripe's word first, outside the transaction: no row is held while Stripe answers.
  const open = plan.body.steps.filter((s) => plan.steps.get(s.step)?.state === 'planned');
  const word = deps.evidence ? await readStripesWord(deps.evidence, open, deps.signal) : null;
  const run = await inTransaction(deps.pool, (tx) => applyInTransaction(tx, deps, args, word));
  const refunds = await settle(deps, run, args.actor);
  const report: ApplyReport = {
    plan_id: plan.id,
    actor: args.actor,
    stripes_word: word !== null,
    ...run.report,
    refunds,
    open_findings: 0,
  };
  for (const account of plan.body.accounts) report.open_findings += await countOpenFindings(deps.pool, account);
  deps.logger.info(
    {
      plan: plan.id,
      actor: args.actor,
      applied: report.applied.length,
      refused: report.refused.length,
      pending: report.pending.length,
    },
    'plan applied',
  );
  return report;
}

function assertNoBrake(plan: StoredPlan): void {
  if (plan.body.options.allow_mass_repair) return;
  const trip = plan.body.reports.find((r) => r.mass_repair && !r.mass_repair.allowed);
  if (!trip?.mass_repair) return;
  const { category, repairs, judged } = trip.mass_repair;
  throw new PlanBrakeError(
    `plan ${plan.id} would pass the repair brake for ${trip.account} (${repairs} ${category} repairs of ${judged} judged, ` +
      'more than SWEEPER_MAX_REPAIR_SHARE): nothing was applied; if these repairs are right, make the plan again with --allow-mass-repair',
  );
}

/** What Stripe says now: each open step's charges by id, and each release's key searched. */
interface StripesWord {
  charges: Map<string, string>;
  /** Refunds re-read by id (absent: Stripe has none); null when the provider cannot read refunds by id. */
  refunds: Map<string, string> | null;
  naming: Map<number, string[]>;
}

async function readStripesWord(
  evidence: ProviderEvidence,
  steps: readonly PlanStep[],
  signal: AbortSignal | undefined,
): Promise<StripesWord> {
  const byAccount = new Map<string, Set<string>>();
  for (const step of steps) {
    for (const e of step.evidence) {
      if (e.object !== 'charge' || e.after_step !== undefined) continue;
      const account = e.account ?? step.account;
      byAccount.set(account, (byAccount.get(account) ?? new Set()).add(e.id));
    }
  }
  const charges = new Map<string, string>();
  for (const [account, ids] of byAccount) {
    const found = await evidence.chargesById(account, [...ids], signal, (bad) => {
      if (bad.id !== null) charges.set(bad.id, UNREADABLE);
    });
    for (const c of found) charges.set(c.id, chargeVersion(c));
  }
  return {
    charges,
    refunds: await readRefunds(evidence, steps, signal),
    naming: await searchReleases(evidence, steps, signal),
  };
}

/** The refunds the open steps read, re-read by id from Stripe (GET /v1/refunds/:id). */
async function readRefunds(
  evidence: ProviderEvidence,
  steps: readonly PlanStep[],
  signal: AbortSignal | undefined,
): Promise<Map<string, string> | null> {
  if (!evidence.refundsById) return null;
  const byAccount = new Map<string, Set<string>>();
  for (const step of steps)
    for (const e of step.evidence)
      if (e.object === 'refund' && e.after_step === undefined)
        byAccount.set(step.account, (byAccount.get(step.account) ?? new Set()).add(e.id));
  const refunds = new Map<string, string>();
  for (const [account, ids] of byAccount) {
    const found = await evidence.refundsById(account, [...ids], signal, (bad) => {
      if (bad.id !== null) refunds.set(bad.id, UNREADABLE);
    });
    for (const r of found) refunds.set(r.id, refundVersion(refundFact(r)));
  }
  return refunds;
}

/** Each release's key searched at Stripe: a charge naming it now (or one Stripe returns unreadable) stops the release. */
async function searchReleases(
  evidence: ProviderEvidence,
  steps: readonly PlanStep[],
  signal: AbortSignal | undefined,
): Promise<Map<number, string[]>> {
  const naming = new Map<number, string[]>();
  for (const step of steps) {
    const claim = step.evidence.find((e) => e.object === 'claim');
    if (step.kind !== 'release_claim' || claim?.tenant_id === undefined || claim.key === undefined) continue;
    const unreadable: string[] = [];
    const found = await evidence.chargesNaming(step.account, claim.tenant_id, claim.key, signal, (bad) =>
      unreadable.push(bad.id ?? 'a charge Stripe returned unreadable'),
    );
    naming.set(step.step, [...found.map((c) => c.id), ...unreadable]);
  }
  return naming;
}

interface TransactionResult {
  report: Pick<ApplyReport, 'applied' | 'refused' | 'pending' | 'earlier'>;
  /** The refunds of the plan's applied steps, per account (charge ids): those still intents are made after the commit. */
  intents: Map<string, string[]>;
  planId: string;
}

async function applyInTransaction(
  tx: PoolClient,
  deps: ApplyDeps,
  args: { planId: string; actor: string },
  word: StripesWord | null,
): Promise<TransactionResult> {
  const plan = await loadPlan(tx, args.planId, { lock: true });
  if (!plan) throw new Error(`plan ${args.planId} disappeared while it was applied`);
  const now = deps.clock();
  const states = new Map([...plan.steps].map(([n, s]) => [n, s.state]));
  const open = plan.body.steps.filter((s) => states.get(s.step) === 'planned');
  const view = await currentView(tx, plan, open, word, now, states);
  const result: TransactionResult = {
    report: { applied: [], refused: [], pending: [], earlier: earlierOf(plan) },
    intents: new Map(),
    planId: plan.id,
  };
  const decisions: StepDecision[] = [];
  for (const group of batchesOf(open)) {
    const verdicts = group.map((step) => ({ step, verdict: stepVerdict(step, view) }));
    const outcome = await applyGroup(tx, plan.id, args.actor, now, verdicts);
    for (const d of outcome) states.set(d.step, d.state);
    decisions.push(...outcome);
    for (const { step, verdict } of verdicts) {
      const decided = outcome.find((d) => d.step === step.step);
      const line = stepReport(step, decided?.reason ?? (verdict.kind === 'pending' ? verdict.reason : undefined));
      if (!decided) result.report.pending.push(line);
      else if (decided.state === 'applied') result.report.applied.push(line);
      else result.report.refused.push(line);
    }
  }
  // Every refund of an applied step, this apply's or an earlier one's still in the outbox, is made next.
  for (const step of plan.body.steps) {
    if (!step.moves_money || states.get(step.step) !== 'applied') continue;
    const ids = (step.refunds ?? []).map((r) => r.charge_id);
    result.intents.set(step.account, [...(result.intents.get(step.account) ?? []), ...ids]);
  }
  await decideSteps(tx, plan.id, decisions, args.actor, now);
  await recordPlanEvent(tx, {
    planId: plan.id,
    action: 'applied',
    actor: args.actor,
    at: now,
    details: {
      stripes_word: word !== null,
      applied: result.report.applied.map((s) => s.step),
      refused: result.report.refused.map((s) => ({ step: s.step, reason: s.reason })),
      pending: result.report.pending.map((s) => ({ step: s.step, reason: s.reason })),
    },
  });
  return result;
}

function stepReport(step: PlanStep, reason?: string): StepReport {
  return {
    step: step.step,
    account: step.account,
    category: step.category,
    subject: step.subject,
    action: step.action,
    moves_money: step.moves_money,
    ...(reason ? { reason } : {}),
  };
}

function earlierOf(plan: StoredPlan): ApplyReport['earlier'] {
  const refused = plan.body.steps.flatMap((s) => {
    const stored = plan.steps.get(s.step);
    return stored?.state === 'refused' ? [stepReport(s, stored.reason ?? undefined)] : [];
  });
  return { applied: [...plan.steps.values()].filter((s) => s.state === 'applied').length, refused };
}

/** The open steps in order, one list per batch of the run that planned them: applied together, as that batch would have. */
function batchesOf(steps: readonly PlanStep[]): PlanStep[][] {
  const groups: PlanStep[][] = [];
  for (const step of [...steps].sort((a, b) => a.step - b.step)) {
    const last = groups[groups.length - 1];
    if (last && last[0]?.batch === step.batch) last.push(step);
    else groups.push([step]);
  }
  return groups;
}

/**
 * One batch's steps: the repairs with a verdict to apply, under their compare-and-swap
 * guards (a step whose row a writer moved since the evidence was read is refused), their
 * findings recorded as repaired by the person applying, the refunds as outbox intents.
 */
async function applyGroup(
  tx: Queryable,
  planId: string,
  actor: string,
  now: Date,
  verdicts: ReadonlyArray<{ step: PlanStep; verdict: Verdict }>,
): Promise<StepDecision[]> {
  const decisions: StepDecision[] = verdicts.flatMap(({ step, verdict }) =>
    verdict.kind === 'refuse'
      ? [{ step: step.step, state: 'refused' as const, reason: verdict.reason, findingId: null }]
      : [],
  );
  const chosen = verdicts.filter((v) => v.verdict.kind === 'apply').map((v) => v.step);
  if (chosen.length === 0) return decisions;
  const account = chosen[0]?.account ?? '';
  const findings = new Map(chosen.map((s) => [s.step, findingFromJson<Finding>(s.finding)]));
  const repairs = chosen.filter((s) => !s.moves_money).map((s) => findings.get(s.step) as Finding);
  const done = new Map([
    ...(await executeRefundRepairs(tx, account, repairs, now)),
    ...(await executeRepairs(tx, repairs, { now })),
  ]);
  const kept = chosen.filter((s) => s.moves_money || done.has(findings.get(s.step) as Finding));
  const recorded = await recordFindings(tx, {
    account,
    runId: planId,
    now,
    findings: kept.map((s) => findings.get(s.step) as Finding),
    repairs: done,
    actor,
  });
  const money = kept.filter((s) => s.moves_money).map((s) => findings.get(s.step) as RefundFinding);
  if (money.length > 0) await recordRefundIntents(tx, { account, runId: planId, now, findings: money, recorded });
  const ids = new Map(recorded.map((r) => [`${r.category}\u001f${r.subject}`, r.id]));
  for (const step of chosen) {
    const applied = kept.includes(step);
    decisions.push({
      step: step.step,
      state: applied ? 'applied' : 'refused',
      reason: applied ? null : 'a writer moved its row as it was applied (its compare-and-swap found another version)',
      findingId: applied ? (ids.get(`${step.category}\u001f${step.subject}`) ?? null) : null,
    });
  }
  return decisions;
}

/** What the steps are judged against now: the rows in this transaction, and Stripe's word (or the mirror's). */
async function currentView(
  tx: Queryable,
  plan: StoredPlan,
  open: readonly PlanStep[],
  word: StripesWord | null,
  now: Date,
  states: Map<number, StepState>,
): Promise<StepView> {
  const entries = open.flatMap((s) => s.evidence.filter((e) => e.after_step === undefined));
  const ids = (object: EvidenceEntry['object']) => entries.filter((e) => e.object === object);
  const current = new Map<string, string | null>();
  const claims = ids('claim').map((e) => ({ tenantId: e.tenant_id ?? '', key: e.key ?? '' }));
  for (const [k, v] of await claimVersions(tx, claims)) current.set(objectKey('claim', k), v);
  for (const [k, v] of await paymentVersions(
    tx,
    ids('payment').map((e) => e.id),
  ))
    current.set(objectKey('payment', k), v);
  for (const [k, v] of await intentVersions(
    tx,
    ids('refund_intent').map((e) => e.id),
  ))
    current.set(objectKey('refund_intent', k), v);
  for (const [k, v] of await refundRowVersions(
    tx,
    ids('payment_refund').map((e) => e.id),
  ))
    current.set(objectKey('payment_refund', k), v);
  const charges = word ? stripeCharges(word, ids('charge')) : await mirrorCharges(tx, plan, ids('charge'));
  for (const [k, v] of charges) current.set(objectKey('charge', k), v);
  // A refund at Stripe: as Stripe says now; without its word, nothing newer than the plan's read is known.
  if (word?.refunds)
    for (const e of ids('refund')) current.set(objectKey('refund', e.id), word.refunds.get(e.id) ?? null);
  const naming = word?.naming ?? new Map<number, string[]>();
  return {
    now,
    planId: plan.id,
    author: plan.author,
    approved: plan.approvedBy !== null,
    stripesWord: word !== null,
    stateOf: (n) => states.get(n) ?? 'planned',
    current: (e) => current.get(entryKey(e)),
    namingNow: (step) => naming.get(step.step) ?? [],
  };
}

/** Stripe's word: a charge it did not return is gone (null). */
function stripeCharges(word: StripesWord, entries: readonly EvidenceEntry[]): Map<string, string | null> {
  return new Map(entries.map((e) => [e.id, word.charges.get(e.id) ?? null]));
}

/**
 * Without Stripe's word, a charge is as the mirror holds it when a sweep read it after the
 * plan was made; otherwise the plan's own read is the newest there is (left out: unchanged).
 */
async function mirrorCharges(
  db: Queryable,
  plan: StoredPlan,
  entries: readonly EvidenceEntry[],
): Promise<Map<string, string | null>> {
  const mirrored = await mirroredCharges(
    db,
    entries.map((e) => ({ account: e.account ?? 'platform', id: e.id })),
  );
  const out = new Map<string, string | null>();
  for (const [id, m] of mirrored) if (m.fetchedAt > plan.createdAt) out.set(id, chargeVersion(m.charge));
  return out;
}

/**
 * The refunds of the plan's applied steps still in the outbox (this apply's, or an earlier
 * one's that stopped before making them), made through the outbox with Stripe's own word
 * first; a refund that word cancels turns its step to refused. Without a provider they
 * stay in the outbox: the next run of the account makes them.
 */
async function settle(deps: ApplyDeps, run: TransactionResult, actor: string): Promise<ApplyReport['refunds']> {
  const totals = { made: 0, cancelled: 0, left: 0 };
  const charges = [...run.intents.values()].flat();
  if (charges.length === 0) return totals;
  if (deps.evidence) {
    for (const [account, ids] of run.intents) {
      const settled = await settleRefundIntents({
        pool: deps.pool,
        evidence: deps.evidence,
        account,
        runId: run.planId,
        clock: deps.clock,
        log: deps.logger,
        signal: deps.signal,
        chargeIds: ids,
        actor,
      });
      totals.made += settled.refunded;
      totals.cancelled += settled.cancelled;
    }
  }
  const { rows } = await deps.pool.query<{ charge_id: string; state: string; reason: string | null }>(
    `SELECT charge_id, state, reason FROM recon_refunds WHERE charge_id = ANY($1::text[])`,
    [charges],
  );
  totals.left = rows.filter((r) => r.state === 'intent').length;
  const cancelled = new Map(rows.filter((r) => r.state === 'cancelled').map((r) => [r.charge_id, r.reason]));
  if (cancelled.size > 0) await refuseCancelled(deps, run, actor, cancelled);
  return totals;
}

/** Applied money steps whose refund was cancelled (recon_refunds.reason says why): refused, with that reason. */
async function refuseCancelled(
  deps: ApplyDeps,
  run: TransactionResult,
  actor: string,
  cancelled: ReadonlyMap<string, string | null>,
): Promise<void> {
  const plan = await requirePlan(deps.pool, run.planId);
  const decisions: StepDecision[] = [];
  for (const step of plan.body.steps) {
    if (!step.moves_money || plan.steps.get(step.step)?.state !== 'applied') continue;
    const why = (step.refunds ?? []).flatMap((r) =>
      cancelled.has(r.charge_id) ? [`${r.charge_id}: ${cancelled.get(r.charge_id) ?? 'cancelled'}`] : [],
    );
    if (why.length === 0) continue;
    const reason = `not refunded, Stripe's word before the refund: ${why.join('; ')}`;
    decisions.push({ step: step.step, state: 'refused', reason, findingId: null });
    const now = run.report.applied.findIndex((s) => s.step === step.step);
    if (now >= 0) run.report.applied.splice(now, 1);
    else run.report.earlier.applied -= 1;
    run.report.refused.push({ ...stepReport(step), reason });
  }
  await decideSteps(deps.pool, run.planId, decisions, actor, deps.clock());
}
