import Stripe from 'stripe';
import type { StoredError } from '../../claims/create-charge.js';

/**
 * What a failed Stripe call means for the claim:
 * - `transient`: nothing final happened (or we cannot know); release the claim so the
 *   caller retries. Safe because the retry sends the same downstream key, so Stripe
 *   answers with the first charge if there was one.
 * - `deterministic`: Stripe decided (a decline, an invalid request); store the answer
 *   and replay it to every retry without calling Stripe again.
 */
export type FailureKind = 'transient' | 'deterministic';

export function classifyStripeFailure(error: unknown): FailureKind {
  if (error instanceof Stripe.errors.StripeCardError) return 'deterministic';
  // Our downstream key was used before with other parameters (e.g. the metadata key
  // names changed): a charge may exist. Not an answer to replay; release, and the
  // sweep completes the claim from the charge if there is one.
  if (error instanceof Stripe.errors.StripeIdempotencyError) return 'transient';
  if (error instanceof Stripe.errors.StripeInvalidRequestError) {
    // 409 lock_timeout / idempotency_key_in_use: a concurrent request with our key.
    return (error.statusCode ?? 400) === 409 || (error.statusCode ?? 400) >= 500 ? 'transient' : 'deterministic';
  }
  // Connection errors and timeouts, 429, 5xx, authentication and permission errors
  // (nothing was charged, an operator must fix the key), and anything unknown.
  return 'transient';
}

export function storedError(error: InstanceType<typeof Stripe.errors.StripeError>): StoredError {
  const stored: StoredError = { error: { type: error.rawType ?? 'api_error', message: error.message } };
  if (error.code) stored.error.code = error.code;
  if (error.decline_code) stored.error.decline_code = error.decline_code;
  if (error.charge) stored.error.charge = error.charge;
  if (error.payment_intent?.id) stored.error.payment_intent = error.payment_intent.id;
  return stored;
}

/** Seconds a caller should wait before retrying after a transient failure. */
export function retryAfterSeconds(error: unknown): number {
  const header = (error as { headers?: Record<string, string> | null } | null | undefined)?.headers?.['retry-after'];
  const seconds = header === undefined ? NaN : Number(header);
  return Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds) : 1;
}
