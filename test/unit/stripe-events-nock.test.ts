import nock from 'nock';
import { beforeEach, describe, expect, it } from 'vitest';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import {
  ChargeRetrievalError,
  IncompleteEventsError,
  MissingEventsPermissionError,
} from '../../src/providers/stripe/event-errors.js';
import { InvalidStripeKeyError } from '../../src/providers/stripe/errors.js';
import { CHANGE_EVENT_TYPES, createEventReader, type EventWindow } from '../../src/providers/stripe/events.js';
import { RateBudget } from '../../src/providers/stripe/rate-budget.js';
import { failure } from '../support/promises.js';
import { everyTestThroughNock, STRIPE_ORIGIN } from '../support/stripe-nock.js';

// SDK retries on, as in production: the reader must switch them off per request and retry itself.
const stripe = createStripeClient({ apiKey: 'sk_test_events', maxNetworkRetries: 2 });
const AFTER = 1_773_100_000;
const BEFORE = AFTER + 3_600;
const WINDOW: EventWindow = { after: AFTER, before: BEFORE };
const POLICY = { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 1_000, maxRetryAfterMs: 60_000 };

type Json = Record<string, unknown>;
const charge = (id: string, extra: Json = {}): Json => ({
  id,
  object: 'charge',
  payment_intent: `pi_${id.slice(3)}`,
  ...extra,
});
const event = (id: string, created: number, type: string, object: Json, extra: Json = {}): Json => ({
  id,
  object: 'event',
  api_version: '2026-10-28.endive',
  created,
  data: { object },
  livemode: false,
  pending_webhooks: 0,
  request: { id: null, idempotency_key: null },
  type,
  ...extra,
});
const list = (data: Json[], hasMore = false) => ({ object: 'list', url: '/v1/events', has_more: hasMore, data });
const errorBody = (type: string, message: string, code?: string) => ({
  error: { type, message, ...(code ? { code } : {}) },
});

let sleeps: number[];
let seen: Array<{ query: URLSearchParams; account: string | undefined }>;

function reader() {
  sleeps = [];
  return createEventReader({
    stripe,
    // The budget's waits (a 429 pauses it) are not real either; only the retry sleeps are recorded.
    budget: new RateBudget({ ratePerSecond: 1_000, burst: 1_000, clock: () => 0, sleep: async () => undefined }),
    retry: POLICY,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
}

/** Intercepts GET /v1/events once per reply, recording the query and Stripe-Account of each request. */
function events(...replies: Array<[number, unknown] | [number, unknown, Record<string, string>]>) {
  for (const reply of replies) {
    nock(STRIPE_ORIGIN)
      .get('/v1/events')
      .query(true)
      .reply(function () {
        const path = this.req.path;
        seen.push({
          query: new URLSearchParams(path.slice(path.indexOf('?') + 1)),
          account: this.req.headers['stripe-account'] as string | undefined,
        });
        return reply;
      });
  }
}

everyTestThroughNock();
beforeEach(() => {
  seen = [];
});

describe('reading events through the SDK', () => {
  it('asks for the types in types[], created[gt]/[lt], 100 a page, on the connected account, and points each event at its charge', async () => {
    events([
      200,
      list([
        event(
          'evt_4',
          AFTER + 40,
          'payment_intent.succeeded',
          { id: 'pi_4', object: 'payment_intent', latest_charge: 'ch_4' },
          { account: 'acct_42' },
        ),
        event('evt_3', AFTER + 30, 'charge.dispute.created', {
          id: 'dp_1',
          object: 'dispute',
          charge: 'ch_3',
          payment_intent: 'pi_3',
          status: 'needs_response',
        }),
        event('evt_2', AFTER + 20, 'refund.created', {
          id: 're_1',
          object: 'refund',
          charge: { id: 'ch_2', object: 'charge' },
          payment_intent: null,
        }),
        event('evt_1', AFTER + 10, 'charge.refunded', charge('ch_1')),
      ]),
    ]);
    const listing = await reader().read('acct_42', WINDOW);
    const query = seen[0]?.query as URLSearchParams;
    expect(seen[0]?.account).toBe('acct_42');
    // The SDK's encoding: types[0]=…&types[1]=…, every type spelled out.
    expect([...query.entries()].filter(([k]) => k.startsWith('types')).map(([k, v]) => `${k}=${v}`)).toEqual(
      CHANGE_EVENT_TYPES.map((type, i) => `types[${i}]=${type}`),
    );
    expect(query.get('created[gt]')).toBe(String(AFTER));
    expect(query.get('created[lt]')).toBe(String(BEFORE));
    expect(query.get('created[gte]')).toBeNull();
    expect(query.get('limit')).toBe('100');
    expect(query.get('starting_after')).toBeNull();
    expect(listing.events).toEqual([
      {
        id: 'evt_4',
        type: 'payment_intent.succeeded',
        created: AFTER + 40,
        account: 'acct_42',
        chargeId: 'ch_4',
        paymentIntentId: 'pi_4',
        refundId: null,
        dispute: null,
      },
      {
        id: 'evt_3',
        type: 'charge.dispute.created',
        created: AFTER + 30,
        account: 'acct_42',
        chargeId: 'ch_3',
        paymentIntentId: 'pi_3',
        refundId: null,
        dispute: { id: 'dp_1', status: 'needs_response' },
      },
      {
        id: 'evt_2',
        type: 'refund.created',
        created: AFTER + 20,
        account: 'acct_42',
        chargeId: 'ch_2',
        paymentIntentId: null,
        refundId: 're_1',
        dispute: null,
      },
      {
        id: 'evt_1',
        type: 'charge.refunded',
        created: AFTER + 10,
        account: 'acct_42',
        chargeId: 'ch_1',
        paymentIntentId: 'pi_1',
        refundId: null,
        dispute: null,
      },
    ]);
    expect(listing).toMatchObject({
      pages: 1,
      newestCreated: AFTER + 40,
      cursor: BEFORE - 1,
      range: { gte: AFTER + 1, lt: BEFORE },
    });
  });

  it('re-reads an overlap with created[gte], and sends no Stripe-Account for the platform', async () => {
    events([200, list([])]);
    const listing = await reader().read(null, { after: AFTER, overlapSeconds: 300 });
    expect(seen[0]?.query.get('created[gte]')).toBe(String(AFTER - 300));
    expect(seen[0]?.query.get('created[gt]')).toBeNull();
    expect(seen[0]?.query.get('created[lt]')).toBeNull();
    expect(seen[0]?.account).toBeUndefined();
    // Without an upper bound the cursor cannot pass what was seen.
    expect(listing).toMatchObject({ events: [], cursor: AFTER, newestCreated: null });
  });

  it('follows starting_after from the last event of each page until has_more is false', async () => {
    events(
      [
        200,
        list(
          [
            event('evt_c', AFTER + 30, 'charge.succeeded', charge('ch_c')),
            event('evt_b', AFTER + 20, 'charge.succeeded', charge('ch_b')),
          ],
          true,
        ),
      ],
      [200, list([event('evt_a', AFTER + 10, 'charge.captured', charge('ch_a'))], false)],
    );
    const r = reader();
    const listing = await r.read(null, WINDOW, { types: ['charge.succeeded', 'charge.captured'] });
    expect(listing.events.map((e) => e.id)).toEqual(['evt_c', 'evt_b', 'evt_a']);
    expect(seen.map((s) => s.query.get('starting_after'))).toEqual([null, 'evt_b']);
    expect(seen[1]?.query.get('types[0]')).toBe('charge.succeeded');
    expect(seen[1]?.query.get('types[1]')).toBe('charge.captured');
    expect(r.counters.snapshot()).toMatchObject({ requests: 2, pages: 2, retries: 0 });
  });

  it('retries a 429, honouring Retry-After, and holds back the whole process through the budget', async () => {
    events(
      [
        429,
        errorBody('rate_limit_error', 'Too many requests hit the API too quickly.', 'rate_limit'),
        { 'Retry-After': '7' },
      ],
      [200, list([])],
    );
    const r = reader();
    await r.read(null, WINDOW);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(7_000);
    expect(sleeps[0]).toBeLessThan(7_000 + POLICY.baseDelayMs);
    expect(r.counters.snapshot()).toMatchObject({ requests: 2, rateLimited: 1, retries: 1 });
    expect((r.budget as RateBudget).stats().pauses).toBe(1);
  });

  it('retries a 429 marked Stripe-Should-Retry: true itself, never through the SDK (whose sleeps would escape the budget)', async () => {
    events(
      [429, errorBody('rate_limit_error', 'Too many requests.', 'rate_limit'), { 'Stripe-Should-Retry': 'true' }],
      [200, list([])],
    );
    const r = reader();
    await r.read(null, WINDOW);
    // Had the SDK retried on its own, the reader would have counted one request and no retry.
    expect(r.counters.snapshot()).toMatchObject({ requests: 2, rateLimited: 1, retries: 1 });
  });

  it('gives up after the attempt bound with IncompleteEventsError naming the account and range', async () => {
    events(
      ...Array.from(
        { length: POLICY.maxAttempts },
        () => [500, errorBody('api_error', 'An unknown error occurred.')] as [number, unknown],
      ),
    );
    const error = await failure(reader().read('acct_7', WINDOW));
    expect(error).toBeInstanceOf(IncompleteEventsError);
    expect((error as IncompleteEventsError).exitCode).toBe(1);
    expect(error.message).toContain(
      'events of account acct_7 created in [2026-03-09T23:46:41.000Z, 2026-03-10T00:46:40.000Z)',
    );
    expect(error.message).toContain(`gave up after ${POLICY.maxAttempts} attempts`);
  });

  it.each([
    ['a body that is not a list object', null, 'could not be read as a Stripe list'],
    ['a body that is an array', [], 'a page is not a list object'],
    ['data that is not an array', { object: 'list', data: {}, has_more: false }, 'data is a object, not an array'],
    ['has_more missing', { object: 'list', data: [] }, 'has_more is missing'],
    ['has_more with nothing to continue after', list([], true), 'the cursor cannot advance'],
  ])('fails on a malformed page (%s) without retrying it', async (_name, body, message) => {
    events([200, body]);
    const r = reader();
    const error = await failure(r.read(null, WINDOW));
    expect(error).toBeInstanceOf(IncompleteEventsError);
    expect(error.message).toContain(message);
    expect(r.counters.requests).toBe(1);
  });

  it('fails when the cursor does not advance: the next page repeats an event', async () => {
    const page = list(
      [
        event('evt_b', AFTER + 20, 'charge.succeeded', charge('ch_b')),
        event('evt_a', AFTER + 10, 'charge.succeeded', charge('ch_a')),
      ],
      true,
    );
    events([200, page], [200, page]);
    const error = await failure(reader().read(null, WINDOW));
    expect(error).toBeInstanceOf(IncompleteEventsError);
    expect(error.message).toContain('event evt_b was listed twice in one listing');
    expect(seen.map((s) => s.query.get('starting_after'))).toEqual([null, 'evt_a']);
  });

  it.each([
    [
      'a type not asked for',
      event('evt_x', AFTER + 5, 'customer.created', { id: 'cus_1', object: 'customer' }),
      'type customer.created was not asked for',
    ],
    [
      'a time outside the range',
      event('evt_x', AFTER, 'charge.succeeded', charge('ch_1')),
      `created ${AFTER} is outside the range`,
    ],
    [
      'another account',
      event('evt_x', AFTER + 5, 'charge.succeeded', charge('ch_1'), { account: 'acct_other' }),
      'belongs to acct_other',
    ],
    ['no id', { ...event('evt_x', AFTER + 5, 'charge.succeeded', charge('ch_1')), id: 7 }, 'missing or unusable id'],
    [
      'no data.object',
      { ...event('evt_x', AFTER + 5, 'charge.succeeded', charge('ch_1')), data: null },
      'data.object is not an object',
    ],
  ])('fails on an event that contradicts the request: %s', async (_name, body, message) => {
    events([200, list([body])]);
    const error = await failure(reader().read(null, WINDOW));
    expect(error).toBeInstanceOf(IncompleteEventsError);
    expect(error.message).toContain(message);
  });

  it('a charge event naming no charge is one lost pointer, reported apart; the rest of the listing is read', async () => {
    events([
      200,
      list([
        event('evt_y', AFTER + 9, 'charge.succeeded', charge('ch_1')),
        event('evt_x', AFTER + 5, 'charge.refunded', { object: 'charge' }),
      ]),
    ]);
    const listing = await reader().read(null, WINDOW);
    expect(listing.events.map((e) => e.id)).toEqual(['evt_y']);
    expect(listing.malformed).toEqual([{ id: 'evt_x', problem: expect.stringContaining('names no charge') }]);
  });

  it('fails on events out of order (newest first is what makes the cursor safe)', async () => {
    events([
      200,
      list([
        event('evt_a', AFTER + 10, 'charge.succeeded', charge('ch_a')),
        event('evt_b', AFTER + 20, 'charge.succeeded', charge('ch_b')),
      ]),
    ]);
    expect((await failure(reader().read(null, WINDOW))).message).toContain('events out of order');
  });

  it('403: names the Events read permission (exit 64); 401: the key is invalid (exit 64)', async () => {
    events([
      403,
      errorBody(
        'invalid_request_error',
        "The provided key 'rk_test_****1234' does not have the required permissions. Having the 'rak_event_read' permission would allow this request to continue.",
      ),
    ]);
    const forbidden = await failure(reader().read('acct_1', WINDOW));
    expect(forbidden).toBeInstanceOf(MissingEventsPermissionError);
    expect((forbidden as MissingEventsPermissionError).exitCode).toBe(64);
    expect(forbidden.message).toContain('may not read events of account acct_1 (403)');
    expect(forbidden.message).toContain("Having the 'rak_event_read' permission");
    events([401, errorBody('invalid_request_error', 'Invalid API Key provided: sk_test_****ents')]);
    const invalid = await failure(reader().read(null, WINDOW));
    expect(invalid).toBeInstanceOf(InvalidStripeKeyError);
  });

  it('refuses types[] it cannot send: more than 20, a wildcard, none', async () => {
    const r = reader();
    await expect(r.read(null, WINDOW, { types: Array.from({ length: 21 }, (_, i) => `charge.t${i}`) })).rejects.toThrow(
      RangeError,
    );
    await expect(r.read(null, WINDOW, { types: ['charge.dispute.*'] })).rejects.toThrow(/spell out charge.dispute.\*/);
    await expect(r.read(null, WINDOW, { types: [] })).rejects.toThrow(RangeError);
    await expect(r.read(null, { after: AFTER, before: AFTER - 1 })).rejects.toThrow(RangeError);
    expect(r.counters.requests).toBe(0);
  });
});

describe('re-reading charges by id', () => {
  const retrieve = (id: string, status: number, body: unknown) =>
    nock(STRIPE_ORIGIN)
      .get(`/v1/charges/${id}`)
      .reply(status, body as Json);

  it('answers raw charges and missing ones, once per id, in order; 429 retried', async () => {
    retrieve('ch_1', 200, charge('ch_1', { amount: 100 }));
    retrieve('ch_2', 404, errorBody('invalid_request_error', "No such charge: 'ch_2'", 'resource_missing'));
    nock(STRIPE_ORIGIN)
      .get('/v1/charges/ch_3')
      .reply(429, errorBody('rate_limit_error', 'Too many requests.', 'rate_limit'), { 'Stripe-Should-Retry': 'true' });
    retrieve('ch_3', 200, charge('ch_3'));
    const r = reader();
    const answers = await r.retrieveCharges('acct_1', ['ch_1', 'ch_2', 'ch_1', 'ch_3']);
    expect(answers).toEqual([
      { id: 'ch_1', found: true, raw: expect.objectContaining({ id: 'ch_1', amount: 100 }) },
      { id: 'ch_2', found: false },
      { id: 'ch_3', found: true, raw: expect.objectContaining({ id: 'ch_3' }) },
    ]);
    expect(r.counters.snapshot()).toMatchObject({ requests: 4, rateLimited: 1, retries: 1 });
  });

  it('fails the whole re-read when one charge cannot be read, or the answer is another charge', async () => {
    for (let i = 0; i < POLICY.maxAttempts; i += 1)
      retrieve('ch_1', 500, errorBody('api_error', 'An unknown error occurred.'));
    const error = await failure(reader().retrieveCharges(null, ['ch_1']));
    expect(error).toBeInstanceOf(ChargeRetrievalError);
    expect(error.message).toContain('charge ch_1 of the platform account could not be re-read');
    retrieve('ch_9', 200, charge('ch_8'));
    expect((await failure(reader().retrieveCharges(null, ['ch_9']))).message).toContain(
      'the answer is not that charge',
    );
    // A 404 that is not resource_missing (an unknown URL) is not "missing".
    retrieve('ch_5', 404, errorBody('invalid_request_error', 'Unrecognized request URL'));
    expect(await failure(reader().retrieveCharges(null, ['ch_5']))).toBeInstanceOf(ChargeRetrievalError);
  });
});
