import { describe, expect, it } from 'vitest';
import { ChargeStore, type ChargeRecord } from '../../testkit/stripe-double/charge-store.js';
import { changedAttributes } from '../../testkit/stripe-double/emit.js';
import { EVENT_RETENTION_SECONDS, EventStore, type EventRecord } from '../../testkit/stripe-double/event-store.js';
import { matchesCharge, parseChargeQuery, SearchQueryError } from '../../testkit/stripe-double/search-query.js';
import { doubleChargeRecord } from '../support/facts.js';

const NOW_MS = 2_000_000_000_000;
const NOW_S = NOW_MS / 1000;

const event = (id: string, created: number, extra: Partial<EventRecord> = {}): Omit<EventRecord, 'seq'> => ({
  id,
  account: null,
  type: 'charge.succeeded',
  created,
  visibleAtMs: created * 1000,
  snapshot: { json: {} },
  request: { id: null, idempotency_key: null },
  ...extra,
});

const ids = (answer: ReturnType<EventStore['list']>) => (answer.ok ? answer.data.map((e) => e.id) : answer);
const ALL = { gte: 0, lt: Number.MAX_SAFE_INTEGER, limit: 100, nowMs: NOW_MS };

describe('EventStore', () => {
  function store() {
    const s = new EventStore();
    // Emitted out of `created` order on purpose (a backdated event), two in one second.
    for (const [id, created] of [
      ['evt_a', NOW_S - 30],
      ['evt_c', NOW_S - 10],
      ['evt_b', NOW_S - 20],
      ['evt_d', NOW_S - 10],
    ] as const) {
      s.add(event(id, created));
    }
    return s;
  }

  it('lists newest first; within a second, the later emitted first', () => {
    expect(ids(store().list(null, ALL))).toEqual(['evt_d', 'evt_c', 'evt_b', 'evt_a']);
  });

  it('pages both ways and counts only wanted events for has_more', () => {
    const s = store();
    expect(s.list(null, { ...ALL, limit: 2 })).toMatchObject({ ok: true, hasMore: true });
    expect(ids(s.list(null, { ...ALL, limit: 2, startingAfter: 'evt_c' }))).toEqual(['evt_b', 'evt_a']);
    expect(s.list(null, { ...ALL, limit: 2, startingAfter: 'evt_c' })).toMatchObject({ hasMore: false });
    expect(ids(s.list(null, { ...ALL, limit: 1, endingBefore: 'evt_b' }))).toEqual(['evt_c']);
    expect(s.list(null, { ...ALL, limit: 1, endingBefore: 'evt_b' })).toMatchObject({ hasMore: true });
    const onlyOld = (type: string) => type === 'charge.succeeded';
    s.add(event('evt_e', NOW_S - 5, { type: 'charge.refunded' }));
    expect(s.list(null, { ...ALL, limit: 4, matches: onlyOld })).toMatchObject({ hasMore: false });
  });

  it('hides events not yet visible and events past the retention', () => {
    const s = store();
    s.add(event('evt_hidden', NOW_S - 1, { visibleAtMs: NOW_MS + 1 }));
    s.add(event('evt_expired', NOW_S - EVENT_RETENTION_SECONDS - 1));
    s.add(event('evt_kept', NOW_S - EVENT_RETENTION_SECONDS));
    expect(ids(s.list(null, ALL))).toEqual(['evt_d', 'evt_c', 'evt_b', 'evt_a', 'evt_kept']);
    expect(ids(s.list(null, { ...ALL, nowMs: NOW_MS + 1 }))).toContain('evt_hidden');
    expect(EventStore.listable(s.get('evt_expired') as EventRecord, NOW_MS)).toBe(false);
  });

  it('refuses unknown and foreign cursors', () => {
    const s = store();
    s.add(event('evt_other', NOW_S, { account: 'acct_1' }));
    expect(s.list(null, { ...ALL, startingAfter: 'evt_zzz' })).toEqual({
      ok: false,
      missingCursor: 'evt_zzz',
      param: 'starting_after',
    });
    expect(s.list(null, { ...ALL, endingBefore: 'evt_other' })).toMatchObject({ ok: false, param: 'ending_before' });
  });

  it('bulk-adds in any order and sorts once', () => {
    const s = new EventStore();
    s.addMany(
      null,
      [event('evt_2', 20), event('evt_1', 10), event('evt_3', 30)].map((e) => ({ ...e, seq: 0 })),
    );
    expect(ids(s.list(null, { ...ALL, nowMs: 40_000 }))).toEqual(['evt_3', 'evt_2', 'evt_1']);
  });
});

describe('ChargeStore late listing', () => {
  const charge = (id: string, created: number) => doubleChargeRecord(id, created);

  it('keeps a late charge out of listings until its time, then in its place', () => {
    let now = 1_000_000;
    const s = new ChargeStore(() => now);
    s.insert(charge('ch_a', 100));
    s.insert(charge('ch_late', 200), now + 5_000);
    s.insert(charge('ch_c', 300));
    const listed = () => (s.all(null) as ChargeRecord[]).map((c) => c.id);
    expect(listed()).toEqual(['ch_c', 'ch_a']);
    expect(s.get('ch_late')?.id).toBe('ch_late');
    expect(s.size(null)).toBe(3);
    now += 5_000;
    expect(listed()).toEqual(['ch_c', 'ch_late', 'ch_a']);
  });
});

describe('charge search queries', () => {
  const charge = {
    metadata: { tenant_id: 'acme', note: "it's" },
    amount: 1500,
    created: 10,
    currency: 'usd',
    status: 'succeeded',
  } as unknown as ChargeRecord;
  const matches = (query: string) => matchesCharge(parseChargeQuery(query), charge);

  it('matches clauses as Stripe’s search does', () => {
    expect(matches("metadata['tenant_id']:'acme'")).toBe(true);
    expect(matches('metadata["tenant_id"]:"ACME"')).toBe(false);
    expect(matches("metadata['note']:'it\\'s'")).toBe(true);
    expect(matches("metadata['tenant_id']~'acm'")).toBe(true);
    expect(matches('amount>=1500 AND amount<1501')).toBe(true);
    expect(matches("currency:'USD' AND -status:'failed'")).toBe(true);
    expect(matches("status:'failed' OR amount:1500")).toBe(true);
    expect(matches("metadata['missing']:null")).toBe(true);
  });

  it('refuses malformed queries with a reason', () => {
    for (const query of [
      '',
      "metadata['a']:'x' AND b:1 OR c:2",
      "status>'x'",
      "metadata['a']~'ab'",
      "metadata['a']:'x' AND",
      'amount',
    ])
      expect(() => parseChargeQuery(query), query).toThrow(SearchQueryError);
  });
});

describe('changedAttributes', () => {
  it('names changed fields with their earlier values, and changed keys of hashes', () => {
    expect(changedAttributes({ a: 1, b: 2, m: { x: '1', y: '2' } }, { a: 1, b: 3, m: { x: '1', z: '3' } })).toEqual({
      b: 2,
      m: { y: '2', z: null },
    });
    expect(changedAttributes({ a: 1 }, { a: 1 })).toBeUndefined();
  });
});
