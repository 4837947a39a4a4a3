import type { MalformedCharge, NormalizedCharge } from '../providers/stripe/types.js';

/**
 * Stripe's own word, read directly (never from the mirror) before a step that can
 * move money or page someone: releasing a claim, raising `lost_effect` or
 * `effect_without_charge`, refunding a duplicate. A handful of calls per run, under
 * the same rate budget as the listing. The CLI wires the real SDK
 * (src/providers/stripe/evidence.ts); tests pass an in-memory one.
 */
export interface StripeEvidence {
  /**
   * Charges looked up by id (`GET /v1/charges/:id`); ids Stripe does not have are absent.
   * A charge that answers but cannot be read goes to `onMalformed` when given (the caller
   * records it as a finding), and otherwise fails the call (nothing is decided on it).
   */
  chargesById(
    account: string,
    ids: readonly string[],
    signal?: AbortSignal,
    onMalformed?: (bad: MalformedCharge) => void,
  ): Promise<NormalizedCharge[]>;
  /** Every charge of the account whose metadata names the tenant and key (Stripe's search). */
  chargesNaming(account: string, tenantId: string, key: string, signal?: AbortSignal): Promise<NormalizedCharge[]>;
  /** The refunds Stripe has for one charge (`GET /v1/refunds?charge=`). */
  refundsOf(account: string, chargeId: string, signal?: AbortSignal): Promise<RefundFact[]>;
  /** `POST /v1/refunds`, with an idempotency key. */
  refund(account: string, request: RefundRequest, signal?: AbortSignal): Promise<RefundFact>;
}

export interface RefundRequest {
  chargeId: string;
  amount: number;
  idempotencyKey: string;
  metadata: Record<string, string>;
}

export interface RefundFact {
  id: string;
  chargeId: string;
  amount: number;
  /** `succeeded`, `pending`, `requires_action`, `failed` or `canceled`. */
  status: string;
  metadata: Record<string, string>;
}

/** The metadata name under which a refund carries the sweeper's idempotency key: how a rerun finds it. */
export const REFUND_KEY_METADATA = 'sweeper_refund_key';

/** A Stripe refund that did not fail: it counts as made. */
export function isRefundMade(refund: RefundFact): boolean {
  return refund.status !== 'failed' && refund.status !== 'canceled';
}
