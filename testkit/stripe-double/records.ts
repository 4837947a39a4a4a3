export type { ChargeRecord, ChargeStatus } from './charge-store.js';

export type PaymentIntentStatus =
  | 'requires_payment_method'
  | 'requires_confirmation'
  | 'requires_action'
  | 'requires_capture'
  | 'processing'
  | 'succeeded'
  | 'canceled';

export interface PaymentIntentRecord {
  id: string;
  account: string | null;
  created: number;
  amount: number;
  currency: string;
  status: PaymentIntentStatus;
  paymentMethod: string | null;
  customer: string | null;
  description: string | null;
  metadata: Record<string, string>;
  captureMethod: 'automatic' | 'automatic_async' | 'manual';
  automaticPaymentMethods: { enabled: boolean; allow_redirects?: string } | null;
  latestCharge: string | null;
  lastPaymentError: Record<string, unknown> | null;
  clientSecret: string;
}

export interface RefundRecord {
  id: string;
  account: string | null;
  created: number;
  amount: number;
  currency: string;
  charge: string;
  paymentIntent: string | null;
  reason: string | null;
  metadata: Record<string, string>;
  status: RefundStatus;
  /** Why a failed refund failed (Stripe's `failure_reason`). */
  failureReason: RefundFailureReason | null;
  balanceTransaction: string | null;
  /** The balance transaction that put a failed or canceled refund's money back. */
  failureBalanceTransaction: string | null;
}

export type RefundStatus = 'pending' | 'succeeded' | 'failed' | 'canceled';

/** Stripe's documented values of a refund's `failure_reason`. */
export type RefundFailureReason =
  | 'lost_or_stolen_card'
  | 'expired_or_canceled_card'
  | 'charge_for_pending_refund_disputed'
  | 'insufficient_funds'
  | 'declined'
  | 'merchant_request'
  | 'unknown';
