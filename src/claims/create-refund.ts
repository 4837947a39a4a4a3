import type { StoredError } from './create-charge.js';
import type { RefundRequest } from './validate.js';

/**
 * How the claim library makes a refund (`refundOnce`): the one call it sends to the
 * payment provider, behind a function the caller can pass in (`createRefund`). Stripe's
 * is src/providers/stripe/create-refund.ts (`POST /v1/refunds`). It never throws for the
 * provider's answer: a refusal or a failure is a result.
 */
export type CreateRefund = (input: CreateRefundInput) => Promise<CreateRefundResult>;

export interface CreateRefundInput {
  request: RefundRequest;
  /** The provider's idempotency key: the same for every attempt at one claim. */
  idempotencyKey: string;
  /** The request's metadata with the claim attribution added (tenant, key). */
  metadata: Record<string, string>;
}

/** The refund a successful call made, as the payment_refunds row records it. */
export interface CreatedRefund {
  id: string;
  chargeId: string;
  amount: number;
  currency: string;
  status: 'pending' | 'requires_action' | 'succeeded' | 'failed' | 'canceled';
  /** Unix seconds. */
  created: number;
}

export type CreateRefundResult =
  | { kind: 'created'; refund: CreatedRefund }
  /** The provider decided (the charge was refunded already, an amount too large): stored and replayed. */
  | { kind: 'refused'; outcome: 'declined' | 'rejected'; status: number; body: StoredError; code?: string }
  /** Nothing final happened, or it cannot be known: the claim is released and the caller retries. */
  | { kind: 'transient'; error: unknown; retryAfterSeconds: number };
