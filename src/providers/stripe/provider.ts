import { createStripePayouts } from './payouts.js';
import { createStripeRefunds } from './refunds.js';
import type Stripe from 'stripe';
import { accountIdOf } from '../../domain/identity.js';
import {
  requestsPerLatency,
  type ChargeSource,
  type PaymentProvider,
  type ProviderFacts,
} from '../../sweep/provider.js';
import { createAccountLister } from './accounts.js';
import { StripeBudgets } from './budgets.js';
import { createStripeClient } from './client.js';
import { StripeListCounters } from './counters.js';
import { changeSource, createEventReader } from './events.js';
import { createStripeEvidence } from './evidence.js';
import { STRIPE_IDEMPOTENCY_WINDOW_MS } from './limits.js';
import { createChargeLister, DEFAULT_CONCURRENCY, MAX_PAGE_SIZE, type ChargeLister } from './list-charges.js';
import type { MetadataKeys } from './normalize.js';
import { admittedListingRequests, PriorityGate } from './priority-gate.js';
import { DEFAULT_RATE_PER_SECOND } from './rate-budget.js';

/** Stripe's facts the sweep's rules follow: its idempotency window, its page size, the request rate this process allows itself. */
export function stripeFacts(ratePerSecond: number = DEFAULT_RATE_PER_SECOND): ProviderFacts {
  return { idempotencyWindowMs: STRIPE_IDEMPOTENCY_WINDOW_MS, pageSize: MAX_PAGE_SIZE, ratePerSecond };
}

/**
 * Sub-windows one listing splits into, when `listings` run at once (the sweep lists
 * several slices ahead): together they keep rate × latency × 2 requests in flight, the
 * same target as the prefetch depth. Each split ends in a partial page, so a listing
 * among many pages by cursor alone instead of adding requests the budget pays for.
 */
export function listingConcurrency(ratePerSecond: number, meanLatencyMs: number | null, listings: number): number {
  const inFlight = Math.ceil(requestsPerLatency({ ratePerSecond, meanLatencyMs }) * 2);
  return Math.max(1, Math.min(DEFAULT_CONCURRENCY, Math.ceil(inFlight / Math.max(1, listings))));
}

export type StripeProviderOptions = {
  /** Requests per second per account and endpoint (SWEEPER_STRIPE_RATE); default 25. */
  ratePerSecond?: number;
  /** Requests per second of the whole process (SWEEPER_STRIPE_GLOBAL_RATE); default: no lower than `ratePerSecond`. */
  globalRatePerSecond?: number;
  /**
   * Processes sharing the key's limits (`--shard I/N`: N): each takes 1/N of the global
   * budget and of the platform's own accounts listing, which every shard reads.
   */
  shares?: number;
  /** Metadata names of the claim attribution; default `tenant_id`, `idempotency_key`. */
  metadataKeys?: MetadataKeys;
} & (
  | { /** A client of the caller's own. */ stripe: Stripe }
  | {
      stripe?: undefined;
      apiKey: string;
      /** `scheme://host[:port]`: the double, stripe-mock. */ apiBase?: string;
      timeoutMs?: number;
    }
);

export interface StripeProvider extends PaymentProvider {
  readonly stripe: Stripe;
  /** Stripe's two limits as budgets every request of the process draws from: listing, re-reads, refunds, accounts. */
  readonly budgets: StripeBudgets;
  /** Requests, 429s and latency of everything the provider sent. */
  readonly counters: StripeListCounters;
  listAccounts: NonNullable<PaymentProvider['listAccounts']>;
  peekCharges: NonNullable<PaymentProvider['peekCharges']>;
}

/**
 * Stripe as a PaymentProvider: the windowed lister, the events reader, the re-reads and
 * refunds, and the connected accounts, all under Stripe's two limits (per account and
 * endpoint, and per key: budgets.ts) and one set of counters. What the CLI, the demo and
 * the benchmarks wire a sweep with (with `providerSweepDeps`).
 */
export function createStripeProvider(options: StripeProviderOptions): StripeProvider {
  const stripe =
    options.stripe ??
    createStripeClient({ apiKey: options.apiKey, apiBase: options.apiBase, timeoutMs: options.timeoutMs });
  const perAccount = options.ratePerSecond ?? DEFAULT_RATE_PER_SECOND;
  const shares = Math.max(1, options.shares ?? 1);
  const budgets = new StripeBudgets({
    perAccount,
    global: Math.max(perAccount, options.globalRatePerSecond ?? perAccount) / shares,
  });
  // One account's requests go no faster than either budget allows.
  const facts = stripeFacts(Math.min(perAccount, budgets.global.ratePerSecond));
  const counters = new StripeListCounters();
  const lister = createChargeLister({
    stripe,
    budget: budgets.endpoint('GET /v1/charges'),
    counters,
    metadataKeys: options.metadataKeys,
  });
  const refunds = createStripeRefunds({
    stripe,
    budget: budgets.endpoint('GET /v1/refunds'),
    counters,
    metadataKeys: options.metadataKeys,
  });
  const retrieveBudget = budgets.endpoint('GET /v1/charges/:id');
  return {
    name: 'stripe',
    facts,
    stripe,
    budgets,
    counters,
    listCharges: accountListings(lister, facts.ratePerSecond, counters),
    peekCharges: async (account, window, signal) => {
      const peek = await lister.peek(accountIdOf(account), window, signal ? { signal } : {});
      return { complete: peek.complete, charges: peek.charges, malformed: peek.malformed };
    },
    listChanges: changeSource(
      createEventReader({ stripe, budget: budgets.endpoint('GET /v1/events'), retrieveBudget, counters }),
    ),
    listRefunds: refunds.listRefunds,
    payouts: createStripePayouts({
      stripe,
      budget: budgets.endpoint('GET /v1/payouts'),
      transactionsBudget: budgets.endpoint('GET /v1/balance_transactions'),
      counters,
    }),
    evidence: {
      ...createStripeEvidence({
        stripe,
        budget: budgets.endpoint('GET /v1/charges/search'),
        retrieveBudget,
        counters,
        metadataKeys: options.metadataKeys,
      }),
      refundsById: refunds.refundsById,
    },
    listAccounts: createAccountLister({
      stripe,
      budget: budgets.endpoint('GET /v1/accounts', perAccount / shares),
      counters,
    }),
    pace: () => ({ ratePerSecond: facts.ratePerSecond, meanLatencyMs: counters.meanLatencyMs() }),
  };
}

/**
 * The listing of each account, through a gate of its own (priority-gate.ts): an
 * account's slices finish in the order they are judged, and one account's backlog never
 * holds requests another account could send.
 */
function accountListings(lister: ChargeLister, ratePerSecond: number, counters: StripeListCounters): ChargeSource {
  const accounts = new Map<string, { gate: PriorityGate; listings: number }>();
  return (account, window, signal) =>
    (async function* () {
      let entry = accounts.get(account);
      if (!entry) {
        const gate = new PriorityGate(() =>
          admittedListingRequests({ ratePerSecond, meanLatencyMs: counters.meanLatencyMs() }),
        );
        accounts.set(account, (entry = { gate, listings: 0 }));
      }
      // Counted while iterated: a listing never started holds no share.
      entry.listings += 1;
      try {
        const concurrency = listingConcurrency(ratePerSecond, counters.meanLatencyMs(), entry.listings);
        yield* lister.list(accountIdOf(account), window, {
          signal,
          concurrency,
          priority: window.from.getTime(),
          gate: entry.gate,
        });
      } finally {
        entry.listings -= 1;
        if (entry.listings === 0) accounts.delete(account);
      }
    })();
}
