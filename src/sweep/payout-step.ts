import type { PoolClient } from '../db/pool.js';
import type { RunContext } from './batch.js';
import type { Category } from './categories.js';
import { closeHealedFindings, recordFindings } from './findings-store.js';
import type { Finding } from './judge/index.js';
import {
  judgePayout,
  judgePayoutStatus,
  judgeUnpaid,
  linkedFees,
  type PayoutFact,
  type PayoutStatus,
  type PayoutTransactionFact,
} from './judge/payouts.js';
import {
  loadPayoutLinks,
  loadUnpaidPayments,
  mirrorPayouts,
  mirrorTransactions,
  notePayoutAccounts,
  oldestAwaitedPayout,
  openUnpaidSubjects,
  payoutFact,
  payoutHistories,
  readPayoutAccount,
  recordFees,
  recordPayoutStatuses,
  recordReconciled,
  transactionFact,
  type PayoutAccountState,
} from './payout-facts.js';
import type { NormalizedBalanceTransaction, NormalizedPayout, PayoutSource } from './provider.js';
import type { PayoutsReport, SweepDeps, SweepOptions } from './types.js';
import type { TimeWindow } from './window.js';

/**
 * The payouts step of a run (docs/judgement.md "Payouts and fees"), after the window's
 * slices, refunds and late changes, so the payment rows it links to are up to date:
 * 1. the account's payouts created in the last SWEEPER_PAYOUT_GRACE (and back to the oldest
 *    one still awaited) are listed and mirrored, in one transaction with the findings of
 *    payouts returned after they were paid and the manual payouts recorded as not itemised;
 * 2. each automatic payout whose reconciliation Stripe completed and that the sweep has not
 *    reconciled has its balance transactions listed; each page is mirrored, linked and its
 *    payments' fees recorded while the listing goes on, then the payout is judged and
 *    recorded reconciled with its findings, in one transaction;
 * 3. payments that became older than the grace since the last run, and those with an open
 *    unpaid_effect finding, are judged against the mirrored transactions.
 * A crash anywhere resumes to the same end: a payout is recorded reconciled only after its
 * fees and with its findings, and one not recorded is reconciled again from Stripe (its
 * mirror and fees written again are the same facts).
 */

interface PayoutStep {
  deps: SweepDeps;
  options: SweepOptions;
  ctx: RunContext;
  report: PayoutsReport;
}

const RETURNED: ReadonlySet<PayoutStatus> = new Set(['failed', 'canceled']);

export function emptyPayoutsReport(): PayoutsReport {
  return {
    listed: 0,
    skipped: false,
    reconciled: 0,
    not_itemised: 0,
    awaiting: 0,
    transactions: 0,
    linked: 0,
    fees: 0,
    found: {},
  };
}

export async function sweepPayouts(
  deps: SweepDeps,
  options: SweepOptions,
  ctx: RunContext,
  /** The listing the runner's group made for this run (quiet.ts): used when it covers the same window. */
  prelisted?: { window: TimeWindow; listed: readonly NormalizedPayout[] },
): Promise<PayoutsReport | undefined> {
  const source = deps.payouts;
  if (!source) return undefined;
  const step: PayoutStep = { deps, options, ctx, report: (ctx.report.payouts ??= emptyPayoutsReport()) };
  const account = ctx.run.account;
  const { state, awaited } = await ctx.inTransaction(async (client) => ({
    state: await readPayoutAccount(client, account),
    awaited: await oldestAwaitedPayout(client, account),
  }));
  // An account's payouts change a few times a day: a scheduled run lists them once
  // SWEEPER_PAYOUT_EVERY has passed since the last listing, and sends no request before.
  const scheduled = ctx.run.mode === 'run';
  if (scheduled && listedRecently(step, state)) {
    step.report.skipped = true;
    await judgeUnpaidPayments(step);
    return step.report;
  }
  const window = listingWindow(step, awaited, state);
  const listed: PayoutFact[] = [];
  if (prelisted && sameWindow(prelisted.window, window))
    listed.push(...prelisted.listed.map((p) => payoutFact(p, account)));
  else
    for await (const page of source.listPayouts(account, window, options.signal))
      listed.push(...page.map((p) => payoutFact(p, account)));
  await fault(deps, 'payouts:listed');
  step.report.listed += listed.length;
  const { listedTo, ...before } = listingState(state, window, scheduled);
  const toReconcile = await recordListed(step, listed, { account, ...before });
  await fault(deps, 'payouts:recorded');
  for (const payout of toReconcile) {
    options.signal?.throwIfAborted();
    await reconcilePayout(step, source, payout);
  }
  await judgeUnpaidPayments(step, listedTo);
  return step.report;
}

/** The account's payout state noted with the listing, and where the listing reaches once its payouts are reconciled. */
function listingState(
  state: PayoutAccountState | null,
  window: TimeWindow,
  scheduled: boolean,
): PayoutAccountState & { listedTo: Date } {
  return {
    since: state?.since ?? window.from,
    unpaidJudgedTo: state?.unpaidJudgedTo ?? window.from,
    // The listing counts once what it found is reconciled (judgeUnpaidPayments notes it):
    // after a crash before, the next run lists again instead of waiting SWEEPER_PAYOUT_EVERY.
    listedAt: state?.listedAt ?? window.from,
    // Payouts are listed without a gap up to here (a backfill: to its end, when it reaches
    // past the last listing); the next scheduled listing starts here at the latest.
    listedTo: scheduled || !state || window.from <= state.listedAt ? window.to : state.listedAt,
  };
}

/** Crash tests: the step's named points (`payouts:listed`, `payout:<id>:judged`, …). */
async function fault(deps: SweepDeps, name: string): Promise<void> {
  await deps.faultPoint?.(name);
}

function sameWindow(a: TimeWindow, b: TimeWindow): boolean {
  return a.from.getTime() === b.from.getTime() && a.to.getTime() === b.to.getTime();
}

function listedRecently(step: PayoutStep, state: PayoutAccountState | null): boolean {
  return state !== null && step.ctx.readUntil.getTime() - state.listedAt.getTime() < step.options.payoutEveryMs;
}

/**
 * Scheduled runs list the payouts created in the last SWEEPER_PAYOUT_GRACE, reaching back to
 * the oldest one still awaited and to the end of the last listing (so listings leave no
 * gap, after a pause longer than the grace too); a backfill lists those created in its range.
 */
function listingWindow(step: PayoutStep, awaited: Date | null, state: PayoutAccountState | null): TimeWindow {
  const { ctx, options } = step;
  if (ctx.run.mode !== 'run') return { from: ctx.run.window.from, to: ctx.run.window.to };
  const starts = [ctx.readUntil.getTime() - options.payoutGraceMs];
  if (awaited) starts.push(awaited.getTime());
  if (state) starts.push(state.listedAt.getTime());
  return { from: new Date(Math.min(...starts)), to: ctx.readUntil };
}

/** The listed payouts mirrored, their returns judged, manual ones recorded; returns those to reconcile now. */
async function recordListed(
  step: PayoutStep,
  listed: PayoutFact[],
  state: PayoutAccountState & { account: string },
): Promise<PayoutFact[]> {
  const { ctx, deps, report } = step;
  const awaiting = (p: PayoutFact) => p.automatic && p.reconciliationStatus !== 'completed' && !RETURNED.has(p.status);
  report.awaiting += listed.filter(awaiting).length;
  return ctx.inTransaction(async (client) => {
    const now = deps.clock();
    const histories = await payoutHistories(
      client,
      listed.map((p) => p.id),
    );
    await mirrorPayouts(client, ctx.run.account, listed, now);
    const findings = listed.flatMap(
      (p) => judgePayoutStatus(p, histories.get(p.id) ?? { status: null, reconciled: false }) ?? [],
    );
    report.not_itemised += await recordPayoutStatuses(client, {
      account: ctx.run.account,
      payouts: listed,
      runId: ctx.run.id,
      now,
    });
    await notePayoutAccounts(client, [{ ...state, runId: ctx.run.id }], now);
    await record(step, client, findings);
    await ctx.lock.confirmHeld(client);
    return listed.filter(
      (p) => p.automatic && p.reconciliationStatus === 'completed' && histories.get(p.id)?.reconciled !== true,
    );
  });
}

/**
 * One payout. Each page of its balance transactions is mirrored, linked and its payments'
 * fees recorded as it comes, while the rest is still being listed; once every page is in,
 * the payout is judged and recorded reconciled with its findings in one transaction.
 */
async function reconcilePayout(step: PayoutStep, source: PayoutSource, payout: PayoutFact): Promise<void> {
  const { ctx, deps, report, options } = step;
  const txns: PayoutTransactionFact[] = [];
  const links = { payments: new Set<string>(), refunds: new Set<string>() };
  let fees = 0;
  for await (const page of source.payoutTransactions(ctx.run.account, payout.id, options.signal))
    fees += await ingestPage(step, payout, page, { txns, links });
  await fault(deps, `payout:${payout.id}:listed`);
  await ctx.inTransaction(async (client) => {
    const judged = judgePayout(payout, txns, links);
    await recordReconciled(client, { payout, sums: judged.sums, runId: ctx.run.id, now: deps.clock() });
    await record(step, client, judged.findings);
    // Inside the transaction: a crash here rolls the payout back, unreconciled.
    await fault(deps, `payout:${payout.id}:judged`);
    await ctx.lock.confirmHeld(client);
    report.reconciled += 1;
    report.fees += fees;
    report.transactions += judged.sums.transactions;
    report.linked += judged.linked;
  });
  await fault(deps, `payout:${payout.id}:reconciled`);
}

/** One page of a payout's transactions: mirrored, its links added to `into`, its fees recorded; returns the rows changed. */
async function ingestPage(
  step: PayoutStep,
  payout: PayoutFact,
  page: NormalizedBalanceTransaction[],
  into: { txns: PayoutTransactionFact[]; links: { payments: Set<string>; refunds: Set<string> } },
): Promise<number> {
  const { ctx, deps } = step;
  const account = ctx.run.account;
  const facts = page.map(transactionFact);
  into.txns.push(...facts);
  return ctx.inTransaction(async (client) => {
    await mirrorTransactions(client, { account, payoutId: payout.id, txns: page, fetchedAt: deps.clock() });
    const found = await loadPayoutLinks(client, account, facts);
    for (const id of found.payments) into.links.payments.add(id);
    for (const id of found.refunds) into.links.refunds.add(id);
    const changed = await recordFees(client, account, linkedFees(facts, found));
    await ctx.lock.confirmHeld(client);
    return changed;
  });
}

/**
 * Payments that grew older than the grace since the last run, and the open unpaid_effect
 * findings again; with `listedTo`, this run's listing, whose payouts are now reconciled.
 */
async function judgeUnpaidPayments(step: PayoutStep, listedTo?: Date): Promise<void> {
  const { ctx, deps, options } = step;
  const account = ctx.run.account;
  await ctx.inTransaction(async (client) => {
    const read = await readPayoutAccount(client, account);
    if (!read) return;
    const state = listedTo && listedTo > read.listedAt ? { ...read, listedAt: listedTo } : read;
    const now = deps.clock();
    // Judged only where the payouts that would hold them were listed: up to the last listing, less the grace.
    const listed = Math.min(ctx.readUntil.getTime(), state.listedAt.getTime());
    const to = new Date(Math.max(state.unpaidJudgedTo.getTime(), listed - options.payoutGraceMs));
    const open = await openUnpaidSubjects(client, account);
    const payments = await loadUnpaidPayments(client, {
      account,
      window: { from: state.unpaidJudgedTo, to },
      reopen: open,
    });
    const findings = judgeUnpaid(payments, options.payoutGraceMs);
    await record(step, client, findings, new Set(open));
    await closeHealedFindings(client, {
      account,
      runId: ctx.run.id,
      now,
      judgedSubjects: [...open, ...findings.map((f) => f.subject)],
      findings,
      // The subjects are charges: their charge findings are the batches' to close.
      categories: ['unpaid_effect'],
    });
    await notePayoutAccounts(client, [{ ...state, account, unpaidJudgedTo: to, runId: ctx.run.id }], now);
    await fault(deps, 'payouts:unpaid');
    await ctx.lock.confirmHeld(client);
  });
}

/** Records findings; counts those first found now (`known`: subjects already open, not counted again). */
async function record(
  step: PayoutStep,
  client: PoolClient,
  findings: Finding[],
  known: ReadonlySet<string> = new Set(),
): Promise<void> {
  const { ctx, deps, report } = step;
  if (findings.length === 0) return;
  const rows = await recordFindings(client, {
    account: ctx.run.account,
    runId: ctx.run.id,
    now: deps.clock(),
    findings,
    repairs: new Map(),
  });
  for (const row of rows) {
    if (!row.firstThisRun || known.has(row.subject)) continue;
    const category = row.category as Category;
    report.found[category] = (report.found[category] ?? 0) + 1;
    ctx.report.findings[category] += 1;
  }
}
