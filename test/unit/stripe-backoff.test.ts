import { describe, expect, it } from 'vitest';
import {
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  type RetryPolicy,
} from '../../src/providers/stripe/backoff.js';

const policy: RetryPolicy = {
  maxAttempts: 8,
  baseDelayMs: 100,
  maxDelayMs: 1_000,
  maxRetryAfterMs: 5_000,
  maxDeadlineMisses: 2,
};
const low = () => 0;
const high = () => 0.999999;

describe('backoffDelayMs', () => {
  it('doubles per retry, with half of it jittered', () => {
    expect([1, 2, 3, 4].map((retry) => backoffDelayMs(retry, policy, low))).toEqual([50, 100, 200, 400]);
    expect(backoffDelayMs(1, policy, high)).toBeCloseTo(100, 3);
    expect(backoffDelayMs(3, policy, high)).toBeCloseTo(400, 3);
  });

  it('never exceeds the ceiling', () => {
    for (let retry = 1; retry < 40; retry += 1) expect(backoffDelayMs(retry, policy, high)).toBeLessThanOrEqual(1_000);
  });

  it('spreads retries of workers that failed together', () => {
    const values = [0.1, 0.5, 0.9].map((r) => backoffDelayMs(2, policy, () => r));
    expect(new Set(values).size).toBe(3);
  });

  it('waits at least as long as Retry-After asks, with jitter on top', () => {
    expect(backoffDelayMs(1, policy, low, 3_000)).toBe(3_000);
    const delay = backoffDelayMs(1, policy, () => 0.5, 3_000);
    expect(delay).toBeGreaterThanOrEqual(3_000);
    expect(delay).toBeLessThanOrEqual(3_000 + policy.baseDelayMs);
  });

  it('keeps the exponential backoff when it is longer than Retry-After', () => {
    expect(backoffDelayMs(4, policy, low, 10)).toBe(400);
  });

  it('caps an absurd Retry-After', () => {
    expect(backoffDelayMs(1, policy, low, 3_600_000)).toBe(5_000);
  });

  it('has sane defaults', () => {
    expect(DEFAULT_RETRY_POLICY.maxAttempts).toBeGreaterThan(1);
    expect(backoffDelayMs(1, DEFAULT_RETRY_POLICY, low)).toBe(DEFAULT_RETRY_POLICY.baseDelayMs / 2);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-03-10T12:00:00Z');
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('2', now)).toBe(2_000);
    expect(parseRetryAfter('0.5', now)).toBe(500);
    expect(parseRetryAfter(['3'], now)).toBe(3_000);
  });
  it('reads an HTTP date', () => {
    expect(parseRetryAfter('Tue, 10 Mar 2026 12:00:07 GMT', now)).toBe(7_000);
    expect(parseRetryAfter('Tue, 10 Mar 2026 11:00:00 GMT', now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});
