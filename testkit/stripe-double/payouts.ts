/**
 * Payouts: money leaving an account's Stripe balance for its bank. An automatic payout
 * knows the balance transactions it paid out (`GET /v1/balance_transactions?payout=`);
 * a manual one cannot be itemised, as at Stripe.
 */
export type PayoutStatus = 'pending' | 'in_transit' | 'paid' | 'failed' | 'canceled';
export type ReconciliationStatus = 'not_applicable' | 'in_progress' | 'completed';

export interface PayoutRecord {
  id: string;
  account: string | null;
  created: number;
  /** Positive: what reaches the bank, in `currency`'s smallest unit. */
  amount: number;
  currency: string;
  arrivalDate: number;
  automatic: boolean;
  status: PayoutStatus;
  reconciliationStatus: ReconciliationStatus;
  balanceTransaction: string;
  failureBalanceTransaction: string | null;
  failureCode: string | null;
  failureMessage: string | null;
  method: 'standard' | 'instant';
  destination: string;
  description: string | null;
  metadata: Record<string, string>;
  /** Balance transactions paid out in it, in list order, its own `payout` transaction first. */
  members: string[];
}

export interface PayoutJson {
  id: string;
  object: 'payout';
  amount: number;
  arrival_date: number;
  automatic: boolean;
  balance_transaction: string | Record<string, unknown> | null;
  created: number;
  currency: string;
  failure_balance_transaction: string | Record<string, unknown> | null;
  reconciliation_status: ReconciliationStatus;
  status: PayoutStatus;
  [key: string]: unknown;
}

export class PayoutStore {
  private readonly byId = new Map<string, PayoutRecord>();

  add(payout: PayoutRecord): void {
    this.byId.set(payout.id, payout);
  }

  get(id: string): PayoutRecord | undefined {
    return this.byId.get(id);
  }

  /** An account's payouts, newest first (made in one second: the later first); all accounts' when undefined. */
  of(account?: string | null): PayoutRecord[] {
    const all = [...this.byId.values()];
    const mine = account === undefined ? all : all.filter((p) => p.account === account);
    return mine
      .map((p, i) => ({ p, i }))
      .sort((a, b) => b.p.created - a.p.created || b.i - a.i)
      .map(({ p }) => p);
  }

  clear(): void {
    this.byId.clear();
  }
}

/** `expandTxn` renders a balance transaction id when `balance_transaction` (or the failure one) is expanded. */
export function renderPayout(
  payout: PayoutRecord,
  expandTxn?: (id: string) => Record<string, unknown> | undefined,
): PayoutJson {
  const txn = (id: string | null) => (id !== null && expandTxn ? (expandTxn(id) ?? id) : id);
  return {
    id: payout.id,
    object: 'payout',
    amount: payout.amount,
    application_fee: null,
    application_fee_amount: null,
    arrival_date: payout.arrivalDate,
    automatic: payout.automatic,
    balance_transaction: txn(payout.balanceTransaction),
    created: payout.created,
    currency: payout.currency,
    description: payout.description,
    destination: payout.destination,
    failure_balance_transaction: txn(payout.failureBalanceTransaction),
    failure_code: payout.failureCode,
    failure_message: payout.failureMessage,
    livemode: false,
    metadata: { ...payout.metadata },
    method: payout.method,
    original_payout: null,
    payout_method: null,
    reconciliation_status: payout.reconciliationStatus,
    reversed_by: null,
    source_type: 'card',
    statement_descriptor: null,
    status: payout.status,
    trace_id: null,
    type: 'bank_account',
  };
}
