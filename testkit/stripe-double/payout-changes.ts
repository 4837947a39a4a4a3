/**
 * A payout's life, with Stripe's events: made from the available balance (`payout.created`),
 * `in_transit` (`payout.updated`), `paid` (`payout.paid`), its transactions queryable
 * (`payout.reconciliation_completed`, automatic payouts only); or `failed`
 * (`payout.failed`, even after `paid`, as Stripe warns) or `canceled` (`payout.canceled`),
 * which returns the money to the balance with a `payout_failure` or `payout_cancel`
 * balance transaction that the next payout pays out.
 */
import { emit, toMs, type EmitContext, type EventTiming } from './emit.js';
import { record } from './ledger.js';
import { entryRecord, ledgerOf, listOrder } from './ledger-entries.js';
import type { PayoutRecord, PayoutStatus } from './payouts.js';
import type { DoubleState } from './state.js';
import { balanceJson, payoutJson } from './views.js';
import { DAY_SECONDS } from '../../src/time/units.js';

const STEPS: readonly PayoutStatus[] = ['pending', 'in_transit', 'paid'];

export interface RunPayoutOptions {
  /** A Date or unix seconds; default the start of the next UTC day. */
  arrivalDate?: Date | number;
  /** Default: the account's schedule (`payoutInterval: 'manual'` → false). A manual payout cannot be itemised. */
  automatic?: boolean;
  /** Where the payout stops for now (advance it with `advancePayout`). Default `paid`. */
  status?: 'pending' | 'in_transit' | 'paid';
  /** Keeps `reconciliation_status` at `in_progress` until `completePayoutReconciliation`. */
  holdReconciliation?: boolean;
  /**
   * Added to the payout's amount with no balance transaction to explain it: a payout
   * whose transactions do not sum to its amount (Stripe's never do this; tests need it).
   */
  unexplained?: number;
  method?: 'standard' | 'instant';
  description?: string;
  metadata?: Record<string, string>;
  events?: EventTiming;
}

/**
 * Pays out every available balance transaction of the account not paid out yet, in its
 * settlement currency: the payout's amount is their net sum, and its own `payout`
 * transaction (negative) is one of its members, so the members' nets sum to zero.
 */
export function runPayout(state: DoubleState, account: string | null, options: RunPayoutOptions = {}): PayoutRecord {
  const now = state.clock.nowSeconds();
  const settings = state.accounts.settingsOf(account);
  const due = ledgerOf(state, account)
    .filter((e) => e.availableOn <= now && e.type !== 'payout' && e.currency === settings.defaultCurrency)
    .filter((e) => state.balance.payoutOf(e.id) === undefined)
    .map((e) => entryRecord(state, e));
  const sum = due.reduce((total, txn) => total + txn.amount - txn.fee, 0);
  const amount = sum + (options.unexplained ?? 0);
  if (amount <= 0)
    throw new Error(
      `${account ?? 'the platform'} has nothing to pay out (available: ${sum} ${settings.defaultCurrency})`,
    );
  const context: EmitContext = options.events ?? {};
  emit(state, account, 'balance.available', { json: { ...balanceJson(state, account) } }, undefined, context);

  const id = state.balance.newId('po');
  const own = record(state, {
    account,
    type: 'payout',
    reportingCategory: 'payout',
    amount: -amount,
    currency: settings.defaultCurrency,
    description: 'STRIPE PAYOUT',
    source: id,
  });
  const members = [own, ...due].sort(listOrder).map((txn) => txn.id);
  state.balance.assign(members, id);
  const automatic = options.automatic ?? settings.payoutInterval !== 'manual';
  const payout: PayoutRecord = {
    id,
    account,
    created: now,
    amount,
    currency: settings.defaultCurrency,
    arrivalDate: arrivalDateOf(options.arrivalDate, now),
    automatic,
    status: 'pending',
    reconciliationStatus: automatic ? 'in_progress' : 'not_applicable',
    balanceTransaction: own.id,
    failureBalanceTransaction: null,
    failureCode: null,
    failureMessage: null,
    method: options.method ?? 'standard',
    destination: `ba_${(account ?? state.accounts.platform.id).slice(5)}`,
    description: options.description ?? 'STRIPE PAYOUT',
    metadata: { ...(options.metadata ?? {}) },
    members,
  };
  state.payouts.add(payout);
  emitPayout(state, payout, 'payout.created', context);
  const target = options.status ?? 'paid';
  while (payout.status !== target) advancePayout(state, payout, undefined, context);
  if (automatic && !options.holdReconciliation) completeReconciliation(state, payout, context);
  return payout;
}

/** One step on (`pending` → `in_transit` → `paid`), or straight to `to`. */
export function advancePayout(
  state: DoubleState,
  payout: PayoutRecord,
  to: 'in_transit' | 'paid' | undefined,
  context: EmitContext = {},
): PayoutRecord {
  const at = STEPS.indexOf(payout.status);
  const target = to ?? STEPS[at + 1];
  if (at < 0 || target === undefined || STEPS.indexOf(target) <= at)
    throw new Error(`payout ${payout.id} is ${payout.status}: it cannot move to ${target ?? 'a later status'}`);
  while (payout.status !== target) {
    const previous = payout.status;
    payout.status = STEPS[STEPS.indexOf(payout.status) + 1] as PayoutStatus;
    if (payout.status === 'paid') emitPayout(state, payout, 'payout.paid', context);
    else emitPayout(state, payout, 'payout.updated', context, { status: previous });
  }
  return payout;
}

/** An automatic payout's transactions become queryable: `payout.reconciliation_completed`. */
export function completeReconciliation(
  state: DoubleState,
  payout: PayoutRecord,
  context: EmitContext = {},
): PayoutRecord {
  if (payout.reconciliationStatus !== 'in_progress')
    throw new Error(`payout ${payout.id}'s reconciliation is ${payout.reconciliationStatus}, not in_progress`);
  payout.reconciliationStatus = 'completed';
  emitPayout(state, payout, 'payout.reconciliation_completed', context);
  return payout;
}

/** The bank returned the payout (also after `paid`): `payout.failed`; the money is back in the balance. */
export function failPayout(
  state: DoubleState,
  payout: PayoutRecord,
  failure: { code?: string; message?: string } = {},
  context: EmitContext = {},
): PayoutRecord {
  if (payout.status === 'failed' || payout.status === 'canceled')
    throw new Error(`payout ${payout.id} is already ${payout.status}`);
  reverse(state, payout, 'payout_failure');
  payout.status = 'failed';
  payout.failureCode = failure.code ?? 'could_not_process';
  payout.failureMessage = failure.message ?? 'The bank could not process this payout.';
  emitPayout(state, payout, 'payout.failed', context);
  return payout;
}

/** A payout not paid yet is canceled: `payout.canceled`; the money is back in the balance. */
export function cancelPayout(state: DoubleState, payout: PayoutRecord, context: EmitContext = {}): PayoutRecord {
  if (payout.status !== 'pending' && payout.status !== 'in_transit')
    throw new Error(`payout ${payout.id} is ${payout.status}: only a pending or in-transit payout can be canceled`);
  reverse(state, payout, 'payout_cancel');
  payout.status = 'canceled';
  emitPayout(state, payout, 'payout.canceled', context);
  return payout;
}

function reverse(state: DoubleState, payout: PayoutRecord, type: 'payout_failure' | 'payout_cancel'): void {
  const txn = record(state, {
    account: payout.account,
    type,
    reportingCategory: 'payout_reversal',
    amount: payout.amount,
    currency: payout.currency,
    description: type === 'payout_failure' ? 'STRIPE PAYOUT FAILURE' : 'STRIPE PAYOUT CANCEL',
    source: payout.id,
  });
  payout.failureBalanceTransaction = txn.id;
}

function emitPayout(
  state: DoubleState,
  payout: PayoutRecord,
  type: string,
  context: EmitContext,
  previous?: Record<string, unknown>,
): void {
  emit(state, payout.account, type, { json: { ...payoutJson(state, payout) } }, previous, context);
}

function arrivalDateOf(arrival: Date | number | undefined, now: number): number {
  if (arrival !== undefined) return Math.floor(toMs(arrival) / 1000);
  return now - (now % DAY_SECONDS) + DAY_SECONDS;
}
