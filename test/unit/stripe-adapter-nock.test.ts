import nock from 'nock';
import { describe, expect, it } from 'vitest';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import {
  IncompleteWindowError,
  InvalidStripeKeyError,
  MissingStripePermissionError,
} from '../../src/providers/stripe/errors.js';
import { createChargeLister } from '../../src/providers/stripe/list-charges.js';
import { RateBudget } from '../../src/providers/stripe/rate-budget.js';
import { everyTestThroughNock, STRIPE_ORIGIN } from '../support/stripe-nock.js';
import { failure } from '../support/promises.js';

// SDK retries on, as in production: the lister must switch them off per request and retry itself.
const stripe = createStripeClient({ apiKey: 'sk_test_adapter', maxNetworkRetries: 2 });
const FROM = new Date('2026-03-10T00:00:00Z');
const TO = new Date('2026-03-11T00:00:00Z');
const POLICY = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1_000, maxRetryAfterMs: 60_000 };

const charge = (id: string) => ({
  id,
  object: 'charge',
  created: FROM.getTime() / 1000 + 60,
  amount: 1000,
  amount_captured: 1000,
  amount_refunded: 0,
  currency: 'usd',
  status: 'succeeded',
  captured: true,
  refunded: false,
  disputed: false,
  payment_intent: `pi_${id.slice(3)}`,
  metadata: {},
  livemode: false,
});
const page = (...ids: string[]) => ({ object: 'list', data: ids.map(charge), has_more: false, url: '/v1/charges' });
const errorBody = (type: string, message: string, code?: string) => ({
  error: { type, message, ...(code ? { code } : {}) },
});
const RATE_LIMITED = errorBody('rate_limit_error', 'Too many requests hit the API too quickly.', 'rate_limit');

let sleeps: number[];

function lister() {
  sleeps = [];
  return createChargeLister({
    stripe,
    // The budget's waits (a 429 pauses it) are not real either; only the retry sleeps are recorded.
    budget: new RateBudget({ ratePerSecond: 1_000, burst: 1_000, clock: () => 0, sleep: async () => undefined }),
    concurrency: 1,
    retry: POLICY,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
}

async function listAll(l: ReturnType<typeof lister>, account: string | null = null): Promise<string[]> {
  const ids: string[] = [];
  for await (const batch of l.list(account, { from: FROM, to: TO })) ids.push(...batch.charges.map((c) => c.id));
  return ids;
}

const charges = () => nock(STRIPE_ORIGIN).get('/v1/charges').query(true);

everyTestThroughNock();

describe('listing charges through the SDK: 429 and other transient failures', () => {
  it('asks for the window with created[gte]/[lt], 100 per page, on the connected account', async () => {
    const seen: { query: Record<string, unknown>; account: string | undefined }[] = [];
    nock(STRIPE_ORIGIN)
      .get('/v1/charges')
      .query((query) => {
        seen.push({ query, account: undefined });
        return true;
      })
      .reply(function () {
        const last = seen[seen.length - 1];
        if (last) last.account = String(this.req.headers['stripe-account']);
        return [200, page('ch_1')];
      });
    expect(await listAll(lister(), 'acct_42')).toEqual(['ch_1']);
    expect(seen).toEqual([
      {
        query: {
          'created[gte]': String(FROM.getTime() / 1000),
          'created[lt]': String(TO.getTime() / 1000),
          limit: '100',
        },
        account: 'acct_42',
      },
    ]);
  });

  it('retries a 429 with exponential backoff and counts it', async () => {
    charges().times(2).reply(429, RATE_LIMITED);
    charges().reply(200, page('ch_1', 'ch_2'));
    const l = lister();
    expect(await listAll(l)).toEqual(['ch_1', 'ch_2']);
    expect(l.counters.snapshot()).toMatchObject({ requests: 3, rateLimited: 2, retries: 2, pages: 1, charges: 2 });
    // Equal jitter with random() = 0.5: three quarters of 100 ms, then of 200 ms.
    expect(sleeps).toEqual([75, 150]);
    // A 429 also holds back the rest of the process, through the shared budget.
    expect((l.budget as RateBudget).stats().pauses).toBe(2);
  });

  it('honours Retry-After', async () => {
    charges().reply(429, RATE_LIMITED, { 'Retry-After': '7' });
    charges().reply(200, page('ch_1'));
    const l = lister();
    expect(await listAll(l)).toEqual(['ch_1']);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(7_000);
    expect(sleeps[0]).toBeLessThan(7_000 + POLICY.baseDelayMs);
  });

  it('gives up after the attempt bound and names the window', async () => {
    charges().times(POLICY.maxAttempts).reply(429, RATE_LIMITED);
    const l = lister();
    const error = await failure(listAll(l, 'acct_7'));
    expect(error).toBeInstanceOf(IncompleteWindowError);
    expect(error.message).toContain('account acct_7');
    expect(error.message).toContain('[2026-03-10T00:00:00.000Z, 2026-03-11T00:00:00.000Z)');
    expect(error.message).toContain(`gave up after ${POLICY.maxAttempts} attempts`);
    expect(error.message).toContain('HTTP 429');
    expect(l.counters.snapshot()).toMatchObject({ requests: 4, rateLimited: 4, retries: 3, pages: 0 });
    expect(sleeps).toHaveLength(3);
  });

  it('retries a 429 marked Stripe-Should-Retry: true itself, once per attempt, never through the SDK', async () => {
    charges().reply(429, RATE_LIMITED, { 'Stripe-Should-Retry': 'true' });
    charges().reply(200, page('ch_1'));
    const l = lister();
    expect(await listAll(l)).toEqual(['ch_1']);
    // Had the SDK retried on its own, the lister would have seen one request and no retry.
    expect(l.counters.snapshot()).toMatchObject({ requests: 2, rateLimited: 1, retries: 1 });
  });

  it('does not retry what Stripe marks Stripe-Should-Retry: false', async () => {
    charges().reply(500, errorBody('api_error', 'An unknown error occurred.'), { 'Stripe-Should-Retry': 'false' });
    const l = lister();
    const error = await failure(listAll(l));
    expect(error).toBeInstanceOf(IncompleteWindowError);
    expect(error.message).toContain('Stripe-Should-Retry: false');
    expect(l.counters.snapshot()).toMatchObject({ requests: 1, retries: 0, serverErrors: 1 });
  });

  it('retries 5xx answers and lost connections', async () => {
    charges().reply(500, errorBody('api_error', 'An unknown error occurred.'));
    // A network that fails for a moment; a refused connection is not retried (stripe-failure.test.ts).
    charges().replyWithError(Object.assign(new Error('connect EHOSTUNREACH 10.0.0.7:443'), { code: 'EHOSTUNREACH' }));
    charges().reply(200, page('ch_1'));
    const l = lister();
    expect(await listAll(l)).toEqual(['ch_1']);
    expect(l.counters.snapshot()).toMatchObject({ requests: 3, retries: 2, serverErrors: 1, connectionErrors: 1 });
  });

  it('does not retry an invalid request', async () => {
    charges().reply(400, errorBody('invalid_request_error', 'Received unknown parameter: foo', 'parameter_unknown'));
    const l = lister();
    const error = await failure(listAll(l));
    expect(error).toBeInstanceOf(IncompleteWindowError);
    expect(error.message).toContain('HTTP 400');
    expect(l.counters.requests).toBe(1);
  });
});

describe('listing charges through the SDK: key problems', () => {
  it('401: the key is invalid; a secret or restricted key with Charges read is needed (exit 64)', async () => {
    charges().reply(401, errorBody('invalid_request_error', 'Invalid API Key provided: sk_test_****pter'));
    const l = lister();
    const error = await failure(listAll(l));
    expect(error).toBeInstanceOf(InvalidStripeKeyError);
    expect((error as InvalidStripeKeyError).exitCode).toBe(64);
    expect(error.message).toMatch(/rejected the API key \(401\)/);
    expect(error.message).toContain('Invalid API Key provided: sk_test_****pter');
    expect(error.message).toContain('secret key (sk_…) or a restricted key (rk_…) with read access to Charges');
    expect(l.counters.snapshot()).toMatchObject({ requests: 1, retries: 0 });
  });

  it('403: names the missing permission (exit 64)', async () => {
    const stripeMessage =
      "The provided key 'rk_test_****1234' does not have the required permissions for this endpoint on account 'acct_1'. Having the 'rak_charge_read' permission would allow this request to continue.";
    charges().reply(403, errorBody('invalid_request_error', stripeMessage));
    const l = lister();
    const error = await failure(listAll(l, 'acct_1'));
    expect(error).toBeInstanceOf(MissingStripePermissionError);
    expect((error as MissingStripePermissionError).exitCode).toBe(64);
    expect(error.message).toContain('may not read charges of account acct_1 (403)');
    expect(error.message).toContain('Charges read permission (rak_charge_read)');
    expect(error.message).toContain(stripeMessage);
    expect(l.counters.requests).toBe(1);
  });
});
