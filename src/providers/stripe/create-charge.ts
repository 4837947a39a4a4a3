import Stripe from 'stripe';
import type { CreateCharge, CreateChargeInput, CreateChargeResult } from '../../claims/create-charge.js';
import { classifyStripeFailure, retryAfterSeconds, storedError } from './charge-outcome.js';

/**
 * The claim library's charge through Stripe: one PaymentIntent, created and confirmed,
 * with the claim's downstream key as Stripe's Idempotency-Key, the charge expanded.
 * Stripe's answer, or its error, read into the library's terms (charge-outcome.ts).
 */
export function stripeCreateCharge(stripe: Stripe): CreateCharge {
  return async (input) => {
    let intent: Stripe.PaymentIntent;
    try {
      intent = await createPaymentIntent(stripe, input);
    } catch (error) {
      return failureOf(error);
    }
    const charge = typeof intent.latest_charge === 'object' ? intent.latest_charge : null;
    return {
      kind: 'created',
      paymentIntent: { id: intent.id, status: intent.status, amount: intent.amount, currency: intent.currency },
      chargeId: charge?.id ?? (typeof intent.latest_charge === 'string' ? intent.latest_charge : null),
      charge: charge
        ? {
            id: charge.id,
            amount: charge.amount,
            currency: charge.currency,
            status: charge.status,
            amountRefunded: charge.amount_refunded,
            disputed: charge.disputed,
            created: charge.created,
          }
        : null,
    };
  };
}

function createPaymentIntent(
  stripe: Stripe,
  { request, idempotencyKey, metadata }: CreateChargeInput,
): Promise<Stripe.PaymentIntent> {
  const params: Stripe.PaymentIntentCreateParams = {
    amount: request.amount,
    currency: request.currency,
    payment_method: request.paymentMethod,
    // Server-side confirmation: no redirect-based methods, so no return_url is needed.
    automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
    confirm: true,
    // This metadata is how the sweeper attributes a charge to its claim.
    metadata,
    expand: ['latest_charge'],
  };
  if (request.customer) params.customer = request.customer;
  if (request.description) params.description = request.description;
  const options: Stripe.RequestOptions = { idempotencyKey };
  if (request.account) options.stripeAccount = request.account;
  return stripe.paymentIntents.create(params, options);
}

function failureOf(error: unknown): CreateChargeResult {
  if (error instanceof Stripe.errors.StripeError && classifyStripeFailure(error) === 'deterministic') {
    return {
      kind: 'refused',
      outcome: error instanceof Stripe.errors.StripeCardError ? 'declined' : 'rejected',
      status: error.statusCode ?? 402,
      body: storedError(error),
      ...(error.code ? { code: error.code } : {}),
      chargeId: error.charge ?? null,
      paymentIntentId: error.payment_intent?.id ?? null,
    };
  }
  return { kind: 'transient', error, retryAfterSeconds: retryAfterSeconds(error) };
}
