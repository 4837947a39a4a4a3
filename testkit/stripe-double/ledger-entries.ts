/**
 * An account's balance transactions in list order (newest first, then id descending),
 * charges' included, without computing a charge's figures until one is rendered or paid
 * out: filtering and paging a seeded account stays cheap per charge.
 */
import type { BalanceTransactionRecord, BalanceTransactionType } from './balance-store.js';
import type { ChargeRecord } from './charge-store.js';
import { availableOn, chargeTransaction, hasBalanceTransaction, settlementOf, txnIdOfCharge } from './ledger.js';
import type { DoubleState } from './state.js';

export interface LedgerEntry {
  id: string;
  created: number;
  availableOn: number;
  type: BalanceTransactionType;
  source: string | null;
  currency: string;
  /** Set for a stored transaction; a charge's is computed by `entryRecord`. */
  stored?: BalanceTransactionRecord;
  charge?: ChargeRecord;
}

export function ledgerOf(state: DoubleState, account: string | null): LedgerEntry[] {
  const settings = state.accounts.settingsOf(account);
  const entries: LedgerEntry[] = [];
  const late = state.charges
    .unlisted()
    .filter((l) => l.record.account === account)
    .map((l) => l.record);
  for (const charge of [...state.charges.all(account), ...late]) {
    if (!hasBalanceTransaction(charge)) continue;
    const settled = charge.settlement;
    entries.push({
      id: txnIdOfCharge(charge.id),
      created: settled?.created ?? charge.created,
      availableOn: settled?.availableOn ?? availableOn(charge.created, settings.payoutDelayDays),
      type: 'charge',
      source: charge.id,
      currency: settled?.currency ?? settings.defaultCurrency,
      charge,
    });
  }
  for (const stored of state.balance.of(account)) {
    const { id, created, type, source, currency } = stored;
    entries.push({ id, created, availableOn: stored.availableOn, type, source, currency, stored });
  }
  return entries.sort(listOrder);
}

/** Newest first; one second's transactions by id, descending (as charges list). */
export function listOrder(a: { created: number; id: string }, b: { created: number; id: string }): number {
  if (a.created !== b.created) return b.created - a.created;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

export function entryRecord(state: DoubleState, entry: LedgerEntry): BalanceTransactionRecord {
  if (entry.stored) return entry.stored;
  const charge = entry.charge as ChargeRecord;
  return chargeTransaction(charge, settlementOf(state, charge) as NonNullable<ChargeRecord['settlement']>);
}
