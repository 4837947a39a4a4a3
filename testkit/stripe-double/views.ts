/**
 * Objects rendered with what they point to: a dispute with its balance transactions, a
 * payout or a balance transaction with an expanded field, an account's balance. The
 * plain renderers are pure; these read the state.
 */
import { renderBalance, renderBalanceTransaction, type BalanceJson } from './balance-render.js';
import type { BalanceTransactionJson } from './balance-render.js';
import { renderDispute, type DisputeJson, type DisputeRecord } from './disputes.js';
import { resolveTransaction } from './ledger.js';
import { entryRecord, ledgerOf } from './ledger-entries.js';
import { renderPayout, type PayoutJson, type PayoutRecord } from './payouts.js';
import { renderCharge, renderRefund } from './render.js';
import type { DoubleState } from './state.js';

export function txnJson(
  state: DoubleState,
  id: string,
  options: { expandSource?: boolean } = {},
): BalanceTransactionJson | undefined {
  const txn = resolveTransaction(state, id);
  if (!txn) return undefined;
  const source = options.expandSource && txn.source !== null ? sourceJson(state, txn.source) : undefined;
  return renderBalanceTransaction(txn, state.clock.nowSeconds(), source);
}

export function disputeJson(state: DoubleState, dispute: DisputeRecord): DisputeJson {
  const txns = dispute.balanceTransactions.flatMap((id) => {
    const json = txnJson(state, id);
    return json ? [json as unknown as Record<string, unknown>] : [];
  });
  return renderDispute(dispute, txns);
}

/** `expand`: `balance_transaction` and/or `failure_balance_transaction`. */
export function payoutJson(state: DoubleState, payout: PayoutRecord, expand: readonly string[] = []): PayoutJson {
  const json = renderPayout(payout);
  for (const field of ['balance_transaction', 'failure_balance_transaction'] as const) {
    const id = json[field];
    if (expand.includes(field) && typeof id === 'string')
      json[field] = txnJson(state, id) as unknown as Record<string, unknown>;
  }
  return json;
}

/** The object a balance transaction's `source` names, as the API renders it (undefined: not one the double has). */
export function sourceJson(state: DoubleState, id: string): Record<string, unknown> | undefined {
  const charge = state.charges.get(id);
  if (charge) return renderCharge(charge);
  const refund = state.refunds.get(id);
  if (refund) return renderRefund(refund);
  const dispute = state.disputes.get(id);
  if (dispute) return disputeJson(state, dispute);
  const payout = state.payouts.get(id);
  return payout ? payoutJson(state, payout) : undefined;
}

/** `GET /v1/balance`: the nets of an account's balance transactions, available or still pending. */
export function balanceJson(state: DoubleState, account: string | null): BalanceJson {
  const now = state.clock.nowSeconds();
  const entries = ledgerOf(state, account).map((entry) => {
    const txn = entryRecord(state, entry);
    return { net: txn.amount - txn.fee, currency: txn.currency, available: txn.availableOn <= now };
  });
  return renderBalance(entries, state.accounts.settingsOf(account).defaultCurrency);
}
