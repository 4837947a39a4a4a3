import type { BalanceTransactionRecord } from './balance-store.js';
import type { FeeDetail } from './fees.js';

/** A balance transaction as the API renders it. */
export interface BalanceTransactionJson {
  id: string;
  object: 'balance_transaction';
  amount: number;
  available_on: number;
  balance_type: 'payments';
  created: number;
  currency: string;
  description: string | null;
  exchange_rate: number | null;
  fee: number;
  fee_details: FeeDetail[];
  net: number;
  reporting_category: string;
  source: string | Record<string, unknown> | null;
  status: 'available' | 'pending';
  type: string;
}

/** `status` follows the double's clock: `available` from `available_on` on. */
export function renderBalanceTransaction(
  txn: BalanceTransactionRecord,
  nowSeconds: number,
  source?: Record<string, unknown>,
): BalanceTransactionJson {
  return {
    id: txn.id,
    object: 'balance_transaction',
    amount: txn.amount,
    available_on: txn.availableOn,
    balance_type: 'payments',
    created: txn.created,
    currency: txn.currency,
    description: txn.description,
    exchange_rate: txn.exchangeRate,
    fee: txn.fee,
    fee_details: txn.feeDetails.map((d) => ({ ...d })),
    net: txn.amount - txn.fee,
    reporting_category: txn.reportingCategory,
    source: source ?? txn.source,
    status: txn.availableOn <= nowSeconds ? 'available' : 'pending',
    type: txn.type,
  };
}

/** `GET /v1/balance`: what is available and pending, per currency. */
export interface BalanceJson {
  object: 'balance';
  available: Array<{ amount: number; currency: string; source_types: { card: number } }>;
  pending: Array<{ amount: number; currency: string; source_types: { card: number } }>;
  livemode: boolean;
}

export function renderBalance(
  entries: Iterable<{ net: number; currency: string; available: boolean }>,
  settlementCurrency: string,
): BalanceJson {
  const available = new Map<string, number>([[settlementCurrency, 0]]);
  const pending = new Map<string, number>([[settlementCurrency, 0]]);
  for (const entry of entries) {
    const sums = entry.available ? available : pending;
    sums.set(entry.currency, (sums.get(entry.currency) ?? 0) + entry.net);
  }
  const lines = (sums: Map<string, number>) =>
    [...sums].map(([currency, amount]) => ({ amount, currency, source_types: { card: amount } }));
  return { object: 'balance', available: lines(available), pending: lines(pending), livemode: false };
}
