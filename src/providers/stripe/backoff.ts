/** How hard one request is retried before its sub-window is given up. */
export interface RetryPolicy {
  /** Attempts in total, the first included. */
  maxAttempts: number;
  /** Backoff before the first retry; doubles per retry. */
  baseDelayMs: number;
  /** Ceiling of the exponential backoff. */
  maxDelayMs: number;
  /** A server asking for longer than this is waited on only this long (and the attempt bound still holds). */
  maxRetryAfterMs: number;
  /**
   * Requests that ran past their total deadline, out of `maxAttempts`: a server that
   * answers that slowly is not going to recover within the attempts' backoff, and each
   * miss costs a whole deadline.
   */
  maxDeadlineMisses: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 8,
  baseDelayMs: 500,
  maxDelayMs: 20_000,
  maxRetryAfterMs: 60_000,
  maxDeadlineMisses: 2,
});

/**
 * Delay before retry number `retry` (1 for the first retry). Exponential with "equal
 * jitter" (half fixed, half random) so that workers that failed together do not
 * retry together; never shorter than the server's `Retry-After`, plus a little jitter
 * on top of it for the same reason.
 */
export function backoffDelayMs(
  retry: number,
  policy: RetryPolicy,
  random: () => number,
  retryAfterMs?: number,
): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  const jittered = exponential / 2 + (random() * exponential) / 2;
  if (retryAfterMs === undefined) return jittered;
  const honoured = Math.min(Math.max(0, retryAfterMs), policy.maxRetryAfterMs);
  return Math.max(jittered, honoured + random() * policy.baseDelayMs);
}

/**
 * `Retry-After` is either delta-seconds or an HTTP date (RFC 9110 §10.2.3). Returns
 * milliseconds to wait, or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const first: unknown = Array.isArray(value) ? value[0] : value;
  const text = typeof first === 'string' ? first.trim() : undefined;
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
