import Stripe from 'stripe';
import type { RetryPolicy } from './backoff.js';
import { StripeListCounters } from './counters.js';
import { MalformedPageError } from './errors.js';
import { STRIPE_MAX_PAGE_SIZE } from './limits.js';
import { readWirePage, withRetries } from './page-source.js';
import type { RequestBudget, Sleep } from './rate-budget.js';

/** A connected account id as the sweep names accounts. */
const ACCOUNT_ID = /^acct_[A-Za-z0-9]+$/;
/** Pages followed at most: a million connected accounts; past it the upstream keeps handing out cursors. */
const MAX_PAGES = 10_000;

export interface AccountListerDeps {
  stripe: Stripe;
  budget: RequestBudget;
  counters?: StripeListCounters;
  retry?: Partial<RetryPolicy>;
  sleep?: Sleep;
}

interface AccountPageQuery {
  /** Always the platform: connected accounts have none of their own. */
  account: null;
  startingAfter?: string;
}

/**
 * Every connected account of the platform (`GET /v1/accounts`, 100 a page, by cursor),
 * every one of them or a thrown error: a listing cut short would read as accounts that
 * left. Each page is checked (a list, ids that look like accounts, a cursor that moves,
 * no id twice) and every request goes through the budget and the retries of any other.
 */
export function createAccountLister(deps: AccountListerDeps): (signal?: AbortSignal) => Promise<string[]> {
  const counters = deps.counters ?? new StripeListCounters();
  const fetchPage = withRetries(
    async (query: AccountPageQuery) => {
      const params: Stripe.AccountListParams = { limit: STRIPE_MAX_PAGE_SIZE };
      if (query.startingAfter) params.starting_after = query.startingAfter;
      let page: unknown;
      try {
        page = await deps.stripe.accounts.list(params, { maxNetworkRetries: 0 });
      } catch (error) {
        if (error instanceof Stripe.errors.StripeError) throw error;
        throw new MalformedPageError('the answer could not be read as a Stripe list: the body is not a JSON object', {
          cause: error,
        });
      }
      return readWirePage(page);
    },
    { budget: deps.budget, counters, policy: deps.retry, sleep: deps.sleep },
  );
  return async (signal) => {
    const ids: string[] = [];
    const seen = new Set<string>();
    let after: string | undefined;
    for (let pages = 1; ; pages += 1) {
      if (pages > MAX_PAGES) throw new MalformedPageError(`more than ${MAX_PAGES} pages of connected accounts`);
      const page = await fetchPage({ account: null, startingAfter: after }, signal ?? new AbortController().signal);
      counters.pages += 1;
      for (const item of page.data) {
        const id = (item as { id?: unknown } | null)?.id;
        if (typeof id !== 'string' || !ACCOUNT_ID.test(id))
          throw new MalformedPageError(`GET /v1/accounts listed an account without a usable id (${String(id)})`);
        if (seen.has(id)) throw new MalformedPageError(`GET /v1/accounts listed ${id} twice`);
        seen.add(id);
        ids.push(id);
      }
      if (!page.hasMore) return ids;
      const last = ids.at(-1);
      if (page.data.length === 0 || last === undefined || last === after)
        throw new MalformedPageError('GET /v1/accounts said has_more, but its cursor did not move');
      after = last;
    }
  };
}
