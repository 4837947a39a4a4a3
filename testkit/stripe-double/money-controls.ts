import type { BalanceJson, BalanceTransactionJson } from './balance-render.js';
import type { EventTiming } from './emit.js';
import type { FeeSchedule } from './fees.js';
import { record } from './ledger.js';
import { ledgerOf } from './ledger-entries.js';
import {
  advancePayout,
  cancelPayout,
  completeReconciliation,
  failPayout,
  runPayout,
  type RunPayoutOptions,
} from './payout-changes.js';
import type { PayoutJson, PayoutRecord } from './payouts.js';
import type { RefundFailureReason, RefundRecord } from './records.js';
import { cancelRefund, failRefund, refundCharge, succeedRefund, type RefundOptions } from './refund-changes.js';
import { renderRefund, type RefundJson } from './render.js';
import type { DoubleState } from './state.js';
import { balanceJson, payoutJson, txnJson } from './views.js';

/**
 * Control hooks for the money beyond the charge: a refund's life, fees and exchange
 * rates, balance transactions and payouts. Changes emit Stripe's events unless their
 * `EventTiming` says otherwise.
 */
export interface MoneyControls {
  /** A refund made outside the API (the dashboard), `pending` or `succeeded`: `charge.refunded`, `refund.created`. */
  createRefund(chargeId: string, options?: RefundOptions & { events?: EventTiming }): RefundJson;
  /** Refunds made through the API from now on start in this status. Default `succeeded`. */
  setNewRefundStatus(status: 'succeeded' | 'pending'): void;
  /** A pending refund goes through: `charge.refund.updated`, `refund.updated`. */
  succeedRefund(refundId: string, events?: EventTiming): RefundJson;
  /**
   * The bank returned the refund (pending or succeeded), with a `failure_reason` (default
   * `unknown`): the charge's `amount_refunded` goes back down, a `refund_failure` balance
   * transaction returns the money; `charge.refund.updated`, `refund.updated`, `refund.failed`.
   */
  failRefund(refundId: string, reason?: RefundFailureReason | EventTiming, events?: EventTiming): RefundJson;
  /** The refund (pending or succeeded) is canceled: as a failure, but `canceled`, without `refund.failed`. */
  cancelRefund(refundId: string, events?: EventTiming): RefundJson;

  /** Every account's fees (`account` undefined) or one account's; null: back to the default (2.9% + 30). */
  setFeeSchedule(schedule: Partial<FeeSchedule> | null, account?: string | null): void;
  /** Currencies' value in US dollars per major unit (e.g. `{ eur: 1.08 }`), from which every `exchange_rate` follows. */
  setFxRates(rates: Readonly<Record<string, number>>): void;
  /** The `exchange_rate` from one currency to another (null for one currency). */
  exchangeRate(from: string, to: string): number | null;

  balanceTransaction(id: string): BalanceTransactionJson | undefined;
  /** An account's balance transactions, newest first; only one payout's (manual ones too) with `payout`. */
  balanceTransactions(account: string | null, filter?: { payout?: string; type?: string }): BalanceTransactionJson[];
  /** Money in or out with no object behind it: `other_adjustment` (type `adjustment`) or `fee` (type `stripe_fee`). */
  addAdjustment(
    account: string | null,
    adjustment: { amount: number; reportingCategory?: 'other_adjustment' | 'fee'; description?: string },
  ): BalanceTransactionJson;
  /** What `GET /v1/balance` answers for the account. */
  balance(account: string | null): BalanceJson;

  /** Pays out the account's available balance (see RunPayoutOptions): `payout.created` … `payout.paid`. */
  runPayout(account: string | null, options?: RunPayoutOptions): PayoutJson;
  /** One status on, or to `to`: `payout.updated` (in transit), `payout.paid`. */
  advancePayout(payoutId: string, to?: 'in_transit' | 'paid', events?: EventTiming): PayoutJson;
  /** `reconciliation_status` `in_progress` → `completed`: `payout.reconciliation_completed`. */
  completePayoutReconciliation(payoutId: string, events?: EventTiming): PayoutJson;
  /** `payout.failed` (also after paid); a `payout_failure` balance transaction returns the money. */
  failPayout(payoutId: string, failure?: { code?: string; message?: string; events?: EventTiming }): PayoutJson;
  /** A pending or in-transit payout is canceled: `payout.canceled`; a `payout_cancel` transaction returns the money. */
  cancelPayout(payoutId: string, events?: EventTiming): PayoutJson;
  payout(id: string): PayoutJson | undefined;
  /** Newest first; of one account, or of all. */
  payouts(account?: string | null): PayoutJson[];
}

type RefundHooks = Pick<
  MoneyControls,
  'createRefund' | 'setNewRefundStatus' | 'succeedRefund' | 'failRefund' | 'cancelRefund'
>;
type PayoutHooks = Pick<
  MoneyControls,
  'runPayout' | 'advancePayout' | 'completePayoutReconciliation' | 'failPayout' | 'cancelPayout' | 'payout' | 'payouts'
>;

export function createMoneyControls(state: DoubleState): MoneyControls {
  const txn = (id: string) => txnJson(state, id) as BalanceTransactionJson;
  return {
    ...refundHooks(state),
    ...payoutHooks(state),
    setFeeSchedule(schedule, account) {
      state.fees.set(schedule, account);
    },
    setFxRates(rates) {
      state.fx.set(rates);
    },
    exchangeRate(from, to) {
      return state.fx.rate(from.toLowerCase(), to.toLowerCase());
    },
    balanceTransaction(id) {
      return txnJson(state, id);
    },
    balanceTransactions(account, filter = {}) {
      const ids =
        filter.payout === undefined
          ? ledgerOf(state, account).map((e) => e.id)
          : payoutOf(state, filter.payout).members;
      return ids.map(txn).filter((t) => filter.type === undefined || t.type === filter.type);
    },
    addAdjustment(account, adjustment) {
      if (!Number.isSafeInteger(adjustment.amount) || adjustment.amount === 0)
        throw new RangeError(`an adjustment is a non-zero integer amount (got ${adjustment.amount})`);
      const fee = adjustment.reportingCategory === 'fee';
      const made = record(state, {
        account,
        type: fee ? 'stripe_fee' : 'adjustment',
        reportingCategory: fee ? 'fee' : 'other_adjustment',
        amount: adjustment.amount,
        currency: state.accounts.settingsOf(account).defaultCurrency,
        description: adjustment.description ?? null,
        source: null,
      });
      return txn(made.id);
    },
    balance(account) {
      return balanceJson(state, account);
    },
  };
}

function refundHooks(state: DoubleState): RefundHooks {
  const refundOf = (id: string): RefundRecord => {
    const refund = state.refunds.get(id);
    if (!refund) throw new Error(`the double has no refund ${id}`);
    return refund;
  };
  return {
    createRefund(chargeId, options = {}) {
      const charge = state.charges.get(chargeId);
      if (!charge) throw new Error(`the double has no charge ${chargeId}`);
      const { events, ...refund } = options;
      return renderRefund(refundCharge(state, charge, refund, events ?? {}));
    },
    setNewRefundStatus(status) {
      state.newRefundStatus = status;
    },
    succeedRefund(refundId, events = {}) {
      return renderRefund(succeedRefund(state, refundOf(refundId), events));
    },
    failRefund(refundId, reason, events) {
      const [why, timing] = typeof reason === 'string' ? [reason, events] : [undefined, reason ?? events];
      return renderRefund(failRefund(state, refundOf(refundId), why, timing ?? {}));
    },
    cancelRefund(refundId, events = {}) {
      return renderRefund(cancelRefund(state, refundOf(refundId), events));
    },
  };
}

function payoutHooks(state: DoubleState): PayoutHooks {
  const json = (payout: PayoutRecord) => payoutJson(state, payout);
  return {
    runPayout(account, options) {
      return json(runPayout(state, account, options));
    },
    advancePayout(payoutId, to, events = {}) {
      return json(advancePayout(state, payoutOf(state, payoutId), to, events));
    },
    completePayoutReconciliation(payoutId, events = {}) {
      return json(completeReconciliation(state, payoutOf(state, payoutId), events));
    },
    failPayout(payoutId, failure = {}) {
      const { events, ...why } = failure;
      return json(failPayout(state, payoutOf(state, payoutId), why, events ?? {}));
    },
    cancelPayout(payoutId, events = {}) {
      return json(cancelPayout(state, payoutOf(state, payoutId), events));
    },
    payout(id) {
      const payout = state.payouts.get(id);
      return payout ? json(payout) : undefined;
    },
    payouts(account) {
      return state.payouts.of(account).map(json);
    },
  };
}

function payoutOf(state: DoubleState, id: string): PayoutRecord {
  const payout = state.payouts.get(id);
  if (!payout) throw new Error(`the double has no payout ${id}`);
  return payout;
}
