import Stripe from 'stripe';
import { parseRetryAfter } from './backoff.js';

export type FailureVerdict =
  | { action: 'retry'; reason: 'rate_limited' | 'server_error' | 'connection' | 'conflict' | 'stripe_should_retry'; status?: number; retryAfterMs?: number }
  | { action: 'give_up'; reason: string; status?: number }
  | { action: 'invalid_key'; message: string }
  | { action: 'missing_permission'; message: string };

interface ErrorLike {
  statusCode?: number;
  headers?: Record<string, string | string[] | undefined>;
  message?: string;
}

/**
 * What to do about a failed list request. The SDK's own retries are switched off for
 * listing (each attempt must pass the shared budget and be counted), so this is the
 * one place that decides, following Stripe's advice: `Stripe-Should-Retry` overrides
 * everything; 429, 409 and 5xx are transient; an answer that never came is transient
 * (a GET is safe to repeat); other 4xx are final.
 */
export function classifyListFailure(error: unknown, nowMs: number = Date.now()): FailureVerdict {
  const err = (typeof error === 'object' && error !== null ? error : {}) as ErrorLike;
  const status = typeof err.statusCode === 'number' ? err.statusCode : undefined;
  const message = err.message ?? String(error);
  if (status === 401) return { action: 'invalid_key', message };
  if (status === 403) return { action: 'missing_permission', message };

  const shouldRetry = header(err.headers, 'stripe-should-retry');
  const retryAfterMs = parseRetryAfter(header(err.headers, 'retry-after'), nowMs);
  const withRetryAfter = retryAfterMs === undefined ? {} : { retryAfterMs };
  if (shouldRetry === 'false') return { action: 'give_up', reason: `Stripe-Should-Retry: false (${describe(status, message)})`, status };
  if (status === 429) return { action: 'retry', reason: 'rate_limited', status, ...withRetryAfter };
  if (shouldRetry === 'true') return { action: 'retry', reason: 'stripe_should_retry', status, ...withRetryAfter };
  if (status === 409) return { action: 'retry', reason: 'conflict', status, ...withRetryAfter };
  if (status !== undefined && status >= 500) return { action: 'retry', reason: 'server_error', status, ...withRetryAfter };
  if (status === undefined && isStripeError(error)) return { action: 'retry', reason: 'connection' };
  return { action: 'give_up', reason: describe(status, message), status };
}

function isStripeError(error: unknown): boolean {
  return error instanceof Stripe.errors.StripeError;
}

function header(headers: ErrorLike['headers'], name: string): string | undefined {
  const value = headers?.[name];
  return Array.isArray(value) ? value[0] : value;
}

function describe(status: number | undefined, message: string): string {
  return status === undefined ? message : `HTTP ${status}: ${message}`;
}
