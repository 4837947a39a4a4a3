import type Stripe from 'stripe';
import { accountIdOf } from '../../domain/identity.js';
import type { PaymentProvider, ProviderFacts } from '../../sweep/provider.js';
import { createStripeClient } from './client.js';
import { StripeListCounters } from './counters.js';
import { changeSource, createEventReader } from './events.js';
import { createStripeEvidence } from './evidence.js';
import { STRIPE_IDEMPOTENCY_WINDOW_MS } from './limits.js';
import { createChargeLister, MAX_PAGE_SIZE } from './list-charges.js';
import type { MetadataKeys } from './normalize.js';
import { DEFAULT_RATE_PER_SECOND, RateBudget } from './rate-budget.js';

/** Stripe's facts the sweep's rules follow: its idempotency window, its page size, the request rate this process allows itself. */
export function stripeFacts(ratePerSecond: number = DEFAULT_RATE_PER_SECOND): ProviderFacts {
  return { idempotencyWindowMs: STRIPE_IDEMPOTENCY_WINDOW_MS, pageSize: MAX_PAGE_SIZE, ratePerSecond };
}

export type StripeProviderOptions = {
  /** Requests per second for everything the provider sends (listing, re-reads, refunds); default 20. */
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
  const lister = createChargeLister({ stripe, budget, metadataKeys: options.metadataKeys });
  const counters = lister.counters;
  return {
    name: 'stripe',
    facts,
    stripe,
    budget,
    counters,
    listCharges: (account, window, signal) => lister.list(accountIdOf(account), window, { signal }),
    listChanges: changeSource(createEventReader({ stripe, budget, counters })),
    evidence: createStripeEvidence({ stripe, budget, counters, metadataKeys: options.metadataKeys }),
    pace: () => ({ ratePerSecond: facts.ratePerSecond, meanLatencyMs: counters.meanLatencyMs() }),
  };
}
