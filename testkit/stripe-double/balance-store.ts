/**
 * Balance transactions: every movement of an account's balance, in its settlement
 * currency. Those of refunds, disputes, payouts and adjustments are stored here; a
 * charge's is derived from the charge (ledger.ts), so a million seeded charges do not
 * hold a million more records. The store also knows which payout paid each one out.
 */
import type { FeeDetail } from './fees.js';
import { randomId, seededRandom } from './random.js';

export type BalanceTransactionType =
  'charge' | 'refund' | 'refund_failure' | 'adjustment' | 'payout' | 'payout_failure' | 'payout_cancel' | 'stripe_fee';

export type ReportingCategory =
  | 'charge'
  | 'refund'
  | 'refund_failure'
  | 'dispute'
  | 'dispute_reversal'
  | 'payout'
  | 'payout_reversal'
  | 'fee'
  | 'other_adjustment';

export interface BalanceTransactionRecord {
  id: string;
  account: string | null;
  type: BalanceTransactionType;
  reportingCategory: ReportingCategory;
  /** Settlement currency, smallest unit; negative for money out. */
  amount: number;
  fee: number;
  feeDetails: readonly FeeDetail[];
  currency: string;
  exchangeRate: number | null;
  /** Unix seconds. */
  created: number;
  availableOn: number;
  description: string | null;
  /** The id of the object that moved the money (ch_, re_, dp_, po_), or null. */
  source: string | null;
}

export class BalanceStore {
  private readonly byId = new Map<string, BalanceTransactionRecord>();
  private readonly byAccount = new Map<string | null, BalanceTransactionRecord[]>();
  /** Balance transaction id → the payout that paid it out. */
  private readonly paidOutIn = new Map<string, string>();
  private random: () => number;

  constructor(private readonly seed: number) {
    this.random = seededRandom(seed);
  }

  newId(prefix: string): string {
    return randomId(prefix, this.random);
  }

  add(record: BalanceTransactionRecord): BalanceTransactionRecord {
    this.byId.set(record.id, record);
    let list = this.byAccount.get(record.account);
    if (!list) this.byAccount.set(record.account, (list = []));
    list.push(record);
    return record;
  }

  get(id: string): BalanceTransactionRecord | undefined {
    return this.byId.get(id);
  }

  /** Stored (not charge) transactions of an account, in the order they were made. */
  of(account: string | null): readonly BalanceTransactionRecord[] {
    return this.byAccount.get(account) ?? [];
  }

  payoutOf(id: string): string | undefined {
    return this.paidOutIn.get(id);
  }

  assign(ids: readonly string[], payoutId: string): void {
    for (const id of ids) this.paidOutIn.set(id, payoutId);
  }

  clear(): void {
    this.byId.clear();
    this.byAccount.clear();
    this.paidOutIn.clear();
    this.random = seededRandom(this.seed);
  }
}
