import type { PoolClient } from '../db/pool.js';
import type { Category } from './categories.js';
import { MALFORMED_CHARGE_CATEGORY } from './categories.js';
import { applyRepairBrake, type RunContext } from './batch.js';
import { closeHealedFindings, recordFindings } from './findings-store.js';
import type { Finding } from './judge/index.js';
import { judgeRefunds, type RefundFacts } from './judge/refunds.js';
import type { MalformedCharge, NormalizedRefund, RefundSource } from './provider.js';
import {
  advanceRefundCursor,
  hasRefundActivity,
  recordedRefunds,
  loadRefundClaims,
  loadRefundRows,
  mirrorRefunds,
  readRefundCursor,
  refundFact,
  type RefundSelection,
} from './refund-facts.js';
import { executeRefundRepairs } from './refund-repairs.js';
import { executeRepairs, type RepairOutcome } from './repairs.js';
import type { RefundsReport, SweepDeps, SweepOptions } from './types.js';
import type { TimeWindow } from './window.js';
import { DAY_MS, MINUTE_MS } from '../time/units.js';

/**
 * The refunds step of a run (docs/judgement.md "Refunds the application makes"): the
 * account's refunds created in the run's window are listed from Stripe a day at a time,
 * with the local rows created and the refund claims active in it; what Stripe does not
 * list (a row's refund, a stored answer's) is read by id; each day is judged, repaired
 * and recorded in one transaction with the refunds cursor's advance. Refund events
 * (late changes) judge the refunds they name the same way (judgeRefundsById).
 */

/** A refund is made within its claim's lease; beyond that, Stripe's and our clocks may differ by this much. */
const CLOCK_SKEW_MS = 5 * MINUTE_MS;

interface RefundStep {
  deps: SweepDeps;
  options: SweepOptions;
  ctx: RunContext;
  report: RefundsReport;
}

export function emptyRefundsReport(): RefundsReport {
  return {
    listed: 0,
    read_by_id: 0,
    missing: 0,
    malformed: 0,
    days_listed: 0,
    days_quiet: 0,
    cursor: null,
    found: {},
    repaired: {},
  };
}

/**
 * The refunds of a run's window. A scheduled run goes on from its refunds cursor (less the
 * overlap), so a window a failed step left is listed again; a backfill judges its range.
 */
export async function sweepRefundWindow(
  deps: SweepDeps,
  options: SweepOptions,
  ctx: RunContext,
  window: TimeWindow,
): Promise<RefundsReport | undefined> {
  const listRefunds = deps.listRefunds;
  if (!listRefunds) return undefined;
  const step: RefundStep = { deps, options, ctx, report: (ctx.report.refunds ??= emptyRefundsReport()) };
  const scheduled = ctx.run.mode === 'run';
  let from = window.from;
  if (scheduled) {
    const cursor = await ctx.inTransaction((client) => readRefundCursor(client, ctx.run.account));
    if (cursor) from = new Date(Math.min(window.from.getTime(), cursor.getTime() - options.overlapMs));
  }
  for (let start = from; start < window.to;) {
    options.signal?.throwIfAborted();
    const end = new Date(Math.min(window.to.getTime(), start.getTime() + DAY_MS));
    await judgeRefundDay(step, listRefunds, { from: start, to: end }, scheduled);
    start = end;
    step.report.cursor = end.toISOString();
  }
  return step.report;
}

/** One day of refunds: listed (with a look past its end for claims made at its close), judged, committed. */
async function judgeRefundDay(
  step: RefundStep,
  listRefunds: RefundSource,
  day: TimeWindow,
  scheduled: boolean,
): Promise<void> {
  const { options, ctx, report } = step;
  const lookahead = options.leaseMs + CLOCK_SKEW_MS;
  const listedTo = new Date(Math.min(ctx.readUntil.getTime(), day.to.getTime() + lookahead));
  const checkpoint = scheduled
    ? (client: PoolClient, now: Date) => advanceRefundCursor(client, ctx.run.account, day.to, ctx.run.id, now)
    : undefined;
  // Only a refund claim or a refund row can make an application refund worth judging: a quiet
  // day costs one statement and no request (an idle account stays at its two requests).
  const active = await ctx.inTransaction((client) =>
    hasRefundActivity(client, ctx.run.account, { from: day.from, to: listedTo }),
  );
  if (!active) {
    report.days_quiet += 1;
    if (checkpoint) await ctx.inTransaction((client) => checkpoint(client, step.deps.clock()));
    return;
  }
  report.days_listed += 1;
  const listed: NormalizedRefund[] = [];
  const malformed: MalformedCharge[] = [];
  for await (const page of listRefunds(ctx.run.account, { from: day.from, to: listedTo }, options.signal)) {
    listed.push(...page.refunds);
    malformed.push(...page.malformed);
  }
  const inDay = listed.filter((r) => r.created * 1000 < day.to.getTime() && r.created * 1000 >= day.from.getTime());
  const judged = new Set(inDay.map((r) => r.id));
  report.listed += inDay.length;
  report.malformed += malformed.length;
  await judgeRefundBatch(step, {
    window: day,
    judged: inDay,
    later: listed.filter((r) => !judged.has(r.id)),
    malformed,
    checkpoint,
  });
}

/**
 * Refunds events named (late changes), created from `since`: read by id, each judged with
 * its row and claim. Only when one could be the application's (a refund row names it, or
 * the account had refund claims since then): other refunds are the charge's business.
 */
export async function judgeRefundsById(
  deps: SweepDeps,
  options: SweepOptions,
  ctx: RunContext,
  ids: readonly string[],
  since: Date,
): Promise<void> {
  if (ids.length === 0 || !deps.evidence.refundsById) return;
  const account = ctx.run.account;
  const ask = await ctx.inTransaction(async (client) =>
    (await hasRefundActivity(client, account, { from: since, to: ctx.readUntil }))
      ? ids
      : await recordedRefunds(client, ids),
  );
  if (ask.length === 0) return;
  const step: RefundStep = { deps, options, ctx, report: (ctx.report.refunds ??= emptyRefundsReport()) };
  await judgeRefundBatch(step, { window: null, judged: [], later: [], malformed: [], ask });
}

interface RefundBatch {
  /** Rows and claims of this window are judged too; null: only what the refunds name. */
  window: TimeWindow | null;
  judged: NormalizedRefund[];
  later: NormalizedRefund[];
  malformed: MalformedCharge[];
  /** Refund ids to read from Stripe by id first. */
  ask?: readonly string[];
  checkpoint?: (client: PoolClient, now: Date) => Promise<void>;
}

async function judgeRefundBatch(step: RefundStep, batch: RefundBatch): Promise<void> {
  const { ctx } = step;
  const account = ctx.run.account;
  const listedIds = new Set([...batch.judged, ...batch.later].map((r) => r.id));
  // What the local side names that Stripe did not list: its rows' refunds, its claims' stored answers.
  const first = await ctx.inTransaction((client) => loadFacts(client, account, batch.window, batch.judged));
  const ask = new Set(batch.ask ?? []);
  for (const row of first.rows) if (!listedIds.has(row.refundId)) ask.add(row.refundId);
  for (const claim of first.claims)
    if (claim.answerRefundId !== null && !listedIds.has(claim.answerRefundId)) ask.add(claim.answerRefundId);
  const { found, missing, unreadable } = await readById(step, [...ask]);
  const fetchedAt = step.deps.clock();
  const judged = [...batch.judged, ...found];
  const malformed = [...batch.malformed, ...unreadable];
  await ctx.inTransaction(async (client) => {
    await mirrorRefunds(client, account, [...judged, ...batch.later], fetchedAt);
    const local = await loadFacts(client, account, batch.window, judged);
    const facts: RefundFacts = {
      refunds: judged.map(refundFact),
      later: batch.later.map(refundFact),
      missing,
      ...local,
    };
    await judgeAndRecord(step, client, facts, malformed);
    if (batch.checkpoint) await batch.checkpoint(client, step.deps.clock());
    await ctx.lock.confirmHeld(client);
  });
}

async function loadFacts(
  client: PoolClient,
  account: string,
  window: TimeWindow | null,
  refunds: readonly NormalizedRefund[],
): Promise<Pick<RefundFacts, 'rows' | 'claims'>> {
  const selection: RefundSelection = {
    account,
    window,
    refundIds: refunds.map((r) => r.id),
    keys: refunds.flatMap((r) =>
      r.tenantId && r.idempotencyKey ? [{ tenantId: r.tenantId, key: r.idempotencyKey }] : [],
    ),
  };
  return { rows: await loadRefundRows(client, selection), claims: await loadRefundClaims(client, selection) };
}

/** Refunds read by id: those Stripe has, those it does not (404), those it answers unreadable. */
async function readById(
  step: RefundStep,
  ids: string[],
): Promise<{ found: NormalizedRefund[]; missing: Set<string>; unreadable: MalformedCharge[] }> {
  const unreadable: MalformedCharge[] = [];
  const reader = step.deps.evidence.refundsById;
  if (ids.length === 0 || !reader) return { found: [], missing: new Set(), unreadable };
  const found = await reader(step.ctx.run.account, ids, step.options.signal, (bad) => unreadable.push(bad));
  step.report.read_by_id += ids.length;
  const answered = new Set([...found.map((r) => r.id), ...unreadable.flatMap((b) => (b.id ? [b.id] : []))]);
  const missing = new Set(ids.filter((id) => !answered.has(id)));
  step.report.missing += missing.size;
  return { found, missing, unreadable };
}

async function judgeAndRecord(
  step: RefundStep,
  client: PoolClient,
  facts: RefundFacts,
  malformed: MalformedCharge[],
): Promise<void> {
  const { deps, ctx, report } = step;
  const { run } = ctx;
  const now = deps.clock();
  const judgement = judgeRefunds(facts, { now, providerIdempotencyWindowMs: deps.idempotencyWindowMs });
  const findings = [...judgement.findings, ...malformed.flatMap(unreadableRefund)];
  // Refund rows inserted and claims completed are repairs like a slice's: the same brake, per run.
  applyRepairBrake(step.options, ctx, findings, judgement.judgedSubjects.length);
  const execute = async () =>
    new Map([
      ...(await executeRefundRepairs(client, run.account, findings, now)),
      ...(await executeRepairs(client, findings, { now })),
    ]);
  const planned = await planRefundBatch(ctx, client, execute);
  const repairs = await execute();
  const rows = await recordFindings(client, { account: run.account, runId: run.id, now, findings, repairs });
  await closeHealedFindings(client, {
    account: run.account,
    runId: run.id,
    now,
    judgedSubjects: [...judgement.judgedSubjects, ...malformed.flatMap((b) => (b.id ? [b.id] : []))],
    findings,
    freshlyRead: facts.refunds.map((r) => r.id),
    // A refund that failed after it was recorded stays open for a person, whatever later runs see.
    keepCategories: ['refund_status_drift'],
  });
  for (const row of rows) if (row.firstThisRun) count(report.found, ctx.report.findings, row.category as Category);
  for (const f of repairs.keys()) count(report.repaired, ctx.report.repaired, f.category);
  if (ctx.writes.dryRun)
    for (const [f, r] of repairs)
      ctx.log.info({ category: f.category, subject: f.subject, action: r.action }, 'dry run: would repair');
  planned?.();
}

/**
 * A plan run (src/plans): the batch's repairs tried in a savepoint rolled back, so the
 * planner reads the rows as judged and learns which repairs would land; then made again
 * as in any dry run. Null for any other run.
 */
async function planRefundBatch(
  ctx: RunContext,
  client: PoolClient,
  execute: () => Promise<Map<Finding, RepairOutcome>>,
): Promise<(() => void) | null> {
  const planner = ctx.writes.planner;
  if (!planner) return null;
  await client.query('SAVEPOINT plan_refunds');
  const repairs = await execute();
  await client.query('ROLLBACK TO SAVEPOINT plan_refunds; RELEASE SAVEPOINT plan_refunds');
  return planner.read(client, { account: ctx.run.account, name: 'refunds', repairs, refunds: [] });
}

function count(step: Partial<Record<Category, number>>, run: Record<Category, number>, category: Category): void {
  step[category] = (step[category] ?? 0) + 1;
  run[category] += 1;
}

/** A refund Stripe returned that cannot be read: an open finding naming it, until it reads well. */
function unreadableRefund(bad: MalformedCharge): Finding[] {
  if (!bad.id) return [];
  return [
    {
      category: MALFORMED_CHARGE_CATEGORY,
      subject: bad.id,
      chargeId: null,
      tenantId: null,
      idempotencyKey: null,
      repair: null,
      reason: `Stripe returned this refund without what the sweep needs (${bad.problem}); it cannot be judged`,
      details: { malformed: bad.problem, refund_id: bad.id },
      covers: { claims: [], charges: [], effects: [] },
    },
  ];
}
