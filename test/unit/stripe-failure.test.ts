import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { StripeListCounters } from '../../src/providers/stripe/counters.js';
import { StripeUnreachableError } from '../../src/providers/stripe/errors.js';
import { classifyListFailure } from '../../src/providers/stripe/failure.js';
import { listChargeWindow } from '../../src/providers/stripe/list-charges.js';
import { withRetries, type PageQuery } from '../../src/providers/stripe/page-source.js';
import { RateBudget } from '../../src/providers/stripe/rate-budget.js';

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

describe('a Stripe API nobody answers at (a wrong or dead STRIPE_API_BASE)', () => {
  /** What the SDK throws when the connection is refused or the host does not resolve. */
  const connectionError = (detail: Record<string, unknown>) =>
    new Stripe.errors.StripeConnectionError({
      message: 'An error occurred with our connection to Stripe.',
      detail: Object.assign(new Error(`connect ${String(detail.code)}`), detail),
    } as never);
  const refused = () => connectionError({ code: 'ECONNREFUSED', address: '127.0.0.1', port: 12111 });

  it('is no transient failure: nothing to retry, and it says where', () => {
    expect(classifyListFailure(refused())).toEqual({
      action: 'unreachable',
      code: 'ECONNREFUSED',
      where: '127.0.0.1:12111',
    });
    expect(classifyListFailure(connectionError({ code: 'ENOTFOUND', hostname: 'stripe.internal' }))).toEqual({
      action: 'unreachable',
      code: 'ENOTFOUND',
      where: 'stripe.internal',
    });
    expect(
      classifyListFailure(
        new Stripe.errors.StripeConnectionError({
          message: 'An error occurred with our connection to Stripe.',
          detail: Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:443'), { code: 'ECONNREFUSED' }),
        } as never),
      ),
    ).toMatchObject({ action: 'unreachable', where: '10.0.0.7:443' });
    // A connection reset or a timeout still is: retried.
    expect(classifyListFailure(connectionError({ code: 'ECONNRESET' }))).toMatchObject({ action: 'retry' });
  });

  it('fails the first attempt with one line naming the host and "connection refused", without a wait', async () => {
    let calls = 0;
    const waits: number[] = [];
    const counters = new StripeListCounters();
    const fetch = withRetries<PageQuery, never>(
      async () => {
        calls += 1;
        throw refused();
      },
      {
        budget: new RateBudget({ ratePerSecond: 1_000, burst: 1_000 }),
        counters,
        sleep: async (ms) => void waits.push(ms),
      },
    );
    const error = await fetch({ account: null, gte: 0, lt: 1, limit: 1 }, new AbortController().signal).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StripeUnreachableError);
    expect((error as StripeUnreachableError).exitCode).toBe(1);
    expect((error as Error).message).toBe(
      'cannot connect to Stripe at 127.0.0.1:12111 (connection refused): check STRIPE_API_BASE (unset: api.stripe.com) and that a server is running there',
    );
    expect([calls, waits, counters.retries, counters.connectionErrors]).toEqual([1, [], 0, 1]);
  });

  it('fails a whole listing as it is, not as one incomplete window', async () => {
    const listing = listChargeWindow(
      async () => {
        throw new StripeUnreachableError('127.0.0.1:12111', 'ECONNREFUSED');
      },
      null,
      { from: new Date('2026-11-01T00:00:00Z'), to: new Date('2026-11-01T01:00:00Z') },
    );
    await expect(listing.next()).rejects.toBeInstanceOf(StripeUnreachableError);
  });
});
