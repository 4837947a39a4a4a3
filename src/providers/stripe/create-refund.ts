import Stripe from 'stripe';
import type { CreateRefund, CreateRefundInput, CreateRefundResult, CreatedRefund } from '../../claims/create-refund.js';
import { classifyStripeFailure, retryAfterSeconds, storedError } from './charge-outcome.js';

/**
 * The claim library's refund through Stripe: `POST /v1/refunds` with the claim's downstream
 * key as Stripe's Idempotency-Key, read into the library's terms with the same failure rules
 * as a charge (charge-outcome.ts): a deterministic refusal (the charge already refunded, an
 * amount above what is left) is stored and replayed, anything else releases the claim.
 */
export function stripeCreateRefund(stripe: Stripe): CreateRefund {
  return async (input) => {
    try {
      return { kind: 'created', refund: refundOf(await createRefund(stripe, input)) };
    } catch (error) {
      return failureOf(error);
    }
  };
}

function createRefund(
  stripe: Stripe,
  { request, idempotencyKey, metadata }: CreateRefundInput,
): Promise<Stripe.Refund> {
  const params: Stripe.RefundCreateParams = { charge: request.chargeId, metadata };
  if (request.amount !== undefined) params.amount = request.amount;
  if (request.reason !== undefined) params.reason = request.reason;
  const options: Stripe.RequestOptions = { idempotencyKey };
  if (request.account) options.stripeAccount = request.account;
  return stripe.refunds.create(params, options);
}

const STATUSES: ReadonlySet<string> = new Set(['pending', 'requires_action', 'succeeded', 'failed', 'canceled']);

function refundOf(r: Stripe.Refund): CreatedRefund {
  const charge = typeof r.charge === 'string' ? r.charge : (r.charge?.id ?? '');
  const status = r.status ?? 'pending';
  return {
    id: r.id,
    chargeId: charge,
    amount: r.amount,
    currency: r.currency.toLowerCase(),
    // A status this code does not know is not a refund known to have happened.
    status: (STATUSES.has(status) ? status : 'pending') as CreatedRefund['status'],
    created: r.created,
  };
}

function failureOf(error: unknown): CreateRefundResult {
  if (error instanceof Stripe.errors.StripeError && classifyStripeFailure(error) === 'deterministic') {
    return {
      kind: 'refused',
      outcome: error instanceof Stripe.errors.StripeCardError ? 'declined' : 'rejected',
      status: error.statusCode ?? 400,
      body: storedError(error),
      ...(error.code ? { code: error.code } : {}),
    };
  }
  return { kind: 'transient', error, retryAfterSeconds: retryAfterSeconds(error) };
}
