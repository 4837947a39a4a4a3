import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  READ_ONLY_PERMISSIONS,
  startStripeDouble,
  type ChargeJson,
  type StripeDouble,
} from '../../testkit/stripe-double/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { STRIPE_DOUBLE_BIN } from '../support/cli.js';

const NOW = new Date('2026-03-10T12:00:00Z');
const NOW_S = NOW.getTime() / 1000;
const READ_ONLY_KEY = 'rk_test_readonly';

let double: StripeDouble;
let stripe: Stripe;

beforeAll(async () => {
  double = await startStripeDouble({ keys: { permissions: { [READ_ONLY_KEY]: READ_ONLY_PERMISSIONS } } });
  stripe = createStripeClient({ apiKey: 'sk_test_double', apiBase: double.url, maxNetworkRetries: 0 });
});
afterAll(async () => {
  await double.close();
});
beforeEach(() => {
  double.reset();
  double.clock.set(NOW);
});

const visa = (overrides: Partial<Stripe.PaymentIntentCreateParams> = {}): Stripe.PaymentIntentCreateParams => ({
  amount: 1999,
  currency: 'usd',
  payment_method: 'pm_card_visa',
  confirm: true,
  automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
  metadata: { tenant_id: 'tenant-a', idempotency_key: 'order-1' },
  expand: ['latest_charge'],
  ...overrides,
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

async function raw(path: string, init: RequestInit = {}) {
  const response = await fetch(`${double.url}${path}`, init);
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as { error?: Record<string, unknown> },
  };
}

describe('payment intents', () => {
  it('confirms with pm_card_visa, creating a charge that copies the metadata, expanded on request', async () => {
    const intent = await stripe.paymentIntents.create(visa(), { idempotencyKey: 'k-visa' });
    expect(intent.status).toBe('succeeded');
    expect(intent.amount_received).toBe(1999);
    const charge = intent.latest_charge as Stripe.Charge;
    expect(charge).toMatchObject({
      object: 'charge',
      status: 'succeeded',
      amount: 1999,
      amount_captured: 1999,
      currency: 'usd',
      captured: true,
      paid: true,
      payment_intent: intent.id,
      created: NOW_S,
      metadata: { tenant_id: 'tenant-a', idempotency_key: 'order-1' },
    });
    expect(double.charge(charge.id)?.metadata).toEqual({ tenant_id: 'tenant-a', idempotency_key: 'order-1' });
  });

  it('names the charge by id when latest_charge is not expanded, and expands it on retrieve', async () => {
    const intent = await stripe.paymentIntents.create(visa({ expand: undefined }));
    expect(typeof intent.latest_charge).toBe('string');
    const again = await stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge'] });
    expect((again.latest_charge as Stripe.Charge).id).toBe(intent.latest_charge);
  });

  it('does not charge without confirm', async () => {
    const intent = await stripe.paymentIntents.create(visa({ confirm: false }));
    expect(intent.status).toBe('requires_confirmation');
    expect(intent.latest_charge).toBeNull();
    expect(double.chargeCount()).toBe(0);
  });

  it.each([
    ['pm_card_chargeDeclined', 'generic_decline', 'Your card was declined.'],
    ['pm_card_chargeDeclinedInsufficientFunds', 'insufficient_funds', 'Your card has insufficient funds.'],
  ])(
    'declines %s with card_declined / %s and records the failed charge',
    async (paymentMethod, declineCode, message) => {
      const error = await rejection(stripe.paymentIntents.create(visa({ payment_method: paymentMethod })));
      expect(error).toBeInstanceOf(Stripe.errors.StripeCardError);
      expect(error.statusCode).toBe(402);
      expect(error.rawType).toBe('card_error');
      expect(error.code).toBe('card_declined');
      expect(error.decline_code).toBe(declineCode);
      expect(error.message).toBe(message);
      expect(error.charge).toMatch(/^ch_/);
      expect(error.payment_intent).toMatchObject({
        object: 'payment_intent',
        status: 'requires_payment_method',
        latest_charge: error.charge,
      });
      expect(double.charge(error.charge as string)).toMatchObject({
        status: 'failed',
        captured: false,
        paid: false,
        failure_code: 'card_declined',
        metadata: { tenant_id: 'tenant-a', idempotency_key: 'order-1' },
      });
    },
  );

  it('answers requires_action without a charge for a card that needs authentication', async () => {
    const intent = await stripe.paymentIntents.create(visa({ payment_method: 'pm_card_authenticationRequired' }));
    expect(intent.status).toBe('requires_action');
    expect(intent.latest_charge).toBeNull();
  });

  it('rejects a missing amount and an unknown payment method as Stripe does', async () => {
    const missing = await rejection(
      stripe.paymentIntents.create({ currency: 'usd' } as Stripe.PaymentIntentCreateParams),
    );
    expect([missing.statusCode, missing.code, missing.param]).toEqual([400, 'parameter_missing', 'amount']);
    const unknown = await rejection(stripe.paymentIntents.create(visa({ payment_method: 'pm_nope' })));
    expect([unknown.statusCode, unknown.code]).toEqual([400, 'resource_missing']);
  });
});

describe('idempotency keys', () => {
  it('replays the stored answer for the same key and body, with Idempotent-Replayed', async () => {
    const first = await stripe.paymentIntents.create(visa(), { idempotencyKey: 'same' });
    const second = await stripe.paymentIntents.create(visa(), { idempotencyKey: 'same' });
    expect(second.id).toBe(first.id);
    expect((second.latest_charge as Stripe.Charge).id).toBe((first.latest_charge as Stripe.Charge).id);
    expect(second.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(first.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    expect(double.chargeCount()).toBe(1);
    expect(double.paymentIntents(null)).toHaveLength(1);
  });

  it('replays a decline too, without charging again', async () => {
    const params = visa({ payment_method: 'pm_card_chargeDeclined' });
    const first = await rejection(stripe.paymentIntents.create(params, { idempotencyKey: 'declined' }));
    const second = await rejection(stripe.paymentIntents.create(params, { idempotencyKey: 'declined' }));
    expect(second.charge).toBe(first.charge);
    expect(second.headers?.['idempotent-replayed']).toBe('true');
    expect(double.chargeCount()).toBe(1);
  });

  it('refuses the same key with another body: idempotency_error', async () => {
    await stripe.paymentIntents.create(visa(), { idempotencyKey: 'reused' });
    const error = await rejection(stripe.paymentIntents.create(visa({ amount: 2500 }), { idempotencyKey: 'reused' }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect(error.statusCode).toBe(400);
    expect(error.message).toContain("Try using a key other than 'reused'");
    expect(double.chargeCount()).toBe(1);
  });

  it('scopes keys per account', async () => {
    const platform = await stripe.paymentIntents.create(visa(), { idempotencyKey: 'scoped' });
    const connected = await stripe.paymentIntents.create(visa(), { idempotencyKey: 'scoped', stripeAccount: 'acct_1' });
    expect(connected.id).not.toBe(platform.id);
    expect(double.chargeIds('acct_1')).toHaveLength(1);
    expect(double.chargeIds(null)).toHaveLength(1);
  });

  it('forgets keys after 24 hours on the double clock', async () => {
    const first = await stripe.paymentIntents.create(visa(), { idempotencyKey: 'ages' });
    double.clock.advance(24 * 60 * 60 * 1000 - 1_000);
    expect((await stripe.paymentIntents.create(visa(), { idempotencyKey: 'ages' })).id).toBe(first.id);
    double.clock.advance(1_000);
    expect((await stripe.paymentIntents.create(visa(), { idempotencyKey: 'ages' })).id).not.toBe(first.id);
  });

  it('does not store requests rejected before execution', async () => {
    await rejection(
      stripe.paymentIntents.create({ currency: 'usd' } as Stripe.PaymentIntentCreateParams, {
        idempotencyKey: 'invalid-first',
      }),
    );
    const intent = await stripe.paymentIntents.create(visa(), { idempotencyKey: 'invalid-first' });
    expect(intent.status).toBe('succeeded');
  });
});

describe('listing and retrieving charges', () => {
  // Six charges: two seconds with three each, so paging has to cut inside one second.
  const seed = (account: string | null = null) =>
    [0, 0, 0, 1, 1, 1].map(
      (offset, i) => double.createCharge(account, { created: NOW_S + offset, amount: 100 + i }).id,
    );

  const all = async (params: Stripe.ChargeListParams, options?: Stripe.RequestOptions) => {
    const ids: string[] = [];
    let page = await stripe.charges.list(params, options);
    ids.push(...page.data.map((c) => c.id));
    while (page.has_more) {
      page = await stripe.charges.list({ ...params, starting_after: page.data[page.data.length - 1]?.id }, options);
      ids.push(...page.data.map((c) => c.id));
    }
    return ids;
  };

  it('lists newest first with a list envelope, 10 by default', async () => {
    seed();
    const page = await stripe.charges.list();
    expect(page.object).toBe('list');
    expect(page.url).toBe('/v1/charges');
    expect(page.has_more).toBe(false);
    const created = page.data.map((c) => c.created);
    expect(created).toEqual([...created].sort((a, b) => b - a));
    expect(page.data).toHaveLength(6);
    double.seedCharges(null, 20, { from: NOW_S - 100, to: NOW_S - 50 });
    expect((await stripe.charges.list()).data).toHaveLength(10);
  });

  it('pages exactly with starting_after, also inside one second', async () => {
    const ids = seed();
    const paged = await all({ limit: 2 });
    expect(paged).toHaveLength(6);
    expect(new Set(paged)).toEqual(new Set(ids));
    const first = await stripe.charges.list({ limit: 2 });
    expect(first.has_more).toBe(true);
  });

  it('pages backwards with ending_before', async () => {
    seed();
    const forward = await all({ limit: 100 });
    const before = await stripe.charges.list({ limit: 2, ending_before: forward[4] });
    expect(before.data.map((c) => c.id)).toEqual([forward[2], forward[3]]);
    expect(before.has_more).toBe(true);
    const top = await stripe.charges.list({ limit: 5, ending_before: forward[2] });
    expect(top.data.map((c) => c.id)).toEqual([forward[0], forward[1]]);
    expect(top.has_more).toBe(false);
  });

  it('filters on created with gte/gt/lte/lt', async () => {
    seed();
    expect(await all({ created: { gte: NOW_S + 1 } })).toHaveLength(3);
    expect(await all({ created: { gt: NOW_S } })).toHaveLength(3);
    expect(await all({ created: { lt: NOW_S + 1 } })).toHaveLength(3);
    expect(await all({ created: { lte: NOW_S + 1, gte: NOW_S } })).toHaveLength(6);
    expect(await all({ created: NOW_S })).toHaveLength(3);
  });

  it('keeps accounts apart', async () => {
    const mine = seed('acct_a');
    seed('acct_b');
    expect(new Set(await all({ limit: 100 }, { stripeAccount: 'acct_a' }))).toEqual(new Set(mine));
    expect(await all({ limit: 100 })).toEqual([]);
    const error = await rejection(stripe.charges.retrieve(mine[0] as string, {}, { stripeAccount: 'acct_b' }));
    expect(error.statusCode).toBe(404);
  });

  it('rejects a limit outside 1..100 and an unknown cursor', async () => {
    for (const limit of [0, 101]) {
      const error = await rejection(stripe.charges.list({ limit }));
      expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
      expect([error.statusCode, error.param]).toEqual([400, 'limit']);
    }
    const cursor = await rejection(stripe.charges.list({ starting_after: 'ch_missing' }));
    expect([cursor.statusCode, cursor.code, cursor.param]).toEqual([400, 'resource_missing', 'starting_after']);
  });

  it('retrieves a charge and a payment intent, and answers 404 resource_missing for unknown ones', async () => {
    const intent = await stripe.paymentIntents.create(visa({ expand: undefined }));
    expect((await stripe.charges.retrieve(intent.latest_charge as string)).payment_intent).toBe(intent.id);
    expect((await stripe.paymentIntents.retrieve(intent.id)).id).toBe(intent.id);
    for (const request of [stripe.charges.retrieve('ch_missing'), stripe.paymentIntents.retrieve('pi_missing')]) {
      const error = await rejection(request);
      expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
      expect([error.statusCode, error.code, error.rawType]).toEqual([404, 'resource_missing', 'invalid_request_error']);
      expect(error.message).toMatch(/^No such (charge|payment_intent): '(ch|pi)_missing'$/);
    }
  });
});

describe('refunds and other changes', () => {
  it('refunds part, then the rest, by charge and by payment intent', async () => {
    const intent = await stripe.paymentIntents.create(visa({ amount: 1000, expand: undefined }));
    const chargeId = intent.latest_charge as string;
    const partial = await stripe.refunds.create({ charge: chargeId, amount: 300 });
    expect(partial).toMatchObject({ object: 'refund', amount: 300, charge: chargeId, status: 'succeeded' });
    expect(await stripe.charges.retrieve(chargeId)).toMatchObject({ amount_refunded: 300, refunded: false });
    await stripe.refunds.create({ payment_intent: intent.id });
    expect(await stripe.charges.retrieve(chargeId)).toMatchObject({ amount_refunded: 1000, refunded: true });
    const again = await rejection(stripe.refunds.create({ charge: chargeId }));
    expect([again.statusCode, again.code]).toEqual([400, 'charge_already_refunded']);
  });

  it('refuses a refund larger than what is left', async () => {
    const charge = double.createCharge(null, { amount: 500 });
    const error = await rejection(stripe.refunds.create({ charge: charge.id, amount: 501 }));
    expect([error.statusCode, error.code]).toEqual([400, 'amount_too_large']);
  });

  it('applies direct mutations: a charge made outside, a refund, a dispute', async () => {
    const outside = double.createCharge('acct_x', { amount: 4200, currency: 'EUR', created: NOW_S - 60 });
    expect(outside).toMatchObject({ currency: 'eur', metadata: {}, status: 'succeeded', created: NOW_S - 60 });
    expect(outside.payment_intent).toMatch(/^pi_/);
    double.refund(outside.id, 200);
    double.dispute(outside.id);
    const seen = await stripe.charges.retrieve(outside.id, {}, { stripeAccount: 'acct_x' });
    expect(seen).toMatchObject({ amount_refunded: 200, disputed: true });
    const attributed = double.createCharge(null, {
      metadata: { tenant_id: 't', idempotency_key: 'k' },
      withPaymentIntent: false,
    });
    expect(attributed).toMatchObject({ metadata: { tenant_id: 't', idempotency_key: 'k' }, payment_intent: null });
    expect(double.refunds(outside.id)).toHaveLength(1);
  });
});

describe('authentication', () => {
  it('answers 401 to an unknown key', async () => {
    const strict = await startStripeDouble({ keys: { acceptedKeys: ['sk_test_good'] } });
    try {
      const client = createStripeClient({ apiKey: 'sk_test_unknown1234', apiBase: strict.url, maxNetworkRetries: 0 });
      const error = await rejection(client.charges.list());
      expect(error).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
      expect(error.statusCode).toBe(401);
      expect(error.message).toBe('Invalid API Key provided: sk_test_*******1234');
      const good = createStripeClient({ apiKey: 'sk_test_good', apiBase: strict.url, maxNetworkRetries: 0 });
      expect((await good.charges.list()).data).toEqual([]);
    } finally {
      await strict.close();
    }
  });

  it('answers 401 without a key, and to a live key by default', async () => {
    const missing = await raw('/v1/charges');
    expect(missing.status).toBe(401);
    expect(missing.body.error).toMatchObject({ type: 'invalid_request_error' });
    expect(String(missing.body.error?.message)).toContain('You did not provide an API key');
    const live = await raw('/v1/charges', { headers: { Authorization: 'Bearer sk_live_abcdef' } });
    expect(live.status).toBe(401);
  });

  it('lets a read-only restricted key read and answers 403 to its writes', async () => {
    const readOnly = createStripeClient({ apiKey: READ_ONLY_KEY, apiBase: double.url, maxNetworkRetries: 0 });
    expect((await readOnly.charges.list()).data).toEqual([]);
    const error = await rejection(readOnly.paymentIntents.create(visa()));
    expect(error).toBeInstanceOf(Stripe.errors.StripePermissionError);
    expect(error.statusCode).toBe(403);
    expect(error.message).toContain("Having the 'rak_payment_intent_write' permission");
    expect(error.message).not.toContain(READ_ONLY_KEY);
  });
});

describe('control hooks', () => {
  it('counts requests per endpoint and status', async () => {
    await stripe.charges.list();
    await stripe.charges.list();
    await rejection(stripe.charges.retrieve('ch_missing'));
    expect(double.counters.get('GET /v1/charges')).toBe(2);
    expect(double.counters.get('GET /v1/charges/:id')).toBe(1);
    expect(double.counters.status('GET /v1/charges/:id', 404)).toBe(1);
  });

  it('limits an endpoint to a request rate, answering 429 rate_limit_error without Stripe-Should-Retry', async () => {
    // So slow a refill that no stall of a loaded machine can earn a third token mid-test.
    double.setRateLimit('GET /v1/charges', { perSecond: 0.001, burst: 2 });
    const answers = [];
    for (let i = 0; i < 3; i += 1)
      answers.push(await raw('/v1/charges', { headers: { Authorization: 'Bearer sk_test_x' } }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    const limited = answers[2];
    expect(limited?.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit' });
    expect(limited?.headers.get('stripe-should-retry')).toBeNull();
    const error = await rejection(stripe.charges.list());
    expect(error).toBeInstanceOf(Stripe.errors.StripeRateLimitError);
    // Other endpoints are not limited.
    await rejection(stripe.charges.retrieve('ch_missing')).then((e) => expect(e.statusCode).toBe(404));
  });

  it('injects faults by rate, repeatably with a seed', async () => {
    const run = async () => {
      double.reset();
      double.setFaults({ rate429: 0.3, rate500: 0.3, endpoints: ['GET /v1/charges'], seed: 42 });
      const statuses: number[] = [];
      for (let i = 0; i < 30; i += 1)
        statuses.push((await raw('/v1/charges', { headers: { Authorization: 'Bearer sk_test_x' } })).status);
      return statuses;
    };
    const first = await run();
    expect(first).toContain(429);
    expect(first).toContain(500);
    expect(first).toContain(200);
    expect(await run()).toEqual(first);
    expect(double.injectedFaults['429'] + double.injectedFaults['500']).toBe(first.filter((s) => s !== 200).length);
  });

  it('resets connections when asked to', async () => {
    double.setFaults({ rateReset: 1, seed: 1 });
    const error = await rejection(stripe.charges.list());
    expect(error).toBeInstanceOf(Stripe.errors.StripeConnectionError);
    expect(double.counters.status('GET /v1/charges', 'reset')).toBeGreaterThanOrEqual(1);
  });

  it('can lose the answer after executing: the charge exists though the caller saw an error', async () => {
    double.setFaults({ rate500: 1, phase: 'after', endpoints: ['POST /v1/payment_intents'] });
    const error = await rejection(stripe.paymentIntents.create(visa()));
    expect(error.statusCode).toBe(500);
    expect(double.chargeCount()).toBe(1);
  });

  it('seeds charges in bulk, in list order, inside the window', async () => {
    const result = double.seedCharges('acct_bulk', 5_000, {
      from: NOW_S - 3_600,
      to: NOW_S,
      metadata: { tenant_id: 'seeded' },
    });
    expect(result).toMatchObject({ count: 5_000, from: NOW_S - 3_600, to: NOW_S });
    const charges = double.listCharges('acct_bulk');
    expect(charges).toHaveLength(5_000);
    expect(new Set(charges.map((c) => c.id)).size).toBe(5_000);
    expect(
      charges.every((c) => c.created >= NOW_S - 3_600 && c.created < NOW_S && c.metadata.tenant_id === 'seeded'),
    ).toBe(true);
    for (let i = 1; i < charges.length; i += 1) {
      const [a, b] = [charges[i - 1] as ChargeJson, charges[i] as ChargeJson];
      expect(a.created > b.created || (a.created === b.created && a.id > b.id)).toBe(true);
    }
    const page = await stripe.charges.list({ limit: 100 }, { stripeAccount: 'acct_bulk' });
    expect(page.data.map((c) => c.id)).toEqual(charges.slice(0, 100).map((c) => c.id));
  });
});

describe('standalone', () => {
  it('listens on the port it is given and prints its URL', async () => {
    const child = spawn(process.execPath, [STRIPE_DOUBLE_BIN, '--port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const lines = createInterface({ input: child.stdout });
      const [url] = (await once(lines, 'line')) as [string];
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const client = createStripeClient({ apiKey: 'sk_test_standalone', apiBase: url, maxNetworkRetries: 0 });
      expect((await client.charges.list()).object).toBe('list');
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });

  it('stops on SIGTERM, as `kill $!` sends it to the binary run in the background: exit 0, the port closed', async () => {
    const child = spawn(process.execPath, [STRIPE_DOUBLE_BIN, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    const [url] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
    child.kill('SIGTERM');
    expect(await exited).toEqual([0, null]);
    const refused = await fetch(`${url}/v1/charges`).then(
      () => false,
      () => true,
    );
    expect(refused).toBe(true);
  });
});
