import { createStripeRefunds } from './refunds.js';
import type Stripe from 'stripe';
import { accountIdOf } from '../../domain/identity.js';
import { requestsPerLatency, type PaymentProvider, type ProviderFacts } from '../../sweep/provider.js';
import { createStripeClient } from './client.js';
import { StripeListCounters } from './counters.js';
import { changeSource, createEventReader } from './events.js';
import { createStripeEvidence } from './evidence.js';
import { STRIPE_IDEMPOTENCY_WINDOW_MS } from './limits.js';
import { createChargeLister, DEFAULT_CONCURRENCY, MAX_PAGE_SIZE } from './list-charges.js';
import type { MetadataKeys } from './normalize.js';
import { admittedListingRequests, PriorityGate } from './priority-gate.js';
import { DEFAULT_RATE_PER_SECOND, RateBudget } from './rate-budget.js';

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
  /** Requests per second for everything the provider sends (listing, re-reads, refunds); default 25. */
  ratePerSecond?: number;
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
  /** One budget for every Stripe request of the process: listing, re-reads and refunds. */
  readonly budget: RateBudget;
  /** Requests, 429s and latency of everything the provider sent. */
  readonly counters: StripeListCounters;
}

/**
 * Stripe as a PaymentProvider: the windowed lister, the events reader, and the
 * re-reads and refunds, all under one rate budget and one set of counters. What the
 * CLI, the demo and the benchmarks wire a sweep with (with `providerSweepDeps`).
 */
export function createStripeProvider(options: StripeProviderOptions): StripeProvider {
  const stripe =
    options.stripe ??
    createStripeClient({ apiKey: options.apiKey, apiBase: options.apiBase, timeoutMs: options.timeoutMs });
  const facts = stripeFacts(options.ratePerSecond);
  const budget = new RateBudget({ ratePerSecond: facts.ratePerSecond });
  const counters = new StripeListCounters();
  // Slices listed at once finish in the order they are judged (priority-gate.ts).
  const gate = new PriorityGate(() =>
    admittedListingRequests({ ratePerSecond: facts.ratePerSecond, meanLatencyMs: counters.meanLatencyMs() }),
  );
  const lister = createChargeLister({ stripe, budget, counters, gate, metadataKeys: options.metadataKeys });
  let listings = 0;
  const refunds = createStripeRefunds({ stripe, budget, counters, metadataKeys: options.metadataKeys });
  return {
    name: 'stripe',
    facts,
    stripe,
    budget,
    counters,
    listCharges: (account, window, signal) =>
      (async function* () {
        // Counted while iterated: a listing never started holds no share.
        listings += 1;
        try {
          const concurrency = listingConcurrency(facts.ratePerSecond, counters.meanLatencyMs(), listings);
          yield* lister.list(accountIdOf(account), window, { signal, concurrency, priority: window.from.getTime() });
        } finally {
          listings -= 1;
        }
      })(),
    listChanges: changeSource(createEventReader({ stripe, budget, counters })),
    listRefunds: refunds.listRefunds,
    evidence: {
      ...createStripeEvidence({ stripe, budget, counters, metadataKeys: options.metadataKeys }),
      refundsById: refunds.refundsById,
    },
    pace: () => ({ ratePerSecond: facts.ratePerSecond, meanLatencyMs: counters.meanLatencyMs() }),
  };
}
