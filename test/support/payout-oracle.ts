import type { BalanceTransactionJson, PayoutJson, StripeDouble } from '../../testkit/stripe-double/index.js';

/**
 * docs/judgement.md "Payouts and fees", written again from the page for the payouts
 * property tests: what a scheduled run at `now` must leave, given what Stripe (the
 * double) holds and the local rows the run's payouts step saw. It keeps what the sweep
 * has done so far (which payouts it listed and reconciled, where unpaid payments were
 * judged to), one scheduled run at a time. Amounts in the payout's currency.
 */

export interface OracleSums {
  transactions: number;
  charges: number;
  refunds: number;
  disputes: number;
  fees: number;
  other: number;
  net: number;
  residual: number;
}

export interface OracleFee {
  fee: number;
  net: number;
  settlement_currency: string;
  exchange_rate: number | null;
}

/** The local rows the payouts step saw: the rows after the run (the step is its last writer). */
export interface LocalRows {
  payments: Array<{ charge_id: string; status: string; amount: number; created_at: Date }>;
  refunds: ReadonlySet<string>;
}

export interface PayoutOracle {
  listedAt: number | null;
  since: number | null;
  judgedTo: number | null;
  /** The status each payout had when last listed, and whether it is automatic. */
  seen: Map<string, { status: string; automatic: boolean; created: number }>;
  reconciled: Map<string, OracleSums>;
  /** Every balance transaction of a reconciled payout, its own too. */
  transactions: Map<string, { payout: string; txn: BalanceTransactionJson }>;
  /** Charges a reconciled payout's `charge` transaction holds. */
  paidCharges: Set<string>;
  mismatch: Set<string>;
  unrecorded: Set<string>;
  unpaidOpen: Set<string>;
  unpaidClosed: Set<string>;
  fees: Map<string, OracleFee>;
}

export function newPayoutOracle(): PayoutOracle {
  return {
    listedAt: null,
    since: null,
    judgedTo: null,
    seen: new Map(),
    reconciled: new Map(),
    transactions: new Map(),
    paidCharges: new Set(),
    mismatch: new Set(),
    unrecorded: new Set(),
    unpaidOpen: new Set(),
    unpaidClosed: new Set(),
    fees: new Map(),
  };
}

const RETURNED = new Set(['failed', 'canceled']);
const REFUNDS = new Set(['refund', 'refund_failure']);
const DISPUTES = new Set(['dispute', 'dispute_reversal']);

export interface RunExpectation {
  skipped: boolean;
  listed: number;
  awaiting: number;
  reconciled: number;
}

/**
 * One scheduled run at `now` on `account` (null: the platform). `chargeOf` names a refund's
 * or a dispute's charge by its id. `settings` are SWEEPER_PAYOUT_GRACE and SWEEPER_PAYOUT_EVERY.
 */
export function oracleRun(
  o: PayoutOracle,
  args: {
    double: StripeDouble;
    account: string | null;
    now: number;
    rows: LocalRows;
    chargeOf: ReadonlyMap<string, string>;
    graceMs: number;
    everyMs: number;
  },
): RunExpectation {
  const { now, graceMs } = args;
  const out: RunExpectation = { skipped: false, listed: 0, awaiting: 0, reconciled: 0 };
  if (o.listedAt !== null && now - o.listedAt < args.everyMs) out.skipped = true;
  else {
    // What is read: created in the last grace, back to the oldest automatic payout listed
    // and not reconciled (neither failed nor canceled), and to the end of the last listing.
    const starts = [now - graceMs];
    for (const [id, p] of o.seen)
      if (p.automatic && !RETURNED.has(p.status) && !o.reconciled.has(id)) starts.push(p.created * 1000);
    if (o.listedAt !== null) starts.push(o.listedAt);
    const from = Math.min(...starts);
    const listed = args.double
      .payouts(args.account)
      .filter((p) => p.created >= Math.floor(from / 1000) && p.created < Math.ceil(now / 1000));
    out.listed = listed.length;
    for (const p of listed) listPayout(o, p);
    o.since ??= from;
    o.judgedTo ??= from;
    o.listedAt = Math.max(o.listedAt ?? now, now);
    for (const p of listed) {
      if (p.automatic && p.reconciliation_status !== 'completed' && !RETURNED.has(p.status)) out.awaiting += 1;
      if (!p.automatic || p.reconciliation_status !== 'completed' || o.reconciled.has(p.id)) continue;
      reconcile(o, p, args.double.balanceTransactions(args.account, { payout: p.id }), args);
      out.reconciled += 1;
    }
  }
  judgeUnpaid(o, args);
  return out;
}

/** A payout seen paid, or reconciled, that is now failed or canceled: payout_mismatch. */
function listPayout(o: PayoutOracle, p: PayoutJson): void {
  const before = o.seen.get(p.id)?.status ?? null;
  if (
    RETURNED.has(p.status) &&
    before !== null &&
    !RETURNED.has(before) &&
    (before === 'paid' || o.reconciled.has(p.id))
  )
    o.mismatch.add(p.id);
  o.seen.set(p.id, { status: p.status, automatic: p.automatic, created: p.created });
}

function sourceId(t: BalanceTransactionJson): string | null {
  if (typeof t.source === 'string') return t.source;
  return t.source && typeof t.source.id === 'string' ? t.source.id : null;
}

function reconcile(
  o: PayoutOracle,
  p: PayoutJson,
  txns: BalanceTransactionJson[],
  args: { rows: LocalRows; chargeOf: ReadonlyMap<string, string> },
): void {
  const sums = { transactions: 0, charges: 0, refunds: 0, disputes: 0, fees: 0, other: 0 };
  const payments = new Set(args.rows.payments.map((r) => r.charge_id));
  let problem = false;
  for (const t of txns) {
    o.transactions.set(t.id, { payout: p.id, txn: t });
    if (t.currency !== p.currency) problem = true;
    const source = sourceId(t);
    if (t.type === 'payout' && source === p.id) {
      if (t.amount !== -p.amount) problem = true;
      continue;
    }
    sums.transactions += 1;
    sums.fees += t.fee;
    const category = t.reporting_category;
    if (category === 'charge') sums.charges += t.amount;
    else if (REFUNDS.has(category)) sums.refunds += t.amount;
    else if (DISPUTES.has(category)) sums.disputes += t.amount;
    else if (category === 'fee') sums.fees -= t.amount;
    else sums.other += t.amount;
    const charge = t.type === 'charge' ? source : source ? (args.chargeOf.get(source) ?? null) : null;
    let linked: boolean | null = null;
    if (t.type === 'charge') linked = charge !== null && payments.has(charge);
    else if ((t.type === 'refund' || t.type === 'refund_failure') && REFUNDS.has(category))
      linked = (source !== null && args.rows.refunds.has(source)) || (charge !== null && payments.has(charge));
    else if (DISPUTES.has(category)) linked = charge !== null && payments.has(charge);
    if (linked === false) o.unrecorded.add(t.id);
    if (t.type === 'charge' && charge !== null) {
      o.paidCharges.add(charge);
      if (linked)
        o.fees.set(charge, {
          fee: t.fee,
          net: t.net,
          settlement_currency: t.currency,
          exchange_rate: t.exchange_rate,
        });
    }
  }
  const net = sums.charges + sums.refunds + sums.disputes + sums.other - sums.fees;
  const residual = p.amount - net;
  if (residual !== 0 || problem) o.mismatch.add(p.id);
  o.reconciled.set(p.id, { ...sums, net, residual });
}

/**
 * Succeeded payments (amount above 0) created from the first listing's start on, judged
 * once older than the grace and only up to the last listing less the grace, with the open
 * findings judged again: one a reconciled payout now holds is closed.
 */
function judgeUnpaid(o: PayoutOracle, args: { now: number; rows: LocalRows; graceMs: number }): void {
  const from = o.judgedTo as number;
  const to = Math.max(from, Math.min(args.now, o.listedAt as number) - args.graceMs);
  const automatic = [...o.seen.values()].some((p) => p.automatic);
  const open = new Set<string>();
  for (const r of args.rows.payments) {
    if (r.status !== 'succeeded' || r.amount <= 0 || !automatic || o.paidCharges.has(r.charge_id)) continue;
    const created = r.created_at.getTime();
    if ((created >= from && created < to) || o.unpaidOpen.has(r.charge_id)) open.add(r.charge_id);
  }
  for (const id of o.unpaidOpen) if (!open.has(id)) o.unpaidClosed.add(id);
  o.unpaidOpen = open;
  o.judgedTo = to;
}
