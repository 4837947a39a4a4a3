import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { STRIPE_DOUBLE_BIN } from '../support/cli.js';

// The double as a Connect platform, through the real SDK: connected accounts (listed,
// removed, revoked), Stripe's two rate limits, and the counters a benchmark asserts on.
const NOW = new Date('2026-03-10T12:00:00Z');
const NOW_S = NOW.getTime() / 1000;

let double: StripeDouble;
let stripe: Stripe;

beforeAll(async () => {
  double = await startStripeDouble();
  stripe = createStripeClient({ apiKey: 'sk_test_platform_4242', apiBase: double.url, maxNetworkRetries: 0 });
});
afterAll(async () => {
  await double.close();
});
beforeEach(() => {
  double.reset();
  double.clock.set(NOW);
});

async function rejection(promise: Promise<unknown>): Promise<InstanceType<typeof Stripe.errors.StripeError>> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Stripe.errors.StripeError) return error;
    throw error;
  }
  throw new Error('expected Stripe to reject the request');
}

async function raw(path: string, account?: string, key = 'sk_test_raw') {
  const headers: Record<string, string> = { Authorization: `Bearer ${key}` };
  if (account) headers['Stripe-Account'] = account;
  const response = await fetch(`${double.url}${path}`, { headers });
  return { status: response.status, headers: response.headers, body: (await response.json()) as { error?: object } };
}

/** Every connected account the listing gives, 2 a page. */
async function allAccounts(params: Stripe.AccountListParams = {}): Promise<string[]> {
  const ids: string[] = [];
  let page = await stripe.accounts.list({ limit: 2, ...params });
  ids.push(...page.data.map((a) => a.id));
  while (page.has_more) {
    page = await stripe.accounts.list({ limit: 2, ...params, starting_after: page.data[page.data.length - 1]?.id });
    ids.push(...page.data.map((a) => a.id));
  }
  return ids;
}

describe('connected accounts', () => {
  it('lists them newest first, with paging both ways and a created filter', async () => {
    const ids = [];
    for (let i = 0; i < 5; i += 1) {
      ids.push(double.addAccount({ email: `shop${i}@example.com` }).id);
      if (i % 2 === 1) double.clock.advance(1_000);
    }
    expect(ids.every((id) => /^acct_[A-Za-z0-9]{16}$/.test(id))).toBe(true);
    expect(await allAccounts()).toEqual([...ids].reverse());
    const page = await stripe.accounts.list({ limit: 2, ending_before: ids[1] });
    expect(page.data.map((a) => a.id)).toEqual([ids[3], ids[2]]);
    expect(page.has_more).toBe(true);
    expect(await allAccounts({ created: { gte: NOW_S + 1 } })).toEqual([ids[4], ids[3], ids[2]]);
    expect(page).toMatchObject({ object: 'list', url: '/v1/accounts' });
  });

  it('renders an account with its settlement currency and payout schedule; GET /v1/account is the caller’s own', async () => {
    double.addAccount({ id: 'acct_1Shop', defaultCurrency: 'EUR', country: 'de', payoutInterval: 'manual' });
    const account = await stripe.accounts.retrieve('acct_1Shop');
    expect(account).toMatchObject({
      id: 'acct_1Shop',
      object: 'account',
      created: NOW_S,
      country: 'DE',
      default_currency: 'eur',
      charges_enabled: true,
      payouts_enabled: true,
      type: 'standard',
      settings: { payouts: { schedule: { interval: 'manual', delay_days: 2 } } },
    });
    const platform = await stripe.accounts.retrieveCurrent();
    expect(platform).toMatchObject({ object: 'account', default_currency: 'usd' });
    expect(platform.id).toBe(double.account(null)?.id);
    expect((await stripe.accounts.retrieveCurrent({}, { stripeAccount: 'acct_1Shop' })).id).toBe('acct_1Shop');
    double.configureAccount(null, { defaultCurrency: 'gbp' });
    expect((await stripe.accounts.retrieveCurrent()).default_currency).toBe('gbp');
    expect(() => double.addAccount({ id: 'acct_1Shop' })).toThrow(/already has account/);
  });

  it('lists an account from its first charge, and only to the platform', async () => {
    double.createCharge('acct_1Charged', { amount: 500 });
    expect(await allAccounts()).toEqual(['acct_1Charged']);
    expect((await stripe.accounts.list({}, { stripeAccount: 'acct_1Charged' })).data).toEqual([]);
  });

  it('a removed account is no longer listed but still served; restored, it is listed again', async () => {
    const [kept, removed] = [double.addAccount().id, double.addAccount().id];
    double.createCharge(removed, { amount: 700 });
    double.removeAccount(removed);
    expect(await allAccounts()).toEqual([kept]);
    expect((await stripe.charges.list({}, { stripeAccount: removed })).data).toHaveLength(1);
    expect((await stripe.accounts.retrieve(removed)).id).toBe(removed);
    double.restoreAccount(removed);
    expect(await allAccounts()).toEqual([removed, kept]);
  });

  it('a revoked account is not listed and every request for it answers Stripe’s 403; restored, it is served', async () => {
    const id = double.addAccount().id;
    double.createCharge(id, { amount: 700 });
    double.revokeAccount(id);
    expect(await allAccounts()).toEqual([]);
    const message = `The provided key 'sk_test_*********4242' does not have access to account '${id}' (or that account does not exist). Application access may have been revoked.`;
    for (const request of [
      () => stripe.charges.list({}, { stripeAccount: id }),
      () => stripe.events.list({}, { stripeAccount: id }),
      () => stripe.refunds.list({}, { stripeAccount: id }),
      () => stripe.payouts.list({}, { stripeAccount: id }),
      () => stripe.accounts.retrieve(id),
    ]) {
      const error = await rejection(request());
      expect(error).toBeInstanceOf(Stripe.errors.StripePermissionError);
      expect([error.statusCode, error.rawType, error.code, error.message]).toEqual([
        403,
        'invalid_request_error',
        'account_invalid',
        message,
      ]);
    }
    expect((await raw('/v1/charges', id)).body).toMatchObject({ error: { type: 'invalid_request_error' } });
    double.restoreAccount(id);
    expect((await stripe.charges.list({}, { stripeAccount: id })).data).toHaveLength(1);
  });

  it('serves an unknown Stripe-Account as an empty account by default, or answers 403 when told to', async () => {
    expect((await stripe.charges.list({}, { stripeAccount: 'acct_1Stranger' })).data).toEqual([]);
    double.setUnknownAccounts('forbid');
    const error = await rejection(stripe.charges.list({}, { stripeAccount: 'acct_1Stranger' }));
    expect([error.statusCode, error.code]).toEqual([403, 'account_invalid']);
    expect((await rejection(stripe.accounts.retrieve('acct_1Stranger'))).statusCode).toBe(403);
    double.addAccount({ id: 'acct_1Stranger' });
    expect((await stripe.charges.list({}, { stripeAccount: 'acct_1Stranger' })).data).toEqual([]);
  });

  it('seeds 2,000 accounts, 100 of them with 20 charges, cheaply; the SDK pages through them', async () => {
    const started = performance.now();
    const ids = double.seedAccounts(2_000, {
      chargesEach: 20,
      withCharges: 100,
      charges: { from: NOW_S - 3_600, to: NOW_S, metadata: { tenant_id: 'bench' } },
    });
    const ms = performance.now() - started;
    console.log(`seedAccounts: 2,000 accounts and 2,000 charges in ${Math.round(ms)} ms`);
    expect(new Set(ids).size).toBe(2_000);
    expect(double.chargeCount(ids[0] as string)).toBe(20);
    expect(double.chargeCount(ids[99] as string)).toBe(20);
    expect(double.chargeCount(ids[100] as string)).toBe(0);
    const listed: string[] = [];
    for await (const account of stripe.accounts.list({ limit: 100 })) listed.push(account.id);
    expect(listed).toEqual([...ids].reverse());
    const charges = await stripe.charges.list({ limit: 100 }, { stripeAccount: ids[5] as string });
    expect(charges.data).toHaveLength(20);
    expect(charges.data.every((c) => c.metadata.tenant_id === 'bench')).toBe(true);
    expect(ms).toBeLessThan(5_000);
  });
});

describe('rate limits', () => {
  // Refills so slow that no stall of a loaded machine earns a token mid-test.
  const strict = (burst: number) => ({ perSecond: 0.001, burst });

  it('limits each account and endpoint: 429 endpoint-rate, other accounts and endpoints unaffected', async () => {
    double.setAccountRateLimit(strict(2));
    const statuses = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await raw('/v1/charges', 'acct_1A')).status);
    expect(statuses).toEqual([200, 200, 429]);
    const limited = await raw('/v1/charges', 'acct_1A');
    expect(limited.body).toMatchObject({ error: { type: 'rate_limit_error', code: 'rate_limit' } });
    expect(limited.headers.get('stripe-rate-limited-reason')).toBe('endpoint-rate');
    expect(limited.headers.get('stripe-should-retry')).toBeNull();
    expect(limited.headers.get('retry-after')).toBeNull();
    expect((await raw('/v1/charges', 'acct_1B')).status).toBe(200);
    expect((await raw('/v1/charges')).status).toBe(200);
    expect((await raw('/v1/events', 'acct_1A')).status).toBe(200);
    const error = await rejection(stripe.charges.list({}, { stripeAccount: 'acct_1A' }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    expect(double.counters.rateLimited('endpoint-rate')).toBe(3);
  });

  it('gives one endpoint its own per-account limit', async () => {
    double.setAccountRateLimit(strict(5));
    double.setAccountRateLimit(strict(1), 'GET /v1/charges/search');
    const search = '/v1/charges/search?query=amount%3E0';
    expect([(await raw(search, 'acct_1A')).status, (await raw(search, 'acct_1A')).status]).toEqual([200, 429]);
    expect((await raw('/v1/charges', 'acct_1A')).status).toBe(200);
    double.setAccountRateLimit(null, 'GET /v1/charges/search');
    expect((await raw(search, 'acct_1A')).status).toBe(200);
  });

  it('limits all requests of one key over every account: 429 global-rate; another key has its own budget', async () => {
    double.setGlobalRateLimit(strict(3));
    const statuses = [];
    for (const account of ['acct_1A', 'acct_1B', undefined, 'acct_1C'])
      statuses.push((await raw('/v1/charges', account)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await raw('/v1/events', 'acct_1D');
    expect([limited.status, limited.headers.get('stripe-rate-limited-reason')]).toEqual([429, 'global-rate']);
    expect((await raw('/v1/charges', 'acct_1A', 'sk_test_other')).status).toBe(200);
    expect(double.counters.rateLimited('global-rate')).toBe(2);
    double.setGlobalRateLimit(null);
    expect((await raw('/v1/charges')).status).toBe(200);
  });

  it('a refused request takes no token: the per-account budget is intact behind a global refusal', async () => {
    double.setGlobalRateLimit(strict(1));
    double.setAccountRateLimit(strict(1));
    expect((await raw('/v1/charges', 'acct_1A')).status).toBe(200);
    expect((await raw('/v1/charges', 'acct_1B')).headers.get('stripe-rate-limited-reason')).toBe('global-rate');
    double.setGlobalRateLimit(null);
    expect((await raw('/v1/charges', 'acct_1B')).status).toBe(200);
    expect((await raw('/v1/charges', 'acct_1A')).headers.get('stripe-rate-limited-reason')).toBe('endpoint-rate');
  });

  it('takes both limits as options, and a number as requests per second', async () => {
    const limited = await startStripeDouble({ accountRateLimit: 25, globalRateLimit: { perSecond: 0.001, burst: 1 } });
    try {
      const client = createStripeClient({ apiKey: 'sk_test_x', apiBase: limited.url, maxNetworkRetries: 0 });
      await client.charges.list();
      expect((await rejection(client.charges.list())).statusCode).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe('the double as a process', () => {
  it('enforces --account-rate, and refuses a rate that is not positive', async () => {
    const child = spawn(process.execPath, [STRIPE_DOUBLE_BIN, '--port', '0', '--account-rate', '0.001'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const [url] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      const get = async (account: string) => {
        const headers = { Authorization: 'Bearer sk_test_process', 'Stripe-Account': account };
        const response = await fetch(`${url}/v1/charges`, { headers });
        await response.arrayBuffer();
        return [response.status, response.headers.get('stripe-rate-limited-reason')];
      };
      expect([await get('acct_1A'), await get('acct_1A'), await get('acct_1B')]).toEqual([
        [200, null],
        [429, 'endpoint-rate'],
        [200, null],
      ]);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    const bad = spawn(process.execPath, [STRIPE_DOUBLE_BIN, '--port', '0', '--global-rate', '0'], { stdio: 'ignore' });
    const [code] = (await once(bad, 'exit')) as [number];
    expect(code).toBe(64);
  });
});

describe('counters', () => {
  it('counts requests per account and endpoint, and the answers per account', async () => {
    double.setAccountRateLimit({ perSecond: 0.001, burst: 1 });
    await raw('/v1/charges', 'acct_1Idle');
    await raw('/v1/events', 'acct_1Idle');
    await raw('/v1/charges', 'acct_1Busy');
    await raw('/v1/charges', 'acct_1Busy');
    await raw('/v1/charges');
    expect(double.counters.account('acct_1Idle')).toBe(2);
    expect(double.counters.account('acct_1Busy', 'GET /v1/charges')).toBe(2);
    expect(double.counters.account(null)).toBe(1);
    expect(double.counters.account('acct_1Never')).toBe(0);
    expect(double.counters.accounts()).toEqual([
      {
        account: 'acct_1Idle',
        requests: 2,
        endpoints: { 'GET /v1/charges': 1, 'GET /v1/events': 1 },
        statuses: { '200': 2 },
      },
      { account: 'acct_1Busy', requests: 2, endpoints: { 'GET /v1/charges': 2 }, statuses: { '200': 1, '429': 1 } },
      { account: null, requests: 1, endpoints: { 'GET /v1/charges': 1 }, statuses: { '200': 1 } },
    ]);
    expect([double.counters.statusTotal(429), double.counters.rateLimited()]).toEqual([1, 1]);
    double.counters.reset();
    expect(double.counters.accounts()).toEqual([]);
  });

  it('lists the 429s whose request was never asked again with another answer', async () => {
    double.setAccountRateLimit({ perSecond: 0.001, burst: 1 });
    await raw('/v1/charges?limit=5', 'acct_1A');
    await raw('/v1/charges?limit=5', 'acct_1A');
    await raw('/v1/charges?limit=5', 'acct_1A');
    await raw('/v1/events', 'acct_1B');
    await raw('/v1/events', 'acct_1B');
    expect(double.counters.unretried429s()).toEqual([
      { account: 'acct_1A', endpoint: 'GET /v1/charges', request: 'GET /v1/charges?limit=5 ', count: 2 },
      { account: 'acct_1B', endpoint: 'GET /v1/events', request: 'GET /v1/events ', count: 1 },
    ]);
    double.setAccountRateLimit(null);
    await raw('/v1/charges?limit=5', 'acct_1A');
    await raw('/v1/events?limit=1', 'acct_1B');
    expect(double.counters.unretried429s().map((u) => [u.account, u.count])).toEqual([['acct_1B', 1]]);
    await raw('/v1/events', 'acct_1B');
    expect(double.counters.unretried429s()).toEqual([]);
  });
});
