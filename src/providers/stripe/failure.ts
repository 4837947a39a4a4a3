import Stripe from 'stripe';
import { parseRetryAfter } from './backoff.js';
import type { LimitScope } from './rate-budget.js';
import { describeError } from './errors.js';

export type FailureVerdict =
  | {
      action: 'retry';
      reason: 'rate_limited' | 'server_error' | 'connection' | 'deadline' | 'conflict' | 'stripe_should_retry';
      status?: number;
      retryAfterMs?: number;
      /** A 429's `Stripe-Rate-Limited-Reason`, when it names one limit. */
      limitedBy?: LimitScope;
    }
  | { action: 'give_up'; reason: string; status?: number }
  | { action: 'invalid_key'; message: string }
  | { action: 'unreachable'; code: 'ECONNREFUSED' | 'ENOTFOUND'; where: string }
  | { action: 'missing_permission'; message: string }
  /** 403 `account_invalid`: the key has no access to the account (a connected account revoked the platform). */
  | { action: 'account_invalid'; message: string };

interface ErrorLike {
  statusCode?: unknown;
  code?: unknown;
  headers?: unknown;
  message?: unknown;
  /** StripeConnectionError: the transport failure, whose code says a timeout or a refusal. */
  detail?: { code?: unknown; address?: unknown; port?: unknown; hostname?: unknown; message?: unknown } | null;
}

/**
 * What to do about a failed list request. The SDK's own retries are switched off for
 * listing (each attempt must pass the shared budget and be counted), so this is the
 * one place that decides, following Stripe's advice: `Stripe-Should-Retry` overrides
 * everything; 429, 409 and 5xx are transient; an answer that never came is transient
 * (a GET is safe to repeat), unless nothing listens or the host does not resolve (a
 * wrong STRIPE_API_BASE: no retry will find it); other 4xx are final.
 */
export function classifyListFailure(error: unknown, nowMs: number = Date.now()): FailureVerdict {
  const err = (typeof error === 'object' && error !== null ? error : {}) as ErrorLike;
  const status = typeof err.statusCode === 'number' ? err.statusCode : undefined;
  const message = describeError(error);
  if (status === 401) return { action: 'invalid_key', message };
  if (status === 403) {
    return err.code === 'account_invalid'
      ? { action: 'account_invalid', message }
      : { action: 'missing_permission', message };
  }
  const answered = answeredVerdict(err, status, message, nowMs);
  if (answered) return answered;
  if (status === undefined && isStripeError(error)) return unansweredVerdict(err.detail);
  return { action: 'give_up', reason: describe(status, message), status };
}

/** What Stripe's answer (its status and headers) says about trying again; undefined when it says nothing. */
function answeredVerdict(
  err: ErrorLike,
  status: number | undefined,
  message: string,
  nowMs: number,
): FailureVerdict | undefined {
  const shouldRetry = header(err.headers, 'stripe-should-retry');
  const retryAfterMs = parseRetryAfter(header(err.headers, 'retry-after'), nowMs);
  const withRetryAfter = retryAfterMs === undefined ? {} : { retryAfterMs };
  if (shouldRetry === 'false')
    return { action: 'give_up', reason: `Stripe-Should-Retry: false (${describe(status, message)})`, status };
  if (status === 429) {
    const limitedBy = limitScopeOf(header(err.headers, 'stripe-rate-limited-reason'));
    return { action: 'retry', reason: 'rate_limited', status, ...withRetryAfter, ...(limitedBy ? { limitedBy } : {}) };
  }
  if (shouldRetry === 'true') return { action: 'retry', reason: 'stripe_should_retry', status, ...withRetryAfter };
  if (status === 409) return { action: 'retry', reason: 'conflict', status, ...withRetryAfter };
  if (status !== undefined && status >= 500)
    return { action: 'retry', reason: 'server_error', status, ...withRetryAfter };
  return undefined;
}

/** No answer came: a GET is safe to repeat, unless nothing listens there or the host does not resolve. */
function unansweredVerdict(transport: ErrorLike['detail']): FailureVerdict {
  const detail = typeof transport === 'object' && transport !== null ? transport : {};
  if (detail.code === 'ECONNREFUSED' || detail.code === 'ENOTFOUND')
    return { action: 'unreachable', code: detail.code, where: whereOf(detail) };
  return { action: 'retry', reason: detail.code === 'ETIMEDOUT' ? 'deadline' : 'connection' };
}

/** `127.0.0.1:12111` for a refused connection, the host name for one that does not resolve. */
function whereOf(detail: NonNullable<ErrorLike['detail']>): string {
  if (typeof detail.address === 'string')
    return typeof detail.port === 'number' ? `${detail.address}:${detail.port}` : detail.address;
  if (typeof detail.hostname === 'string') return detail.hostname;
  // Node's own words end with it: `connect ECONNREFUSED 127.0.0.1:443`, `getaddrinfo ENOTFOUND host`.
  const named = /(?:ECONNREFUSED|ENOTFOUND) (\S+)$/.exec(typeof detail.message === 'string' ? detail.message : '');
  return named?.[1] ?? 'its address';
}

/** Stripe's reasons: `global-rate`, `global-concurrency` (the key); `endpoint-rate`, `resource-specific` (one account's endpoint). */
function limitScopeOf(reason: string | undefined): LimitScope | undefined {
  if (reason === undefined) return undefined;
  if (reason.startsWith('global')) return 'global';
  if (reason === 'endpoint-rate' || reason === 'resource-specific') return 'account';
  return undefined;
}

function isStripeError(error: unknown): boolean {
  return error instanceof Stripe.errors.StripeError;
}

function header(headers: unknown, name: string): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined;
  const value: unknown = (headers as Record<string, unknown>)[name];
  const first: unknown = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : undefined;
}

function describe(status: number | undefined, message: string): string {
  return status === undefined ? message : `HTTP ${status}: ${message}`;
}
