/**
 * The money an account's objects move, as balance transactions in its settlement
 * currency: a charge's (derived from the charge, its figures fixed the first time they
 * are needed: at once for charges made one by one, lazily for bulk-seeded ones), and the
 * stored ones of refunds, disputes and adjustments (payouts: payout-changes.ts).
 */
import type { BalanceTransactionRecord, BalanceTransactionType, ReportingCategory } from './balance-store.js';
import type { ChargeRecord, ChargeSettlement } from './charge-store.js';
import type { DisputeRecord } from './disputes.js';
import { chargeFee, feeDetails } from './fees.js';
import type { RefundRecord } from './records.js';
import type { DoubleState } from './state.js';
import { DAY_SECONDS } from '../../src/time/units.js';

/** A charge's balance transaction id: `txn_` and the charge id's tail. */
export function txnIdOfCharge(chargeId: string): string {
  return `txn_${chargeId.startsWith('ch_') ? chargeId.slice(3) : chargeId}`;
}

/** Only a captured, successful charge has moved money. */
export function hasBalanceTransaction(charge: ChargeRecord): boolean {
  return charge.status === 'succeeded' && charge.captured && charge.amountCaptured > 0;
}

/** `available_on`: at once without a delay, else at the start of the UTC day `delayDays` later. */
export function availableOn(created: number, delayDays: number): number {
  if (delayDays === 0) return created;
  return created - (created % DAY_SECONDS) + delayDays * DAY_SECONDS;
}

/**
 * The charge's settlement, computed once with the account's currency, the exchange
 * rates and the fee schedule then in force; `created` defaults to the charge's (a
 * capture settles later). Undefined while the charge has moved no money.
 */
export function settlementOf(state: DoubleState, charge: ChargeRecord, created?: number): ChargeSettlement | undefined {
  if (!hasBalanceTransaction(charge)) return undefined;
  if (charge.settlement) return charge.settlement;
  const settings = state.accounts.settingsOf(charge.account);
  const currency = settings.defaultCurrency;
  const amount = state.fx.convert(charge.amountCaptured, charge.currency, currency);
  const exchangeRate = state.fx.rate(charge.currency, currency);
  const at = created ?? charge.created;
  charge.settlement = {
    currency,
    amount,
    fee: chargeFee(amount, exchangeRate !== null, state.fees.of(charge.account)),
    exchangeRate,
    created: at,
    availableOn: availableOn(at, settings.payoutDelayDays),
  };
  return charge.settlement;
}

export function chargeTransaction(charge: ChargeRecord, settlement: ChargeSettlement): BalanceTransactionRecord {
  return {
    id: txnIdOfCharge(charge.id),
    account: charge.account,
    type: 'charge',
    reportingCategory: 'charge',
    amount: settlement.amount,
    fee: settlement.fee,
    feeDetails: feeDetails(settlement.fee, settlement.currency, 'Stripe processing fees'),
    currency: settlement.currency,
    exchangeRate: settlement.exchangeRate,
    created: settlement.created,
    availableOn: settlement.availableOn,
    description: charge.description,
    source: charge.id,
  };
}

/** Any balance transaction by id, a charge's included; undefined when there is none. */
export function resolveTransaction(state: DoubleState, id: string): BalanceTransactionRecord | undefined {
  const stored = state.balance.get(id);
  if (stored) return stored;
  const tail = id.startsWith('txn_') ? id.slice(4) : undefined;
  if (tail === undefined) return undefined;
  for (const chargeId of [`ch_${tail}`, tail]) {
    const charge = state.charges.get(chargeId);
    const settlement = charge && txnIdOfCharge(charge.id) === id ? settlementOf(state, charge) : undefined;
    if (charge && settlement) return chargeTransaction(charge, settlement);
  }
  return undefined;
}

/** Money moved in the charge's currency, in the account's settlement currency. */
function settle(
  state: DoubleState,
  account: string | null,
  amount: number,
  currency: string,
): { amount: number; currency: string; exchangeRate: number | null } {
  const settlementCurrency = state.accounts.settingsOf(account).defaultCurrency;
  return {
    amount: state.fx.convert(amount, currency, settlementCurrency),
    currency: settlementCurrency,
    exchangeRate: state.fx.rate(currency, settlementCurrency),
  };
}

interface Movement {
  account: string | null;
  type: BalanceTransactionType;
  reportingCategory: ReportingCategory;
  amount: number;
  currency: string;
  exchangeRate?: number | null;
  fee?: number;
  feeDescription?: string;
  description: string | null;
  source: string | null;
  availableOn?: number;
}

/** Stores a new balance transaction, dated now and available at once unless told otherwise. */
export function record(state: DoubleState, movement: Movement): BalanceTransactionRecord {
  const created = state.clock.nowSeconds();
  const fee = movement.fee ?? 0;
  return state.balance.add({
    id: state.balance.newId('txn'),
    account: movement.account,
    type: movement.type,
    reportingCategory: movement.reportingCategory,
    amount: movement.amount,
    fee,
    feeDetails: feeDetails(fee, movement.currency, movement.feeDescription ?? 'Stripe processing fees'),
    currency: movement.currency,
    exchangeRate: movement.exchangeRate ?? null,
    created,
    availableOn: movement.availableOn ?? created,
    description: movement.description,
    source: movement.source,
  });
}

/** A refund takes its amount out of the balance at once, converted at today's rate; no fee is returned. */
export function recordRefund(state: DoubleState, refund: RefundRecord): BalanceTransactionRecord {
  const settled = settle(state, refund.account, refund.amount, refund.currency);
  return record(state, {
    account: refund.account,
    type: 'refund',
    reportingCategory: 'refund',
    ...settled,
    amount: -settled.amount,
    description: null,
    source: refund.id,
  });
}

/** A refund that failed or was canceled puts its balance transaction's amount back. */
export function recordRefundReversal(state: DoubleState, refund: RefundRecord): BalanceTransactionRecord | undefined {
  const original = refund.balanceTransaction ? state.balance.get(refund.balanceTransaction) : undefined;
  if (!original) return undefined;
  return record(state, {
    account: refund.account,
    type: 'refund_failure',
    reportingCategory: 'refund_failure',
    amount: -original.amount,
    currency: original.currency,
    exchangeRate: original.exchangeRate,
    description: `REFUND FAILURE FOR ${refund.id}`,
    source: refund.id,
  });
}

/** A dispute withdraws its amount and the dispute fee. */
export function recordDisputeWithdrawal(state: DoubleState, dispute: DisputeRecord): BalanceTransactionRecord {
  const settled = settle(state, dispute.account, dispute.amount, dispute.currency);
  return record(state, {
    account: dispute.account,
    type: 'adjustment',
    reportingCategory: 'dispute',
    ...settled,
    amount: -settled.amount,
    fee: state.fees.of(dispute.account).disputeFee,
    feeDescription: 'Dispute fee',
    description: `Chargeback withdrawal for ${dispute.charge}`,
    source: dispute.id,
  });
}

/** A dispute won gives the disputed amount back (not the fee). */
export function recordDisputeReversal(
  state: DoubleState,
  dispute: DisputeRecord,
): BalanceTransactionRecord | undefined {
  const withdrawal = dispute.balanceTransactions[0];
  const original = withdrawal === undefined ? undefined : state.balance.get(withdrawal);
  if (!original) return undefined;
  return record(state, {
    account: dispute.account,
    type: 'adjustment',
    reportingCategory: 'dispute_reversal',
    amount: -original.amount,
    currency: original.currency,
    exchangeRate: original.exchangeRate,
    description: `Chargeback reversal for ${dispute.charge}`,
    source: dispute.id,
  });
}
