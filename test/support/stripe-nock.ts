import nock from 'nock';
import { afterEach, beforeEach, expect } from 'vitest';

export const STRIPE_ORIGIN = 'https://api.stripe.com';

/**
 * For each test of the file: no network but nock's interceptors, and afterwards every
 * interceptor the test set up must have been used.
 */
export function everyTestThroughNock(): void {
  beforeEach(() => {
    nock.disableNetConnect();
  });
  afterEach(() => {
    const pending = nock.pendingMocks();
    nock.cleanAll();
    nock.enableNetConnect();
    expect(pending).toEqual([]);
  });
}

export interface RecordedCall {
  idempotencyKey: string | undefined;
  stripeAccount: string | undefined;
  body: Record<string, string>;
}

/** A PaymentIntent as Stripe returns it after a successful confirm, charge expanded. */
export function succeededIntent(id: string, amount: number, currency: string, metadata: Record<string, string> = {}) {
  const chargeId = `ch_${id.slice(3)}`;
  return {
    id,
    object: 'payment_intent',
    amount,
    amount_received: amount,
    currency,
    status: 'succeeded',
    metadata,
    latest_charge: {
      id: chargeId,
      object: 'charge',
      amount,
      amount_captured: amount,
      amount_refunded: 0,
      currency,
      status: 'succeeded',
      captured: true,
      refunded: false,
      disputed: false,
      payment_intent: id,
      created: 1_773_144_000,
      metadata,
    },
  };
}

export function cardDeclined(chargeId: string, intentId: string) {
  return {
    error: {
      type: 'card_error',
      code: 'card_declined',
      decline_code: 'generic_decline',
      message: 'Your card was declined.',
      charge: chargeId,
      payment_intent: { id: intentId, object: 'payment_intent', status: 'requires_payment_method' },
    },
  };
}

/** Decodes Stripe's form encoding (`metadata[tenant_id]=…`) into flat keys. */
export function formBody(body: unknown): Record<string, string> {
  if (typeof body === 'object' && body !== null) return body as Record<string, string>;
  return Object.fromEntries(new URLSearchParams(String(body)));
}

type Reply = [number, unknown] | [number, unknown, Record<string, string>];

/**
 * Intercepts POST /v1/payment_intents `times` times, recording each call. `answer`
 * may be async, so a test can hold Stripe's answer until it has arranged a race.
 */
export function interceptPaymentIntents(
  answer: (call: RecordedCall, index: number) => Reply | Promise<Reply>,
  times = 1,
): { calls: RecordedCall[] } {
  const calls: RecordedCall[] = [];
  nock(STRIPE_ORIGIN)
    .post('/v1/payment_intents')
    .times(times)
    .reply(function (_uri, body, callback) {
      const headers = this.req.headers;
      const call: RecordedCall = {
        idempotencyKey: headerValue(headers['idempotency-key']),
        stripeAccount: headerValue(headers['stripe-account']),
        body: formBody(body),
      };
      calls.push(call);
      Promise.resolve(answer(call, calls.length - 1)).then(
        (reply) => callback(null, reply as [number, string]),
        (error: Error) => callback(error, [500, '']),
      );
    });
  return { calls };
}

function headerValue(value: unknown): string | undefined {
  if (Array.isArray(value)) return String(value[0]);
  return value === undefined ? undefined : String(value);
}
