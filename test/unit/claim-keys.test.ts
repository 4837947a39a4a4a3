import { describe, expect, it } from 'vitest';
import { canonicalJson, downstreamKey, requestFingerprint } from '../../src/claims/keys.js';
import { ClaimCounters } from '../../src/claims/counters.js';
import { classifyStripeFailure } from '../../src/providers/stripe/charge-outcome.js';
import Stripe from 'stripe';

describe('downstreamKey', () => {
  it('is deterministic, at most 255 characters, and scoped by tenant', () => {
    const key = 'k'.repeat(255);
    expect(downstreamKey('acme', key)).toBe(downstreamKey('acme', key));
    expect(downstreamKey('acme', key).length).toBeLessThanOrEqual(255);
    expect(downstreamKey('acme', 'order-1')).not.toBe(downstreamKey('globex', 'order-1'));
  });

  it('cannot be forged by moving characters between tenant and key', () => {
    expect(downstreamKey('ab', 'c')).not.toBe(downstreamKey('a', 'bc'));
  });
});

describe('requestFingerprint', () => {
  it('ignores property order and undefined fields but not values', () => {
    const a = requestFingerprint({ amount: 100, currency: 'usd', paymentMethod: 'pm_x', metadata: { a: '1', b: '2' } });
    const b = requestFingerprint({
      metadata: { b: '2', a: '1' },
      paymentMethod: 'pm_x',
      currency: 'usd',
      amount: 100,
      customer: undefined,
    });
    expect(a).toBe(b);
    expect(requestFingerprint({ amount: 101, currency: 'usd', paymentMethod: 'pm_x' })).not.toBe(
      requestFingerprint({ amount: 100, currency: 'usd', paymentMethod: 'pm_x' }),
    );
  });

  it('canonical JSON sorts keys at every level', () => {
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[{"c":2,"d":1}]}');
  });
});

describe('classifyStripeFailure', () => {
  const raw = (type: string, statusCode: number) => ({ type, statusCode, message: 'x' }) as never;
  it.each([
    [new Stripe.errors.StripeCardError(raw('card_error', 402)), 'deterministic'],
    [new Stripe.errors.StripeInvalidRequestError(raw('invalid_request_error', 400)), 'deterministic'],
    [new Stripe.errors.StripeIdempotencyError(raw('idempotency_error', 400)), 'transient'],
    [new Stripe.errors.StripeInvalidRequestError(raw('invalid_request_error', 409)), 'transient'],
    [new Stripe.errors.StripeRateLimitError(raw('rate_limit_error', 429)), 'transient'],
    [new Stripe.errors.StripeAPIError(raw('api_error', 500)), 'transient'],
    [new Stripe.errors.StripeConnectionError(raw('api_connection_error', 0)), 'transient'],
    [new Stripe.errors.StripeAuthenticationError(raw('authentication_error', 401)), 'transient'],
    [new Error('bug'), 'transient'],
  ])('%s is %s', (error, kind) => {
    expect(classifyStripeFailure(error)).toBe(kind);
  });
});

describe('ClaimCounters', () => {
  it('counts suppressed duplicates by outcome', () => {
    const counters = new ClaimCounters();
    counters.record('charged');
    counters.record('replayed');
    counters.record('in_progress');
    counters.record('in_progress');
    counters.record('fingerprint_mismatch');
    expect(counters.suppressedDuplicates()).toBe(4);
    expect(counters.snapshot()).toMatchObject({
      charged: 1,
      in_progress: 2,
      replayed: 1,
      fingerprint_mismatch: 1,
      steals: 0,
    });
  });
});
