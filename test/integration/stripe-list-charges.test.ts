import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { READ_ONLY_PERMISSIONS, startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { StripeListCounters } from '../../src/providers/stripe/counters.js';
import {
  IncompleteWindowError,
  InvalidStripeKeyError,
  MissingStripePermissionError,
} from '../../src/providers/stripe/errors.js';
import { createChargeLister, type ChargeLister } from '../../src/providers/stripe/list-charges.js';
import type { RetryPolicy } from '../../src/providers/stripe/backoff.js';
import { RateBudget } from '../../src/providers/stripe/rate-budget.js';
import type { ChargeWindow } from '../../src/providers/stripe/window.js';
import type { MalformedCharge, NormalizedCharge } from '../../src/sweep/provider.js';
import { failure } from '../support/promises.js';

const FROM = new Date('2026-03-01T00:00:00Z');
const TO = new Date('2026-03-02T00:00:00Z');
const FROM_S = FROM.getTime() / 1000;
const TO_S = TO.getTime() / 1000;
const WINDOW: ChargeWindow = { from: FROM, to: TO };
// Quick retries: the double answers in a millisecond, and the tests must not wait on real backoff.
const FAST_RETRY = { maxAttempts: 10, baseDelayMs: 2, maxDelayMs: 20 };
const LIST = 'GET /v1/charges';

let double: StripeDouble;

beforeAll(async () => {
  double = await startStripeDouble({
    now: '2026-03-05T00:00:00Z',
    keys: {
      acceptedKeys: ['sk_test_lister', 'rk_test_no_charges'],
      permissions: { rk_test_no_charges: ['rak_payment_intent_read'] },
    },
  });
});
afterAll(async () => {
  await double.close();
});
beforeEach(() => {
  double.reset();
});

interface ListerOptions {
  apiKey?: string;
  budget?: RateBudget;
  counters?: StripeListCounters;
  concurrency?: number;
  retry?: Partial<RetryPolicy>;
}

function lister(options: ListerOptions = {}) {
  const stripe = createStripeClient({ apiKey: options.apiKey ?? 'sk_test_lister', apiBase: double.url });
  return createChargeLister({
    stripe,
    budget: options.budget ?? new RateBudget({ ratePerSecond: 2_000, burst: 50 }),
    counters: options.counters,
    concurrency: options.concurrency ?? 8,
    retry: { ...FAST_RETRY, ...options.retry },
  });
}

async function listAll(l: ChargeLister, account: string | null, window: ChargeWindow = WINDOW) {
  const charges: NormalizedCharge[] = [];
  const malformed: MalformedCharge[] = [];
  for await (const batch of l.list(account, window)) {
    expect(batch.account).toBe(account);
    charges.push(...batch.charges);
    malformed.push(...batch.malformed);
  }
  const ids = charges.map((c) => c.id).sort();
  return { charges, malformed, ids };
}

const seeded = (account: string | null, window: ChargeWindow = WINDOW) => double.chargeIds(account, window).sort();

describe('windowed listing through the SDK against the double', () => {
  it('lists exactly the seeded set across a burst of 1,000 charges in one second', async () => {
    double.seedCharges('acct_burst', 3_000, { from: FROM, to: TO, seed: 1 });
    double.seedCharges('acct_burst', 1_000, { from: FROM_S + 40_000, to: FROM_S + 40_001, seed: 2 });
    double.seedCharges('acct_burst', 1_000, { from: TO_S - 1, to: TO_S, seed: 3 });
    const l = lister();
    const { ids } = await listAll(l, 'acct_burst');
    expect(ids).toHaveLength(5_000);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(seeded('acct_burst'));
    // Stripe cannot do better than a full page per request; the split heuristics should stay close to that.
    expect(l.counters.requests).toBeLessThan(5_000 / 100 + 40);
    expect(l.counters.splits).toBeGreaterThan(0);
  });

  it('takes charges created exactly at `from` and leaves out those at `to`', async () => {
    const inside = [FROM_S, FROM_S, FROM_S + 1, TO_S - 1, TO_S - 1].map(
      (created) => double.createCharge('acct_edges', { created }).id,
    );
    for (const created of [FROM_S - 1, FROM_S - 1, TO_S, TO_S, TO_S + 1])
      double.createCharge('acct_edges', { created });
    const { ids } = await listAll(lister(), 'acct_edges');
    expect(ids).toEqual([...inside].sort());
  });

  it('yields nothing for an empty window, after one request', async () => {
    double.seedCharges('acct_empty', 500, { from: TO, to: new Date('2026-03-03T00:00:00Z') });
    const l = lister();
    const { ids } = await listAll(l, 'acct_empty');
    expect(ids).toEqual([]);
    expect(double.counters.get(LIST)).toBe(1);
  });

  it('lists several accounts at once under one shared budget, each exactly', async () => {
    const accounts = ['acct_a', 'acct_b', null] as const;
    accounts.forEach((account, i) =>
      double.seedCharges(account, 1_200 + i * 500, { from: FROM, to: TO, seed: 10 + i }),
    );
    double.seedCharges('acct_a', 400, { from: FROM_S + 7, to: FROM_S + 8, seed: 20 });
    const budget = new RateBudget({ ratePerSecond: 2_000, burst: 50 });
    const counters = new StripeListCounters();
    const l = lister({ budget, counters });
    const results = await Promise.all(accounts.map((account) => listAll(l, account)));
    results.forEach((result, i) => {
      const account = accounts[i] as string | null;
      expect(result.ids).toEqual(seeded(account));
      expect(result.charges.every((c) => c.account === account)).toBe(true);
    });
    expect(counters.charges).toBe(results.reduce((sum, r) => sum + r.ids.length, 0));
    expect(budget.stats().granted).toBe(counters.requests);
  });

  it('is still exact when 20% of requests are answered 429 or 500', async () => {
    double.seedCharges('acct_flaky', 4_000, { from: FROM, to: TO, seed: 4 });
    double.seedCharges('acct_flaky', 1_000, { from: FROM_S + 5, to: FROM_S + 6, seed: 5 });
    double.setFaults({ rate429: 0.1, rate500: 0.1, endpoints: [LIST], seed: 99 });
    const l = lister();
    const { ids } = await listAll(l, 'acct_flaky');
    expect(ids).toEqual(seeded('acct_flaky'));
    expect(new Set(ids).size).toBe(5_000);
    const counters = l.counters.snapshot();
    expect(counters.rateLimited).toBe(double.counters.status(LIST, 429));
    expect(counters.serverErrors).toBe(double.counters.status(LIST, 500));
    expect(counters.rateLimited).toBeGreaterThan(0);
    expect(counters.serverErrors).toBeGreaterThan(0);
    expect(counters.retries).toBe(counters.rateLimited + counters.serverErrors);
    expect(counters.requests).toBe(double.counters.get(LIST));
  });

  it('is still exact when connections are reset', async () => {
    double.seedCharges('acct_resets', 2_000, { from: FROM, to: TO, seed: 6 });
    double.setFaults({ rateReset: 0.15, endpoints: [LIST], seed: 7 });
    const { ids } = await listAll(lister(), 'acct_resets');
    expect(ids).toEqual(seeded('acct_resets'));
    expect(double.injectedFaults.reset).toBeGreaterThan(0);
  });

  it('recovers from the server-side rate limit (budget set above it)', async () => {
    double.seedCharges('acct_limited', 3_000, { from: FROM, to: TO, seed: 8 });
    double.setRateLimit(LIST, { perSecond: 50, burst: 5 });
    // Backoff long enough for the server's bucket to refill: the real policy, scaled down 20 times.
    // The server's bucket runs on real time, so how many 429s one request meets depends on the
    // machine's speed (measured: at most 8 in 318 runs); 30 attempts keep that from failing the test.
    const l = lister({
      budget: new RateBudget({ ratePerSecond: 500, burst: 10 }),
      retry: { baseDelayMs: 25, maxDelayMs: 1_000, maxAttempts: 30 },
    });
    const { ids } = await listAll(l, 'acct_limited');
    expect(ids).toEqual(seeded('acct_limited'));
    expect(l.counters.rateLimited).toBeGreaterThan(0);
    expect(l.counters.rateLimited).toBe(double.counters.status(LIST, 429));
  });

  it('raises IncompleteWindowError naming the account and the window when a sub-window cannot be completed', async () => {
    double.seedCharges('acct_down', 500, { from: FROM, to: TO, seed: 9 });
    double.setFaults({ rate500: 1, endpoints: [LIST] });
    const l = lister({ retry: { maxAttempts: 3 } });
    const error = await failure(listAll(l, 'acct_down'));
    expect(error).toBeInstanceOf(IncompleteWindowError);
    expect(error.message).toContain(
      'charges of account acct_down in [2026-03-01T00:00:00.000Z, 2026-03-02T00:00:00.000Z) could not be listed completely',
    );
    expect(error.message).toContain('gave up after 3 attempts');
    expect(l.counters.snapshot()).toMatchObject({ requests: 3, serverErrors: 3, retries: 2, pages: 0 });
  });

  it('raises IncompleteWindowError when the outage starts half-way through', async () => {
    double.seedCharges('acct_half', 3_000, { from: FROM, to: TO, seed: 11 });
    const l = lister({ retry: { maxAttempts: 2 }, concurrency: 2 });
    const listing = l.list('acct_half', WINDOW);
    const first = await listing.next();
    expect(first.done).toBe(false);
    double.setFaults({ rate500: 1, endpoints: [LIST] });
    const error = await failure(
      (async () => {
        for await (const batch of listing) expect(batch.charges.length).toBeGreaterThan(0);
      })(),
    );
    expect(error).toBeInstanceOf(IncompleteWindowError);
    expect((error as IncompleteWindowError).window).toEqual({ gte: FROM_S, lt: TO_S });
  });

  it('reports a malformed charge instead of dropping it', async () => {
    const good = double.createCharge('acct_bad', { created: FROM_S + 100 }).id;
    const bad = double.createCharge('acct_bad', { created: FROM_S + 200, omitFields: ['currency'] }).id;
    const { ids, malformed } = await listAll(lister(), 'acct_bad');
    expect(ids).toEqual([good]);
    expect(malformed).toEqual([{ id: bad, account: 'acct_bad', problem: 'missing currency', created: FROM_S + 200 }]);
  });

  it('reads the claim attribution from metadata, and payment intents by id', async () => {
    double.clock.set(new Date((FROM_S + 3_600) * 1000));
    const stripe = createStripeClient({ apiKey: 'sk_test_lister', apiBase: double.url });
    const intent = await stripe.paymentIntents.create(
      {
        amount: 2500,
        currency: 'EUR',
        payment_method: 'pm_card_visa',
        confirm: true,
        metadata: { tenant_id: 'tenant-a', idempotency_key: 'order-9' },
      },
      { stripeAccount: 'acct_meta' },
    );
    double.createCharge('acct_meta', { created: FROM_S + 10 });
    const { charges } = await listAll(lister(), 'acct_meta');
    const byIntent = charges.find((c) => c.paymentIntent === intent.id);
    expect(byIntent).toMatchObject({
      amount: 2500,
      currency: 'eur',
      status: 'succeeded',
      tenantId: 'tenant-a',
      idempotencyKey: 'order-9',
    });
    expect(charges.find((c) => c.paymentIntent !== intent.id)).toMatchObject({ tenantId: null, idempotencyKey: null });
  });

  it('stops with a configuration error (exit 64) on an invalid key or a key that may not read charges', async () => {
    const invalid = await failure(listAll(lister({ apiKey: 'sk_test_wrong' }), 'acct_1'));
    expect(invalid).toBeInstanceOf(InvalidStripeKeyError);
    expect((invalid as InvalidStripeKeyError).exitCode).toBe(64);
    const forbidden = await failure(listAll(lister({ apiKey: 'rk_test_no_charges' }), 'acct_1'));
    expect(forbidden).toBeInstanceOf(MissingStripePermissionError);
    expect(forbidden.message).toContain('rak_charge_read');
    expect(double.counters.status(LIST, 401) + double.counters.status(LIST, 403)).toBe(2);
  });

  it('works with a read-only restricted key', async () => {
    const readOnly = await startStripeDouble({ keys: { permissions: { rk_test_reader: READ_ONLY_PERMISSIONS } } });
    try {
      readOnly.seedCharges(null, 300, { from: FROM, to: TO });
      const stripe = createStripeClient({ apiKey: 'rk_test_reader', apiBase: readOnly.url });
      const l = createChargeLister({ stripe, budget: new RateBudget({ ratePerSecond: 1_000, burst: 10 }) });
      const ids: string[] = [];
      for await (const batch of l.list(null, WINDOW)) ids.push(...batch.charges.map((c) => c.id));
      expect(ids.sort()).toEqual(readOnly.chargeIds(null).sort());
    } finally {
      await readOnly.close();
    }
  });
});
