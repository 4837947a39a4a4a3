import { formatDuration } from '../../time/duration.js';
import { finding } from './build.js';
import type { Finding } from './types.js';

/**
 * Payouts and fees (docs/judgement.md "Payouts and fees"): an automatic payout judged
 * against its balance transactions and the local rows they stand for, a payout's later
 * failure, and the old payments no payout holds. Pure: the facts are read and the
 * results written elsewhere (payout-facts.ts, payout-step.ts).
 */

export type PayoutStatus = 'pending' | 'in_transit' | 'paid' | 'failed' | 'canceled';

export interface PayoutFact {
  id: string;
  account: string;
  created: Date;
  arrivalDate: Date;
  /** Positive, in `currency`'s smallest unit. */
  amount: number;
  currency: string;
  automatic: boolean;
  status: PayoutStatus;
  reconciliationStatus: 'not_applicable' | 'in_progress' | 'completed';
  failureCode: string | null;
}

export interface PayoutTransactionFact {
  id: string;
  type: string;
  reportingCategory: string;
  amount: number;
  fee: number;
  net: number;
  currency: string;
  exchangeRate: number | null;
  sourceId: string | null;
  /** The charge a refund's or a dispute's source is of. */
  sourceChargeId: string | null;
}

/** Which of the payout's sources have a local row on the payout's account. */
export interface PayoutLinks {
  /** Charge ids with a payment row. */
  payments: ReadonlySet<string>;
  /** Refund ids with a refund row (payment_refunds). */
  refunds: ReadonlySet<string>;
}

/** What the payout paid out, by kind, in its currency: what `sweeper report payouts` shows. */
export interface PayoutSums {
  transactions: number;
  charges: number;
  refunds: number;
  disputes: number;
  /** Stripe's fees: every transaction's `fee`, and fee transactions (`reporting_category` fee), as a positive number. */
  fees: number;
  other: number;
  /** charges + refunds + disputes + other − fees: the net of every transaction but the payout's own. */
  net: number;
  /** The payout's amount − net: zero when the payout reconciles. */
  residual: number;
}

/** What a payment row records from its charge's balance transaction once the payout reconciles. */
export interface FeeRecord {
  chargeId: string;
  fee: number;
  net: number;
  settlementCurrency: string;
  exchangeRate: number | null;
}

export interface PayoutJudgement {
  sums: PayoutSums;
  findings: Finding[];
  fees: FeeRecord[];
  /** Charge, refund and dispute transactions tied to a local row. */
  linked: number;
}

const REFUND_CATEGORIES: ReadonlySet<string> = new Set(['refund', 'refund_failure']);
const DISPUTE_CATEGORIES: ReadonlySet<string> = new Set(['dispute', 'dispute_reversal']);

/** The payout's own `payout` transaction: listed among its members, not part of what it paid out. */
function isOwn(payout: PayoutFact, t: PayoutTransactionFact): boolean {
  return t.type === 'payout' && t.sourceId === payout.id;
}

export function payoutSums(payout: PayoutFact, txns: readonly PayoutTransactionFact[]): PayoutSums {
  const sums = { transactions: 0, charges: 0, refunds: 0, disputes: 0, fees: 0, other: 0 };
  for (const t of txns) {
    if (isOwn(payout, t)) continue;
    sums.transactions += 1;
    sums.fees += t.fee;
    if (t.reportingCategory === 'charge') sums.charges += t.amount;
    else if (REFUND_CATEGORIES.has(t.reportingCategory)) sums.refunds += t.amount;
    else if (DISPUTE_CATEGORIES.has(t.reportingCategory)) sums.disputes += t.amount;
    else if (t.reportingCategory === 'fee') sums.fees -= t.amount;
    else sums.other += t.amount;
  }
  const net = sums.charges + sums.refunds + sums.disputes + sums.other - sums.fees;
  return { ...sums, net, residual: payout.amount - net };
}

/** An automatic payout whose reconciliation Stripe completed, with every balance transaction it lists. */
export function judgePayout(
  payout: PayoutFact,
  txns: readonly PayoutTransactionFact[],
  links: PayoutLinks,
): PayoutJudgement {
  const sums = payoutSums(payout, txns);
  const out: PayoutJudgement = { sums, findings: [], fees: [], linked: 0 };
  const problems: string[] = [];
  if (sums.residual !== 0)
    problems.push(
      `its transactions net ${sums.net} ${payout.currency}, its amount is ${payout.amount}: a residual of ${sums.residual}`,
    );
  const foreign = txns.filter((t) => t.currency !== payout.currency).map((t) => t.id);
  if (foreign.length > 0)
    problems.push(`transactions in another currency than the payout's ${payout.currency}: ${foreign.join(', ')}`);
  const own = txns.find((t) => isOwn(payout, t));
  if (own && own.amount !== -payout.amount)
    problems.push(`its own payout transaction ${own.id} takes ${-own.amount}, not its amount ${payout.amount}`);
  if (problems.length > 0) out.findings.push(mismatch(payout, problems.join('; '), { sums }));
  for (const t of txns) {
    const link = linkOf(t, links);
    if (link === 'not_judged') continue;
    if (link === 'unrecorded') {
      out.findings.push(unrecorded(payout, t));
      continue;
    }
    out.linked += 1;
    const fee = feeOf(t);
    if (fee) out.fees.push(fee);
  }
  return out;
}

/** What a charge transaction's payment row records: its fee, net, settlement currency and rate. */
function feeOf(t: PayoutTransactionFact): FeeRecord | null {
  if (t.type !== 'charge' || t.sourceId === null) return null;
  return { chargeId: t.sourceId, fee: t.fee, net: t.net, settlementCurrency: t.currency, exchangeRate: t.exchangeRate };
}

/**
 * The fees of the charge transactions among `txns` that have a payment row: Stripe's facts,
 * the same whichever page of the payout they come on (judgePayout's `fees` for all of them).
 */
export function linkedFees(txns: readonly PayoutTransactionFact[], links: PayoutLinks): FeeRecord[] {
  return txns.flatMap((t) => (linkOf(t, links) === 'linked' ? (feeOf(t) ?? []) : []));
}

/**
 * Whether a transaction has a local row: a charge its payment row; a refund its refund row,
 * else the payment row of its charge (a refund made in the dashboard of a recorded payment);
 * a dispute the payment row of its charge. Other kinds (fees, adjustments, Connect's
 * `payment` transactions, transfers, payout reversals) are summed, not linked.
 */
function linkOf(t: PayoutTransactionFact, links: PayoutLinks): 'linked' | 'unrecorded' | 'not_judged' {
  const hasPayment = (id: string | null) => id !== null && links.payments.has(id);
  if (t.type === 'charge') return hasPayment(t.sourceId) ? 'linked' : 'unrecorded';
  if ((t.type === 'refund' || t.type === 'refund_failure') && REFUND_CATEGORIES.has(t.reportingCategory))
    return (t.sourceId !== null && links.refunds.has(t.sourceId)) || hasPayment(t.sourceChargeId)
      ? 'linked'
      : 'unrecorded';
  if (DISPUTE_CATEGORIES.has(t.reportingCategory)) return hasPayment(t.sourceChargeId) ? 'linked' : 'unrecorded';
  return 'not_judged';
}

/** What the sweep knew of a payout before this read. */
export interface PayoutHistory {
  /** Its status when last read (the reconciled record's, else the mirror's); null: never read. */
  status: PayoutStatus | null;
  reconciled: boolean;
}

const RETURNED: ReadonlySet<PayoutStatus> = new Set(['failed', 'canceled']);

/**
 * A payout the sweep had seen paid, or had reconciled, that has now failed or been
 * canceled: the money is back in the balance, not at the bank. One seen failed from the
 * start is Stripe's own business (the next payout pays it out): no finding.
 */
export function judgePayoutStatus(payout: PayoutFact, before: PayoutHistory): Finding | null {
  if (!RETURNED.has(payout.status)) return null;
  if (before.status === null || RETURNED.has(before.status)) return null;
  if (before.status !== 'paid' && !before.reconciled) return null;
  const was = before.status === 'paid' ? 'paid' : `reconciled (${before.status})`;
  return mismatch(
    payout,
    `the payout ${payout.status} after it was ${was}${payout.failureCode ? ` (${payout.failureCode})` : ''}: the money is back in the Stripe balance, not at the bank`,
    { returned: { status: payout.status, failure_code: payout.failureCode, before: before.status } },
  );
}

/** A local succeeded payment no reconciled payout holds, old enough that one should. */
export interface UnpaidPayment {
  chargeId: string;
  tenantId: string | null;
  key: string | null;
  amount: number;
  currency: string;
  createdAt: Date;
}

export function judgeUnpaid(payments: readonly UnpaidPayment[], graceMs: number): Finding[] {
  return payments.map((p) =>
    finding({
      category: 'unpaid_effect',
      tenantId: p.tenantId,
      key: p.key,
      charge: null,
      chargeId: p.chargeId,
      reason: `a succeeded payment created ${p.createdAt.toISOString()}, more than ${formatDuration(graceMs)} (SWEEPER_PAYOUT_GRACE) ago, and no reconciled payout holds its charge`,
      details: {
        effect: {
          charge_id: p.chargeId,
          amount: p.amount,
          currency: p.currency,
          created_at: p.createdAt.toISOString(),
        },
      },
      covers: {},
    }),
  );
}

function mismatch(payout: PayoutFact, reason: string, extra: Record<string, unknown>): Finding {
  return finding({
    category: 'payout_mismatch',
    subject: payout.id,
    tenantId: null,
    key: null,
    charge: null,
    reason,
    details: { payout: payoutSummary(payout), ...extra },
    covers: {},
  });
}

function unrecorded(payout: PayoutFact, t: PayoutTransactionFact): Finding {
  const chargeId = t.type === 'charge' ? t.sourceId : t.sourceChargeId;
  return finding({
    category: 'unrecorded_balance_transaction',
    subject: t.id,
    tenantId: null,
    key: null,
    charge: null,
    ...(chargeId ? { chargeId } : {}),
    reason: `payout ${payout.id} paid out ${t.reportingCategory} ${t.sourceId ?? t.id} (${t.amount} ${t.currency}), and no local ${t.type === 'charge' ? 'payment' : 'payment or refund'} row records it`,
    details: {
      payout: payoutSummary(payout),
      transaction: {
        id: t.id,
        type: t.type,
        reporting_category: t.reportingCategory,
        amount: t.amount,
        fee: t.fee,
        net: t.net,
        currency: t.currency,
        exchange_rate: t.exchangeRate,
        source: t.sourceId,
        charge: chargeId,
      },
    },
    covers: {},
  });
}

export function payoutSummary(p: PayoutFact) {
  return {
    id: p.id,
    created: p.created.toISOString(),
    arrival_date: p.arrivalDate.toISOString(),
    amount: p.amount,
    currency: p.currency,
    automatic: p.automatic,
    status: p.status,
    reconciliation_status: p.reconciliationStatus,
  };
}
