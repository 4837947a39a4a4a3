import type Stripe from 'stripe';
import { backoffDelayMs, DEFAULT_RETRY_POLICY, type RetryPolicy } from './backoff.js';
import { StripeListCounters } from './counters.js';
import { InvalidStripeKeyError, MissingStripePermissionError, PageFetchError } from './errors.js';
import { classifyListFailure } from './failure.js';
import { realSleep, RateBudget, type Sleep } from './rate-budget.js';

/** One `GET /v1/charges` request: a created range, optionally continued after a charge. */
export interface PageQuery {
  account: string | null;
  gte: number;
  lt: number;
  startingAfter?: string;
  limit: number;
}

/** A page as Stripe sent it; items stay `unknown` until normalised. */
export interface RawChargePage {
  data: unknown[];
  hasMore: boolean;
}

/** Fetches one page. The lister depends on this, not on the SDK, so its logic is tested without HTTP. */
export type FetchChargePage = (query: PageQuery, signal: AbortSignal) => Promise<RawChargePage>;

/**
 * One attempt through the real SDK. Its own retries are off for this call: they
 * would sleep outside the shared budget and go uncounted; `withRetries` decides.
 */
export function sdkPageSource(stripe: Stripe): FetchChargePage {
  return async (query) => {
    const params: Stripe.ChargeListParams = { created: { gte: query.gte, lt: query.lt }, limit: query.limit };
    if (query.startingAfter) params.starting_after = query.startingAfter;
    const options: Stripe.RequestOptions = { maxNetworkRetries: 0 };
    if (query.account) options.stripeAccount = query.account;
    const page = await stripe.charges.list(params, options);
    return { data: page.data as unknown[], hasMore: page.has_more };
  };
}

export interface RetryDeps {
  budget: RateBudget;
  counters: StripeListCounters;
  policy?: Partial<RetryPolicy>;
  sleep?: Sleep;
  random?: () => number;
  /** Wall clock in ms, for HTTP-date `Retry-After` values. */
  now?: () => number;
}

/**
 * Every attempt waits for a token of the shared budget, then transient failures are
 * retried with backoff up to the attempt bound. 401/403 become typed configuration
 * errors (nothing to retry); anything else final becomes a PageFetchError.
 */
export function withRetries<Q extends { account: string | null }, R>(
  // Generic over the request: charge pages, event pages and charge re-reads share this loop.
  fetchPage: (query: Q, signal: AbortSignal) => Promise<R>,
  deps: RetryDeps,
): (query: Q, signal: AbortSignal) => Promise<R> {
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...deps.policy };
  const sleep = deps.sleep ?? realSleep;
  const random = deps.random ?? Math.random;
  const now = deps.now ?? Date.now;
  const { budget, counters } = deps;

  return async (query, signal) => {
    for (let attempt = 1; ; attempt += 1) {
      await budget.acquire(signal);
      counters.requests += 1;
      let error: unknown;
      try {
        return await fetchPage(query, signal);
      } catch (caught) {
        error = caught;
      }
      signal.throwIfAborted();
      const verdict = classifyListFailure(error, now());
      if (verdict.action === 'invalid_key') throw new InvalidStripeKeyError(query.account, verdict.message);
      if (verdict.action === 'missing_permission') throw new MissingStripePermissionError(query.account, verdict.message);
      countFailure(counters, error, verdict.action === 'retry' && verdict.reason === 'connection');
      if (verdict.action === 'give_up') {
        throw new PageFetchError(`${verdict.reason} (attempt ${attempt}, not retryable)`, attempt, { cause: error });
      }
      if (attempt >= policy.maxAttempts) {
        throw new PageFetchError(`gave up after ${attempt} attempts, the last: ${describeFailure(verdict.status, error)}`, attempt, {
          cause: error,
        });
      }
      counters.retries += 1;
      const delayMs = backoffDelayMs(attempt, policy, random, verdict.retryAfterMs);
      if (verdict.reason === 'rate_limited') budget.pause(delayMs);
      await sleep(delayMs, signal);
    }
  };
}

function countFailure(counters: StripeListCounters, error: unknown, connection: boolean): void {
  const status = (error as { statusCode?: unknown })?.statusCode;
  if (status === 429) counters.rateLimited += 1;
  else if (typeof status === 'number' && status >= 500) counters.serverErrors += 1;
  else if (connection) counters.connectionErrors += 1;
}

function describeFailure(status: number | undefined, error: unknown): string {
  const message = (error as { message?: string })?.message ?? String(error);
  return status === undefined ? message : `HTTP ${status}: ${message}`;
}
