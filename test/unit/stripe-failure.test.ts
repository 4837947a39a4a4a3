import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { classifyListFailure } from '../../src/providers/stripe/failure.js';

const stripeError = (statusCode: number | undefined, headers: Record<string, string> = {}, type = 'api_error') =>
  Stripe.errors.StripeError.generate({ type, message: `status ${statusCode}`, statusCode, headers } as never);

describe('classifyListFailure', () => {
  it('retries 429 and reads Retry-After', () => {
    expect(classifyListFailure(stripeError(429, { 'retry-after': '2' }))).toEqual({
      action: 'retry',
      reason: 'rate_limited',
      status: 429,
      retryAfterMs: 2_000,
    });
  });

  it('retries 5xx and 409', () => {
    expect(classifyListFailure(stripeError(500))).toMatchObject({ action: 'retry', reason: 'server_error' });
    expect(classifyListFailure(stripeError(503))).toMatchObject({ action: 'retry', reason: 'server_error' });
    expect(classifyListFailure(stripeError(409, {}, 'invalid_request_error'))).toMatchObject({
      action: 'retry',
      reason: 'conflict',
    });
  });

  it('retries a request that got no answer', () => {
    expect(
      classifyListFailure(new Stripe.errors.StripeConnectionError({ message: 'socket hang up' } as never)),
    ).toMatchObject({
      action: 'retry',
      reason: 'connection',
    });
  });

  it('follows Stripe-Should-Retry either way', () => {
    expect(classifyListFailure(stripeError(500, { 'stripe-should-retry': 'false' }))).toMatchObject({
      action: 'give_up',
    });
    expect(
      classifyListFailure(stripeError(400, { 'stripe-should-retry': 'true' }, 'invalid_request_error')),
    ).toMatchObject({
      action: 'retry',
      reason: 'stripe_should_retry',
    });
  });

  it('gives up on other client errors and on bugs', () => {
    expect(classifyListFailure(stripeError(400, {}, 'invalid_request_error'))).toMatchObject({
      action: 'give_up',
      status: 400,
    });
    expect(classifyListFailure(stripeError(404, {}, 'invalid_request_error'))).toMatchObject({
      action: 'give_up',
      status: 404,
    });
    expect(classifyListFailure(new TypeError('x is not a function'))).toMatchObject({ action: 'give_up' });
  });

  it('turns 401 and 403 into configuration problems', () => {
    expect(classifyListFailure(stripeError(401, {}, 'invalid_request_error'))).toMatchObject({ action: 'invalid_key' });
    expect(classifyListFailure(stripeError(403, {}, 'invalid_request_error'))).toMatchObject({
      action: 'missing_permission',
    });
  });
});
