import Stripe from 'stripe';
import { backoffDelayMs, DEFAULT_RETRY_POLICY, type RetryPolicy } from './backoff.js';
import { StripeListCounters } from './counters.js';
import {
  AccountAccessRevokedError,
  describeError,
  InvalidStripeKeyError,
  MalformedPageError,
  MissingStripePermissionError,
  PageFetchError,
  StripeUnreachableError,
} from './errors.js';
import { classifyListFailure } from './failure.js';
import { RateBudget, realSleep, type RequestBudget, type Sleep } from './rate-budget.js';

/** One `GET /v1/charges` request: a created range, optionally continued after a charge. */
export interface PageQuery {
  account: string | null;
  gte: number;
  lt: number;
  startingAfter?: string;
  limit: number;
}

/**
 * A page as Stripe sent it; items stay `unknown` until normalised. The lister checks
 * the shape again at run time (a FetchChargePage is any function, and a page is
 * whatever came over the wire).
 */
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
    let page: unknown;
    try {
      page = await stripe.charges.list(params, options);
    } catch (error) {
      if (error instanceof Stripe.errors.StripeError) throw error;
      // The SDK trips over a body that is JSON but not an object (`null`, `[]`, `"x"`).
      throw new MalformedPageError('the answer could not be read as a Stripe list: the body is not a JSON object', {
        cause: error,
      });
    }
    return readWirePage(page);
  };
}

/** `{ object: "list", data: [...], has_more: boolean }`, or MalformedPageError saying what is wrong. */
export function readWirePage(page: unknown): RawChargePage {
  if (typeof page !== 'object' || page === null || Array.isArray(page)) {
    throw new MalformedPageError(
      `the answer is not a list object (${page === null ? 'null' : Array.isArray(page) ? 'an array' : typeof page})`,
    );
  }
  const { data, has_more: hasMore } = page as { data?: unknown; has_more?: unknown };
  const problem = pageShapeProblem(data, hasMore);
  if (problem) throw new MalformedPageError(problem);
  return { data: data as unknown[], hasMore: hasMore as boolean };
}

/** Why `data`/`has_more` do not make a list page, or null. */
export function pageShapeProblem(data: unknown, hasMore: unknown): string | null {
  if (!Array.isArray(data))
    return `data is ${data === undefined ? 'missing' : data === null ? 'null' : `a ${typeof data}`}, not an array`;
  if (typeof hasMore !== 'boolean')
    return `has_more is ${hasMore === undefined ? 'missing' : hasMore === null ? 'null' : `a ${typeof hasMore}`}, not a boolean`;
  return null;
}

export interface RetryDeps {
  /** Every attempt waits here first (the account's and the process's budgets). */
  budget: RequestBudget;
  counters: StripeListCounters;
  policy?: Partial<RetryPolicy>;
  sleep?: Sleep;
  random?: () => number;
  /** Wall clock in ms, for HTTP-date `Retry-After` values. */
  now?: () => number;
}

/**
 * Every attempt waits for a token of the shared budget, then transient failures are
 * retried with backoff up to the attempt bound (a 429 among them: Stripe's SDKs never
 * retry one). 401/403 become typed configuration errors (nothing to retry), and a
 * connected account's 403 `account_invalid` an AccountAccessRevokedError; anything else
 * final becomes a PageFetchError.
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
    let deadlineMisses = 0;
    for (let attempt = 1; ; attempt += 1) {
      await budget.acquireFor(query.account, signal);
      counters.requests += 1;
      const sent = performance.now();
      let error: unknown;
      try {
        return await fetchPage(query, signal);
      } catch (caught) {
        error = caught;
      } finally {
        counters.latencyMs += performance.now() - sent;
      }
      signal.throwIfAborted();
      const verdict = classifyListFailure(error, now());
      if (verdict.action === 'invalid_key') throw new InvalidStripeKeyError(query.account, verdict.message);
      if (verdict.action === 'missing_permission')
        throw new MissingStripePermissionError(query.account, verdict.message);
      if (verdict.action === 'account_invalid') {
        // The platform's own key on the platform: a permission. On a connected account: access revoked.
        if (query.account === null) throw new MissingStripePermissionError(query.account, verdict.message);
        throw new AccountAccessRevokedError(query.account, verdict.message);
      }
      countFailure(
        counters,
        error,
        verdict.action === 'unreachable' ||
          (verdict.action === 'retry' && (verdict.reason === 'connection' || verdict.reason === 'deadline')),
      );
      if (verdict.action === 'unreachable')
        throw new StripeUnreachableError(verdict.where, verdict.code, { cause: error });
      if (verdict.action === 'give_up') {
        throw new PageFetchError(`${verdict.reason} (attempt ${attempt}, not retryable)`, attempt, { cause: error });
      }
      if (verdict.reason === 'deadline' && ++deadlineMisses >= policy.maxDeadlineMisses) {
        throw new PageFetchError(
          `no complete answer within the request deadline, ${deadlineMisses} times (SWEEPER_REQUEST_DEADLINE)`,
          attempt,
          {
            cause: error,
          },
        );
      }
      if (attempt >= policy.maxAttempts) {
        throw new PageFetchError(
          `gave up after ${attempt} attempts, the last: ${describeFailure(verdict.status, error)}`,
          attempt,
          {
            cause: error,
          },
        );
      }
      counters.retries += 1;
      const delayMs = backoffDelayMs(attempt, policy, random, verdict.retryAfterMs);
      if (verdict.reason === 'rate_limited') budget.pauseFor(query.account, delayMs, verdict.limitedBy);
      await sleep(delayMs, signal);
    }
  };
}

function countFailure(counters: StripeListCounters, error: unknown, connection: boolean): void {
  const status = (error as { statusCode?: unknown } | null | undefined)?.statusCode;
  if (status === 429) counters.rateLimited += 1;
  else if (typeof status === 'number' && status >= 500) counters.serverErrors += 1;
  else if (connection) counters.connectionErrors += 1;
}

function describeFailure(status: number | undefined, error: unknown): string {
  const message = describeError(error);
  return status === undefined ? message : `HTTP ${status}: ${message}`;
}

/** One SDK call on an account (`Stripe-Account` for a connected one); the SDK's own retries off. */
export interface AccountCall {
  account: string | null;
  run: (options: Stripe.RequestOptions) => Promise<unknown>;
}

/** SDK calls under the shared budget and these retry rules: the refunds' and payouts' listings and reads. */
export function accountCalls(deps: {
  budget?: RequestBudget;
  counters?: StripeListCounters;
  retry?: RetryDeps['policy'];
  sleep?: RetryDeps['sleep'];
}): (call: AccountCall, signal: AbortSignal) => Promise<unknown> {
  return withRetries(
    (call: AccountCall) => {
      const options: Stripe.RequestOptions = { maxNetworkRetries: 0 };
      if (call.account) options.stripeAccount = call.account;
      return call.run(options);
    },
    {
      budget: deps.budget ?? new RateBudget(),
      counters: deps.counters ?? new StripeListCounters(),
      policy: deps.retry,
      sleep: deps.sleep,
    },
  );
}
