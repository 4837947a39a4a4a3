/**
 * Re-reads charges by id, `GET /v1/charges/:id`, for the charges events point at:
 * under the shared budget and the lister's retries, a few at a time. Each answer is
 * the raw charge (the caller normalises it with normalizeCharge) or `missing` when
 * Stripe answers 404 `resource_missing` (no such charge on this account). Anything
 * else that fails, fails the whole call with ChargeRetrievalError: a charge that could
 * not be read is not a charge that does not exist.
 */
import { setMaxListeners } from 'node:events';
import Stripe from 'stripe';
import { StripeListCounters } from './counters.js';
import { ChargeRetrievalError } from './event-errors.js';
import { failsEveryRequest } from './errors.js';
import { withRetries, type RetryDeps } from './page-source.js';
import { RateBudget } from './rate-budget.js';
import { errorMessage } from '../../errors.js';

export type RetrievedCharge = { id: string; found: true; raw: Record<string, unknown> } | { id: string; found: false };

export const DEFAULT_RETRIEVE_CONCURRENCY = 4;

export interface ChargeRetrieverDeps extends Partial<RetryDeps> {
  stripe: Stripe;
  concurrency?: number | undefined;
}

export interface ChargeRetriever {
  /** One answer per distinct id, in the order of first appearance. */
  retrieveCharges(
    account: string | null,
    ids: readonly string[],
    options?: { signal?: AbortSignal },
  ): Promise<RetrievedCharge[]>;
}

interface RetrieveQuery {
  account: string | null;
  id: string;
}

export function createChargeRetriever(deps: ChargeRetrieverDeps): ChargeRetriever {
  const concurrency = Math.max(1, Math.floor(deps.concurrency ?? DEFAULT_RETRIEVE_CONCURRENCY));
  const fetchOne = withRetries(
    async (query: RetrieveQuery): Promise<RetrievedCharge> => {
      const options: Stripe.RequestOptions = { maxNetworkRetries: 0 };
      if (query.account) options.stripeAccount = query.account;
      try {
        const charge: unknown = await deps.stripe.charges.retrieve(query.id, {}, options);
        return { id: query.id, found: true, raw: charge as Record<string, unknown> };
      } catch (error) {
        const { statusCode, code } = (error ?? {}) as { statusCode?: unknown; code?: unknown };
        if (error instanceof Stripe.errors.StripeError && statusCode === 404 && code === 'resource_missing')
          return { id: query.id, found: false };
        throw error;
      }
    },
    {
      ...deps,
      budget: deps.budget ?? new RateBudget(),
      counters: deps.counters ?? new StripeListCounters(),
    },
  );

  return {
    async retrieveCharges(account, ids, options = {}) {
      const unique = [...new Set(ids)];
      const results = new Array<RetrievedCharge>(unique.length);
      const controller = new AbortController();
      setMaxListeners(concurrency * 4 + 10, controller.signal);
      const onAbort = () => controller.abort(options.signal?.reason);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      let next = 0;
      let failure: unknown;
      const worker = async () => {
        while (failure === undefined && next < unique.length) {
          const index = next++;
          const id = unique[index] as string;
          try {
            const result = await fetchOne({ account, id }, controller.signal);
            // Another charge's id is a broken answer; no id at all is an unreadable charge, which the caller reports.
            // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- an upstream may answer `null` for a charge
            const answered = result.found ? result.raw?.id : id;
            if (answered !== id && answered !== undefined && answered !== null) {
              throw new Error(`the answer is not that charge (id ${JSON.stringify(answered)})`);
            }
            results[index] = result;
          } catch (error) {
            // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- another worker sets it across the await
            if (failure !== undefined || controller.signal.aborted) return;
            failure = failsEveryRequest(error)
              ? error
              : new ChargeRetrievalError(account, id, errorMessage(error), { cause: error });
            controller.abort(failure);
          }
        }
      };
      try {
        await Promise.all(Array.from({ length: Math.min(concurrency, unique.length) }, worker));
      } finally {
        options.signal?.removeEventListener('abort', onAbort);
      }
      options.signal?.throwIfAborted();
      if (failure !== undefined) throw failure;
      return results;
    },
  };
}
