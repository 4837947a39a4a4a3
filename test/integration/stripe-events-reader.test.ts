import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { IncompleteEventsError, MissingEventsPermissionError } from '../../src/providers/stripe/event-errors.js';
import { createEventReader, type EventReader } from '../../src/providers/stripe/events.js';
import { DEFAULT_METADATA_KEYS, normalizeCharge } from '../../src/providers/stripe/normalize.js';
import { RateBudget } from '../../src/providers/stripe/rate-budget.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { failure } from '../support/promises.js';

// The events reader and the charge re-read through the real SDK against the double, on its frozen clock.
const NOW = new Date('2026-03-10T12:00:00Z');
const NOW_S = NOW.getTime() / 1000;
const DAY_S = 24 * 60 * 60;

let double: StripeDouble;
let reader: EventReader;

function newReader(apiKey = 'sk_test_reader'): EventReader {
  return createEventReader({
    stripe: createStripeClient({ apiKey, apiBase: double.url, maxNetworkRetries: 0 }),
    // No real waiting anywhere: a fake clock for the budget, and retries that do not sleep.
    budget: new RateBudget({ ratePerSecond: 1_000, burst: 1_000, clock: () => 0, sleep: async () => undefined }),
    retry: { maxAttempts: 20, baseDelayMs: 1 },
    sleep: async () => undefined,
  });
}

beforeAll(async () => {
  double = await startStripeDouble({ keys: { permissions: { rk_test_no_events: ['rak_charge_read'] } } });
  reader = newReader();
});
afterAll(async () => {
  await double.close();
});
beforeEach(() => {
  double.reset();
  double.clock.set(NOW);
});

const pointers = (listing: Awaited<ReturnType<EventReader['read']>>) =>
  listing.events.map((e) => `${e.type} ${e.chargeId}`);

describe('reading late changes through the Events API', () => {
  it('finds a refund, a partial refund, a dispute and a capture on charges older than any window, after the cursor', async () => {
    const old = (options: Parameters<StripeDouble['createCharge']>[1] = {}) =>
      double.createCharge('acct_1', { created: NOW_S - 7 * DAY_S, amount: 1000, ...options }).id;
    const [full, partial, disputed, authorised] = [old(), old(), old(), old({ captured: false })];
    const cursor = NOW_S - 60;
    double.refund(full);
    double.refund(partial, 250);
    double.dispute(disputed);
    double.capture(authorised);
    double.clock.advance(120_000);

    const listing = await reader.read('acct_1', { after: cursor, before: NOW_S + 60 });
    expect(new Set(pointers(listing))).toEqual(
      new Set([
        `charge.refunded ${full}`,
        `refund.created ${full}`,
        `charge.refunded ${partial}`,
        `refund.created ${partial}`,
        `charge.dispute.created ${disputed}`,
        `charge.dispute.funds_withdrawn ${disputed}`,
        `charge.captured ${authorised}`,
        `payment_intent.succeeded ${authorised}`,
      ]),
    );
    // The creation events, a week old, are behind the cursor.
    expect(listing.events.every((e) => e.created === NOW_S && e.account === 'acct_1')).toBe(true);
    expect(listing.cursor).toBe(NOW_S + 59);
    // Events are only pointers: the charges are re-read, and show what changed.
    const byId = new Map<string, NormalizedCharge>();
    for (const reread of await reader.retrieveCharges('acct_1', [
      ...new Set(listing.events.map((e) => e.chargeId as string)),
    ])) {
      const normalized = reread.found
        ? normalizeCharge(reread.raw, 'acct_1', DEFAULT_METADATA_KEYS, double.clock.nowSeconds())
        : undefined;
      if (normalized?.ok) byId.set(normalized.charge.id, normalized.charge);
    }
    expect(byId.size).toBe(4);
    expect(byId.get(full)).toMatchObject({ amountRefunded: 1000, refunded: true });
    expect(byId.get(partial)).toMatchObject({ amountRefunded: 250, refunded: false });
    expect(byId.get(disputed)).toMatchObject({ disputed: true });
    expect(byId.get(authorised)).toMatchObject({ captured: true, amountCaptured: 1000 });
  });

  it('reads a refund 40 days after its charge through its recent event', async () => {
    const charge = double.createCharge(null, { created: NOW_S - 40 * DAY_S, amount: 700 });
    double.refund(charge.id, 100);
    const listing = await reader.read(null, { after: NOW_S - 3_600, before: NOW_S + 1 });
    expect(pointers(listing)).toEqual([`refund.created ${charge.id}`, `charge.refunded ${charge.id}`]);
  });

  it('pages through many events: every charge once, 100 a page', async () => {
    double.seedCharges('acct_bulk', 250, { from: NOW_S - 3_600, to: NOW_S, events: true });
    const listing = await reader.read('acct_bulk', { after: NOW_S - 3_601, before: NOW_S });
    expect(listing.pages).toBe(3);
    expect(listing.events.map((e) => e.chargeId).sort()).toEqual(double.chargeIds('acct_bulk').sort());
    expect(double.counters.get('GET /v1/events')).toBe(3);
  });

  it('cannot see past Stripe’s 30 days: a cursor 40 days back gets only the last 30 days', async () => {
    for (const age of [35, 31, 29, 1])
      double.createCharge(null, { created: NOW_S - age * DAY_S, withPaymentIntent: false });
    const listing = await reader.read(null, { after: NOW_S - 40 * DAY_S, before: NOW_S });
    expect(listing.events.map((e) => (NOW_S - e.created) / DAY_S)).toEqual([1, 29]);
  });

  it('reads one account only', async () => {
    const mine = double.createCharge('acct_a', { withPaymentIntent: false });
    double.createCharge('acct_b', { withPaymentIntent: false });
    double.createCharge(null, { withPaymentIntent: false });
    const window = { after: NOW_S - 1, before: NOW_S + 1 };
    expect(pointers(await reader.read('acct_a', window))).toEqual([`charge.succeeded ${mine.id}`]);
    expect((await reader.read('acct_c', window)).events).toEqual([]);
    const foreign = await reader.retrieveCharges('acct_b', [mine.id]);
    expect(foreign).toEqual([{ id: mine.id, found: false }]);
  });

  it('returns a change reported twice as two events; a listing that repeats an id fails', async () => {
    const charge = double.createCharge(null, { withPaymentIntent: false, events: false });
    double.refund(charge.id, 10, { copies: 2 });
    const window = { after: NOW_S - 1, before: NOW_S + 1 };
    const listing = await reader.read(null, window, { types: ['charge.refunded'] });
    expect(listing.events).toHaveLength(2);
    expect(new Set(listing.events.map((e) => e.chargeId))).toEqual(new Set([charge.id]));

    double.duplicateEvent(listing.events[0]?.id as string, { sameId: true });
    const error = await failure(reader.read(null, window, { types: ['charge.refunded'] }));
    expect(error).toBeInstanceOf(IncompleteEventsError);
    expect(error.message).toContain('was listed twice');
  });

  it('misses an event listed late behind the cursor, and finds it when an overlap is re-read', async () => {
    const charge = double.createCharge(null, { withPaymentIntent: false, events: false });
    // Dated two minutes ago, listable only now: eventual consistency.
    double.clock.advance(300_000);
    double.refund(charge.id, 10, { created: NOW_S + 180, visibleAt: NOW_S + 300 });
    const cursor = NOW_S + 240;
    expect((await reader.read(null, { after: cursor, before: NOW_S + 300 })).events).toEqual([]);
    const overlapped = await reader.read(null, { after: cursor, overlapSeconds: 120, before: NOW_S + 300 });
    expect(pointers(overlapped)).toEqual([`refund.created ${charge.id}`, `charge.refunded ${charge.id}`]);
  });

  it('points at a charge listed late: not in GET /v1/charges yet, but its event is there and it can be re-read', async () => {
    const late = double.createCharge(null, {
      created: NOW_S - 1_800,
      listedAt: NOW_S + 3_600,
      metadata: { tenant_id: 'acme', idempotency_key: 'late-1' },
    });
    const listing = await reader.read(null, { after: NOW_S - 3_600, before: NOW_S }, { types: ['charge.succeeded'] });
    expect(pointers(listing)).toEqual([`charge.succeeded ${late.id}`]);
    expect(double.listCharges(null)).toEqual([]);
    const [reread, unknown] = await reader.retrieveCharges(null, [late.id, 'ch_unknown']);
    expect(unknown).toEqual({ id: 'ch_unknown', found: false });
    const normalized = reread?.found
      ? normalizeCharge(reread.raw, null, DEFAULT_METADATA_KEYS, double.clock.nowSeconds())
      : undefined;
    expect(normalized).toMatchObject({ ok: true, charge: { id: late.id, tenantId: 'acme', idempotencyKey: 'late-1' } });
  });

  it('rides out 429s from the server inside the budget', async () => {
    double.seedCharges(null, 300, { from: NOW_S - 600, to: NOW_S, events: true });
    double.setFaults({ rate429: 0.5, endpoints: ['GET /v1/events', 'GET /v1/charges/:id'], seed: 3 });
    const r = newReader();
    const listing = await r.read(null, { after: NOW_S - 601, before: NOW_S });
    expect(listing.events).toHaveLength(300);
    const reread = await r.retrieveCharges(
      null,
      listing.events.slice(0, 20).map((e) => e.chargeId as string),
    );
    expect(reread.every((c) => c.found)).toBe(true);
    expect(r.counters.rateLimited).toBeGreaterThan(0);
    expect(r.counters.rateLimited).toBe(double.injectedFaults['429']);
  });

  it('a key without Events read fails with the permission to grant (exit 64)', async () => {
    const error = await failure(newReader('rk_test_no_events').read('acct_1', { after: NOW_S - 60 }));
    expect(error).toBeInstanceOf(MissingEventsPermissionError);
    expect(error.message).toContain("'rak_event_read'");
  });
});
