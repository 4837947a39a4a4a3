import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { READ_ONLY_PERMISSIONS, startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createStripeClient, STRIPE_API_VERSION } from '../../src/providers/stripe/client.js';

// The double's events, refunds list and charge search through the real SDK.
const NOW = new Date('2026-03-10T12:00:00Z');
const NOW_S = NOW.getTime() / 1000;
const DAY_S = 24 * 60 * 60;
const READ_ONLY_KEY = 'rk_test_events_reader';

let double: StripeDouble;
let stripe: Stripe;

beforeAll(async () => {
  double = await startStripeDouble({ keys: { permissions: { [READ_ONLY_KEY]: READ_ONLY_PERMISSIONS } } });
  stripe = createStripeClient({ apiKey: 'sk_test_events', apiBase: double.url, maxNetworkRetries: 0 });
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

/** Every event the listing gives, following starting_after by hand. */
async function allEvents(
  params: Stripe.EventListParams = {},
  options?: Stripe.RequestOptions,
): Promise<Stripe.Event[]> {
  const events: Stripe.Event[] = [];
  let page = await stripe.events.list({ limit: 100, ...params }, options);
  events.push(...page.data);
  while (page.has_more) {
    page = await stripe.events.list(
      { limit: 100, ...params, starting_after: page.data[page.data.length - 1]?.id },
      options,
    );
    events.push(...page.data);
  }
  return events;
}

const types = (events: Stripe.Event[]) => events.map((e) => e.type);
const object = (event: Stripe.Event | undefined) => event?.data.object as unknown as Record<string, unknown>;

const visa = (overrides: Partial<Stripe.PaymentIntentCreateParams> = {}): Stripe.PaymentIntentCreateParams => ({
  amount: 1999,
  currency: 'usd',
  payment_method: 'pm_card_visa',
  confirm: true,
  metadata: { tenant_id: 'tenant-a', idempotency_key: 'order-1' },
  ...overrides,
});

describe('events emitted by changes', () => {
  it('a confirmed payment intent: payment_intent.created, charge.succeeded, payment_intent.succeeded, in Stripe’s shape', async () => {
    const intent = await stripe.paymentIntents.create(visa(), { idempotencyKey: 'order-1-key' });
    const events = await allEvents();
    // Newest first; all three in one second, so emission order decides.
    expect(types(events)).toEqual(['payment_intent.succeeded', 'charge.succeeded', 'payment_intent.created']);
    const charge = events[1] as Stripe.Event;
    expect(charge).toMatchObject({
      object: 'event',
      api_version: STRIPE_API_VERSION,
      created: NOW_S,
      livemode: false,
      pending_webhooks: 0,
      request: { idempotency_key: 'order-1-key' },
      data: {
        object: {
          object: 'charge',
          id: intent.latest_charge,
          status: 'succeeded',
          amount: 1999,
          metadata: { tenant_id: 'tenant-a' },
        },
      },
    });
    expect(charge.id).toMatch(/^evt_/);
    expect(charge.request?.id).toMatch(/^req_/);
    expect('account' in charge).toBe(false);
    expect(object(events[2])).toMatchObject({ object: 'payment_intent', status: 'requires_confirmation' });
    expect(object(events[0])).toMatchObject({
      object: 'payment_intent',
      status: 'succeeded',
      latest_charge: intent.latest_charge,
    });
  });

  it('a decline: charge.failed and payment_intent.payment_failed; an idempotent replay emits nothing more', async () => {
    const params = visa({ payment_method: 'pm_card_chargeDeclined' });
    await rejection(stripe.paymentIntents.create(params, { idempotencyKey: 'declined' }));
    await rejection(stripe.paymentIntents.create(params, { idempotencyKey: 'declined' }));
    expect(types(await allEvents())).toEqual([
      'payment_intent.payment_failed',
      'charge.failed',
      'payment_intent.created',
    ]);
  });

  it('a refund through the API: charge.refunded with the earlier amounts, and refund.created', async () => {
    const charge = double.createCharge(null, { amount: 1000, events: false });
    double.clock.advance(60_000);
    const refund = await stripe.refunds.create({ charge: charge.id, amount: 300 });
    const [created, refunded] = await allEvents();
    expect(refunded).toMatchObject({
      type: 'charge.refunded',
      created: NOW_S + 60,
      data: {
        object: { id: charge.id, amount_refunded: 300, refunded: false },
        previous_attributes: { amount_refunded: 0 },
      },
    });
    expect(created).toMatchObject({
      type: 'refund.created',
      data: { object: { object: 'refund', id: refund.id, charge: charge.id, amount: 300 } },
    });
  });

  it('a full refund made by the control marks refunded in previous_attributes; each event keeps the charge as it was then', async () => {
    const charge = double.createCharge(null, { amount: 1000 });
    double.clock.advance(1_000);
    double.refund(charge.id);
    const events = await allEvents({ types: ['charge.refunded', 'charge.succeeded'] });
    expect(types(events)).toEqual(['charge.refunded', 'charge.succeeded']);
    expect(events[0]?.data.previous_attributes).toEqual({ amount_refunded: 0, refunded: false });
    expect(object(events[1])).toMatchObject({ amount_refunded: 0, refunded: false });
    expect(object(events[0])).toMatchObject({ amount_refunded: 1000, refunded: true });
  });

  it('a dispute opened and won: created, funds_withdrawn, closed (previous status), funds_reinstated — all naming the charge', async () => {
    const charge = double.createCharge('acct_d', { amount: 2500, events: false });
    const opened = double.openDispute(charge.id, { reason: 'product_not_received' });
    expect(opened).toMatchObject({ object: 'dispute', charge: charge.id, amount: 2500, status: 'needs_response' });
    expect(double.charge(charge.id)?.disputed).toBe(true);
    expect(() => double.openDispute(charge.id)).toThrow(/already has an open dispute/);
    double.clock.advance(DAY_S * 1000);
    double.closeDispute(charge.id, 'won');
    const events = await allEvents({}, { stripeAccount: 'acct_d' });
    expect(types(events)).toEqual([
      'charge.dispute.funds_reinstated',
      'charge.dispute.closed',
      'charge.dispute.funds_withdrawn',
      'charge.dispute.created',
    ]);
    expect(events.every((e) => object(e).charge === charge.id && e.account === 'acct_d')).toBe(true);
    expect(events[1]).toMatchObject({
      data: { object: { status: 'won' }, previous_attributes: { status: 'needs_response' } },
    });
    expect(() => double.closeDispute(charge.id, 'lost')).toThrow(/no open dispute/);
  });

  it('dispute() keeps its old meaning (disputed: true) and emits charge.dispute.created once', async () => {
    const charge = double.createCharge(null, { events: false });
    double.dispute(charge.id);
    double.dispute(charge.id);
    expect(types(await allEvents({ type: 'charge.dispute.*' }))).toEqual([
      'charge.dispute.funds_withdrawn',
      'charge.dispute.created',
    ]);
  });

  it('a capture of an authorised charge: charge.captured, then the intent succeeds', async () => {
    const intent = await stripe.paymentIntents.create(visa({ capture_method: 'manual' }));
    const chargeId = intent.latest_charge as string;
    expect(types(await allEvents())).toEqual([
      'payment_intent.amount_capturable_updated',
      'charge.succeeded',
      'payment_intent.created',
    ]);
    double.clock.advance(3_600_000);
    double.capture(chargeId, 1500);
    const [succeeded, captured] = await allEvents({ created: { gt: NOW_S } });
    expect(captured).toMatchObject({
      type: 'charge.captured',
      data: {
        object: { id: chargeId, captured: true, amount_captured: 1500, amount_refunded: 499 },
        previous_attributes: { captured: false, amount_captured: 0 },
      },
    });
    expect(succeeded).toMatchObject({
      type: 'payment_intent.succeeded',
      data: { object: { id: intent.id, status: 'succeeded' } },
    });
    expect(() => double.capture(chargeId)).toThrow(/not an uncaptured/);
  });

  it('an edit of metadata or description: charge.updated with only what changed', async () => {
    const charge = double.createCharge(null, { metadata: { tenant_id: 't', note: 'x' }, events: false });
    double.updateCharge(charge.id, { metadata: { idempotency_key: 'k', note: '' }, description: 'fixed by hand' });
    const [updated] = await allEvents();
    expect(updated).toMatchObject({
      type: 'charge.updated',
      data: {
        object: { metadata: { tenant_id: 't', idempotency_key: 'k' }, description: 'fixed by hand' },
        previous_attributes: { metadata: { idempotency_key: null, note: 'x' }, description: null },
      },
    });
    double.updateCharge(charge.id, { description: 'fixed by hand' });
    expect(await allEvents()).toHaveLength(1);
  });

  it('a refund that fails later gives the money back: charge.refund.updated, refund.updated, refund.failed', async () => {
    const charge = double.createCharge(null, { amount: 800, events: false });
    double.refund(charge.id, 500, { emit: false });
    const [refund] = double.refunds(charge.id);
    double.failRefund(refund?.id as string);
    expect(double.charge(charge.id)?.amount_refunded).toBe(0);
    const events = await allEvents();
    expect(types(events)).toEqual(['refund.failed', 'refund.updated', 'charge.refund.updated']);
    expect(events[2]).toMatchObject({
      data: { object: { charge: charge.id, status: 'failed' }, previous_attributes: { status: 'succeeded' } },
    });
  });
});

describe('GET /v1/events', () => {
  // Six charges two seconds apart, with their creation events.
  const history = (account: string | null = null) =>
    [0, 2, 4, 6, 8, 10].map(
      (s) => double.createCharge(account, { created: NOW_S - 100 + s, withPaymentIntent: false }).id,
    );

  it('lists newest first, pages with starting_after and ending_before, says has_more', async () => {
    const ids = history();
    const first = await stripe.events.list({ limit: 4 });
    expect(first).toMatchObject({ object: 'list', url: '/v1/events', has_more: true });
    expect(first.data.map((e) => object(e).id)).toEqual(ids.slice(2).reverse());
    const rest = await stripe.events.list({ limit: 4, starting_after: first.data[3]?.id });
    expect(rest.has_more).toBe(false);
    expect(rest.data.map((e) => object(e).id)).toEqual(ids.slice(0, 2).reverse());
    const back = await stripe.events.list({ limit: 2, ending_before: rest.data[0]?.id });
    expect(back.data.map((e) => object(e).id)).toEqual([ids[3], ids[2]]);
    expect(back.has_more).toBe(true);
    expect((await stripe.events.list()).data).toHaveLength(6);
  });

  it('filters on created with gt, gte, lt and lte', async () => {
    history();
    const count = async (created: Stripe.RangeQueryParam) => (await allEvents({ created })).length;
    expect(await count({ gt: NOW_S - 96 })).toBe(3);
    expect(await count({ gte: NOW_S - 96 })).toBe(4);
    expect(await count({ lt: NOW_S - 96 })).toBe(2);
    expect(await count({ lte: NOW_S - 96, gt: NOW_S - 100 })).toBe(2);
  });

  it('takes exact names in types[] (up to 20) and a wildcard in type, never both', async () => {
    const charge = double.createCharge(null, { withPaymentIntent: false });
    double.refund(charge.id, 100);
    double.openDispute(charge.id);
    expect(types(await allEvents({ types: ['charge.refunded', 'charge.dispute.created'] }))).toEqual([
      'charge.dispute.created',
      'charge.refunded',
    ]);
    expect(types(await allEvents({ type: 'charge.dispute.*' }))).toEqual([
      'charge.dispute.funds_withdrawn',
      'charge.dispute.created',
    ]);
    expect(types(await allEvents({ type: 'charge.*' }))).toHaveLength(4);
    expect(types(await allEvents({ type: 'refund.created' }))).toEqual(['refund.created']);
    for (const params of [
      { types: ['charge.dispute.*'] },
      { type: 'charge.refunded', types: ['charge.refunded'] },
      { types: Array.from({ length: 21 }, (_, i) => `charge.t${i}`) },
    ]) {
      const error = await rejection(stripe.events.list(params));
      expect([error.statusCode, error.param]).toEqual([400, 'types']);
    }
  });

  it('retrieves one event, and answers 404 for an unknown one', async () => {
    const charge = double.createCharge(null, { withPaymentIntent: false });
    const [listed] = await allEvents();
    const event = await stripe.events.retrieve(listed?.id as string);
    expect(event).toMatchObject({ id: listed?.id, type: 'charge.succeeded', data: { object: { id: charge.id } } });
    const missing = await rejection(stripe.events.retrieve('evt_missing'));
    expect([missing.statusCode, missing.code]).toEqual([404, 'resource_missing']);
  });

  it('keeps accounts apart: listing, retrieval and cursors', async () => {
    const mine = history('acct_a');
    history('acct_b');
    const listed = await allEvents({}, { stripeAccount: 'acct_a' });
    expect(listed.map((e) => object(e).id)).toEqual([...mine].reverse());
    expect(listed.every((e) => e.account === 'acct_a')).toBe(true);
    expect(await allEvents()).toEqual([]);
    const foreign = await rejection(stripe.events.retrieve(listed[0]?.id as string, {}, { stripeAccount: 'acct_b' }));
    expect(foreign.statusCode).toBe(404);
    const cursor = await rejection(stripe.events.list({ starting_after: listed[0]?.id }, { stripeAccount: 'acct_b' }));
    expect([cursor.statusCode, cursor.param]).toEqual([400, 'starting_after']);
  });

  it('forgets events after 30 days on the double clock, for listing and retrieval', async () => {
    const old = double.createCharge(null, { created: NOW_S - 31 * DAY_S, withPaymentIntent: false });
    const recent = double.createCharge(null, { created: NOW_S - 29 * DAY_S, withPaymentIntent: false });
    expect(double.eventCount(null)).toBe(2);
    const listed = await allEvents();
    expect(listed.map((e) => object(e).id)).toEqual([recent.id]);
    const oldEvent = double.events(null).find((e) => e.data.object.id === old.id);
    expect((await rejection(stripe.events.retrieve(oldEvent?.id as string))).statusCode).toBe(404);
    double.clock.advance(2 * DAY_S * 1000);
    expect(await allEvents()).toEqual([]);
    expect((await rejection(stripe.events.retrieve(listed[0]?.id as string))).statusCode).toBe(404);
  });

  it('a read-only restricted key may read events', async () => {
    double.createCharge(null, { withPaymentIntent: false });
    const readOnly = createStripeClient({ apiKey: READ_ONLY_KEY, apiBase: double.url, maxNetworkRetries: 0 });
    expect((await readOnly.events.list()).data).toHaveLength(1);
  });
});

describe('controls for an events reader', () => {
  it('seeds old history without events, or with them dated at each charge', async () => {
    double.createCharge(null, { created: NOW_S - 10 * DAY_S, events: false });
    expect(await allEvents()).toEqual([]);
    const dated = double.createCharge(null, { created: NOW_S - 5 * DAY_S });
    const events = await allEvents();
    expect(types(events)).toEqual(['payment_intent.succeeded', 'charge.succeeded', 'payment_intent.created']);
    expect(events.every((e) => e.created === dated.created)).toBe(true);
  });

  it('refunds an old charge now: the event is dated now, whatever the charge’s age', async () => {
    const old = double.createCharge(null, { created: NOW_S - 40 * DAY_S, amount: 900 });
    double.refund(old.id, 400);
    const events = await allEvents({ created: { gte: NOW_S } });
    expect(types(events)).toEqual(['refund.created', 'charge.refunded']);
    expect(object(events[1])).toMatchObject({ id: old.id, created: NOW_S - 40 * DAY_S, amount_refunded: 400 });
  });

  it('emits an event late: dated in the past, listable only later, behind newer events', async () => {
    const a = double.createCharge(null, { withPaymentIntent: false, events: false });
    const b = double.createCharge(null, { withPaymentIntent: false, events: false });
    double.refund(a.id, 100, { created: NOW_S - 600, visibleAt: NOW_S + 60 });
    double.refund(b.id, 100, { emit: true });
    expect(types(await allEvents())).toEqual(['refund.created', 'charge.refunded']);
    expect(
      (await rejection(stripe.events.retrieve(double.events(null, 'charge.refunded')[1]?.id as string))).statusCode,
    ).toBe(404);
    double.clock.advance(60_000);
    const events = await allEvents({ type: 'charge.refunded' });
    expect(events.map((e) => [object(e).id, e.created])).toEqual([
      [b.id, NOW_S],
      [a.id, NOW_S - 600],
    ]);
  });

  it('an event lag makes every new event listable only after it', async () => {
    double.setEventLag(30_000);
    double.createCharge(null, { withPaymentIntent: false });
    expect(await allEvents()).toEqual([]);
    double.clock.advance(30_000);
    expect(types(await allEvents())).toEqual(['charge.succeeded']);
  });

  it('reports one change twice under two ids, or one event twice under its id', async () => {
    const charge = double.createCharge(null, { withPaymentIntent: false, events: false });
    double.refund(charge.id, 100, { copies: 2 });
    const refunded = await allEvents({ type: 'charge.refunded' });
    expect(refunded).toHaveLength(2);
    expect(refunded[0]?.id).not.toBe(refunded[1]?.id);
    expect(refunded[0]?.data).toEqual(refunded[1]?.data);

    const [twin] = double.duplicateEvent(refunded[0]?.id as string, { sameId: true });
    expect(twin?.id).toBe(refunded[0]?.id);
    const ids = (await allEvents({ type: 'charge.refunded' })).map((e) => e.id);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(2);
  });

  it('emits any event: a type the double never emits, an object of any shape', async () => {
    const [event] = double.emitEvent(
      'acct_x',
      'charge.expired',
      { id: 'ch_gone', object: 'charge' },
      { created: NOW_S - 5 },
    );
    expect(event).toMatchObject({ type: 'charge.expired', account: 'acct_x', created: NOW_S - 5 });
    expect(await stripe.events.retrieve(event?.id as string, {}, { stripeAccount: 'acct_x' })).toMatchObject({
      data: { object: { id: 'ch_gone' } },
    });
  });

  it('seeds charges in bulk without events by default, with their creation events on request', async () => {
    double.seedCharges(null, 500, { from: NOW_S - 3_600, to: NOW_S });
    expect(double.eventCount()).toBe(0);
    double.seedCharges('acct_bulk', 500, {
      from: NOW_S - 3_600,
      to: NOW_S,
      events: true,
      metadata: { tenant_id: 'bulk' },
    });
    const [changed] = double.chargeIds('acct_bulk');
    double.refund(changed as string, 5, { emit: false });
    double.updateCharge(changed as string, { metadata: { tenant_id: 'edited' } }, { emit: false });
    const events = await allEvents({ types: ['charge.succeeded'] }, { stripeAccount: 'acct_bulk' });
    expect(events).toHaveLength(500);
    // Each creation event shows the charge as created, whatever happened to it since.
    expect(object(events.find((e) => object(e).id === changed))).toMatchObject({
      amount_refunded: 0,
      metadata: { tenant_id: 'bulk' },
    });
    expect(double.charge(changed as string)).toMatchObject({ amount_refunded: 5, metadata: { tenant_id: 'edited' } });
    expect(new Set(events.map((e) => object(e).id))).toEqual(new Set(double.chargeIds('acct_bulk')));
    for (let i = 1; i < events.length; i += 1)
      expect((events[i - 1] as Stripe.Event).created).toBeGreaterThanOrEqual((events[i] as Stripe.Event).created);
  });
});

describe('late-listed charges', () => {
  it('exist (retrievable, with their event) but join GET /v1/charges only at listedAt', async () => {
    const late = double.createCharge(null, { created: NOW_S - 3_600, listedAt: NOW_S + 600, withPaymentIntent: false });
    const listed = double.createCharge(null, { created: NOW_S - 3_000, withPaymentIntent: false });
    expect((await stripe.charges.list({ limit: 100 })).data.map((c) => c.id)).toEqual([listed.id]);
    expect((await stripe.charges.retrieve(late.id)).id).toBe(late.id);
    expect(types(await allEvents())).toEqual(['charge.succeeded', 'charge.succeeded']);
    expect(double.unlistedCharges()).toEqual([
      { id: late.id, account: null, listedAt: new Date((NOW_S + 600) * 1000) },
    ]);
    expect(double.chargeCount(null)).toBe(2);
    double.clock.advance(600_000);
    expect((await stripe.charges.list({ limit: 100 })).data.map((c) => c.id)).toEqual([listed.id, late.id]);
    expect(double.unlistedCharges()).toEqual([]);
  });
});

describe('GET /v1/refunds', () => {
  it('lists one charge’s refunds newest first, with pagination, within the account', async () => {
    const charge = double.createCharge('acct_r', { amount: 1000 });
    const other = double.createCharge('acct_r', { amount: 1000 });
    for (let i = 0; i < 3; i += 1) {
      double.refund(charge.id, 100);
      double.clock.advance(1_000);
    }
    double.refund(other.id, 50);
    const options = { stripeAccount: 'acct_r' };
    const page = await stripe.refunds.list({ charge: charge.id, limit: 2 }, options);
    expect(page).toMatchObject({ object: 'list', url: '/v1/refunds', has_more: true });
    expect(page.data.map((r) => r.created)).toEqual([NOW_S + 2, NOW_S + 1]);
    const rest = await stripe.refunds.list({ charge: charge.id, limit: 2, starting_after: page.data[1]?.id }, options);
    expect(rest.data.map((r) => r.created)).toEqual([NOW_S]);
    expect(rest.has_more).toBe(false);
    expect((await stripe.refunds.list({ limit: 10 }, options)).data).toHaveLength(4);
    expect((await stripe.refunds.list({ charge: charge.id })).data).toEqual([]);
    const one = await stripe.refunds.retrieve(page.data[0]?.id as string, {}, options);
    expect(one).toMatchObject({ charge: charge.id, amount: 100 });
  });
});

describe('GET /v1/charges/search', () => {
  const attributed = (tenant: string, key: string, amount = 1000) =>
    double.createCharge('acct_s', {
      metadata: { tenant_id: tenant, idempotency_key: key },
      amount,
      withPaymentIntent: false,
    }).id;

  it('finds charges by metadata clauses joined by AND, newest first, paged with next_page', async () => {
    const ids = [0, 1, 2].map((i) => {
      double.clock.advance(1_000);
      return attributed('acme', 'order-7', 1000 + i);
    });
    attributed('acme', 'order-8');
    attributed('other', 'order-7');
    const options = { stripeAccount: 'acct_s' };
    const query = "metadata['tenant_id']:'acme' AND metadata['idempotency_key']:'order-7'";
    const first = await stripe.charges.search({ query, limit: 2 }, options);
    expect(first).toMatchObject({ object: 'search_result', url: '/v1/charges/search', has_more: true });
    expect(first.data.map((c) => c.id)).toEqual([ids[2], ids[1]]);
    const second = await stripe.charges.search({ query, limit: 2, page: first.next_page as string }, options);
    expect(second.data.map((c) => c.id)).toEqual([ids[0]]);
    expect(second).toMatchObject({ has_more: false, next_page: null });
    const all = await stripe.charges.search({ query, limit: 1 }, options).autoPagingToArray({ limit: 10 });
    expect(all.map((c) => c.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect((await stripe.charges.search({ query })).data).toEqual([]);
  });

  it('understands OR, negation, numbers, status and null metadata; refuses what it does not understand', async () => {
    const small = attributed('acme', 'a', 500);
    const big = attributed('acme', 'b', 5000);
    const bare = double.createCharge('acct_s', { withPaymentIntent: false }).id;
    const search = async (query: string) =>
      (await stripe.charges.search({ query, limit: 100 }, { stripeAccount: 'acct_s' })).data.map((c) => c.id).sort();
    expect(await search("metadata['idempotency_key']:'a' OR metadata['idempotency_key']:'b'")).toEqual(
      [small, big].sort(),
    );
    expect(await search("amount>1000 AND status:'succeeded'")).toEqual([big]);
    expect(await search("-metadata['tenant_id']:'acme'")).toEqual([bare]);
    expect(await search("metadata['tenant_id']:null")).toEqual([bare]);
    for (const query of [
      "metadata['a']:'x' AND metadata['b']:'y' OR amount:1",
      'colour:"red"',
      "metadata['a':'x'",
      '',
    ]) {
      const error = await rejection(stripe.charges.search({ query }, { stripeAccount: 'acct_s' }));
      expect([error.statusCode, error.param]).toEqual([400, 'query']);
    }
  });

  it('lags like Stripe’s index when told to', async () => {
    double.setSearchLag(60_000);
    attributed('acme', 'fresh');
    const query = "metadata['idempotency_key']:'fresh'";
    expect((await stripe.charges.search({ query }, { stripeAccount: 'acct_s' })).data).toEqual([]);
    double.clock.advance(60_000);
    expect((await stripe.charges.search({ query }, { stripeAccount: 'acct_s' })).data).toHaveLength(1);
  });
});
