/**
 * A Stripe charge as the sweeper sees it: the fields reconciliation needs, flattened,
 * with the claim attribution read from metadata (names configurable).
 */
export interface NormalizedCharge {
  id: string;
  /** Connect account id (`acct_…`), or null for the platform account. */
  account: string | null;
  /** Unix seconds, as Stripe reports `created`. */
  created: number;
  amount: number;
  amountCaptured: number;
  amountRefunded: number;
  /** Lower-case ISO 4217. */
  currency: string;
  status: 'succeeded' | 'failed' | 'pending';
  captured: boolean;
  refunded: boolean;
  disputed: boolean;
  paymentIntent: string | null;
  /** What tells two charges of one key apart (--refund-duplicates refunds only identical extras). */
  customer: string | null;
  paymentMethod: string | null;
  /** From metadata[tenant key name]; null when absent. */
  tenantId: string | null;
  /** From metadata[idempotency key name]; null when absent. */
  idempotencyKey: string | null;
  livemode: boolean;
}

/** A charge Stripe returned that lacks a field reconciliation needs: reported, never dropped silently. */
export interface MalformedCharge {
  id: string | null;
  account: string | null;
  problem: string;
  /** Unix seconds, when `created` itself could be read: which slice the charge belongs to. */
  created?: number;
}
