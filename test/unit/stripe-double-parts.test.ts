import { describe, expect, it } from 'vitest';
import { ChargeStore, type ChargeRecord } from '../../testkit/stripe-double/charge-store.js';
import { DoubleClock } from '../../testkit/stripe-double/clock.js';
import { DoubleError } from '../../testkit/stripe-double/errors.js';
import { canonicalJson, parseForm } from '../../testkit/stripe-double/form.js';
import { IdempotencyStore } from '../../testkit/stripe-double/idempotency.js';
import { parseListQuery } from '../../testkit/stripe-double/list-query.js';
import { EndpointRateLimiter } from '../../testkit/stripe-double/rate-limit.js';
import { renderCharge } from '../../testkit/stripe-double/render.js';
import { seedCharges, type SeededCharge } from '../../testkit/stripe-double/seed.js';
import { DoubleState } from '../../testkit/stripe-double/state.js';
import { doubleChargeRecord } from '../support/facts.js';

const record = doubleChargeRecord;

function store() {
  const s = new ChargeStore();
  // Inserted out of order on purpose; list order is created desc, then id desc.
  for (const [id, created] of [
    ['ch_b', 10],
    ['ch_e', 12],
    ['ch_a', 10],
    ['ch_d', 11],
    ['ch_c', 10],
    ['ch_f', 12],
  ] as const) {
    s.insert(record(id, created));
  }
  return s;
}

const ids = (answer: ReturnType<ChargeStore['list']>) => (answer.ok ? answer.data.map((c) => c.id) : answer);
const ALL = { gte: 0, lt: 100, limit: 100 };

describe('ChargeStore', () => {
  it('keeps list order whatever the insertion order', () => {
    expect(ids(store().list(null, ALL))).toEqual(['ch_f', 'ch_e', 'ch_d', 'ch_c', 'ch_b', 'ch_a']);
  });

  it('answers created ranges by binary search, gte in, lt out', () => {
    const s = store();
    expect(ids(s.list(null, { ...ALL, gte: 10, lt: 12 }))).toEqual(['ch_d', 'ch_c', 'ch_b', 'ch_a']);
    expect(ids(s.list(null, { ...ALL, gte: 11, lt: 11 }))).toEqual([]);
    expect(ids(s.list(null, { ...ALL, gte: 13, lt: 20 }))).toEqual([]);
  });

  it('pages with starting_after inside one second and says has_more', () => {
    const s = store();
    const first = s.list(null, { ...ALL, limit: 2, gte: 10, lt: 11 });
    expect(first).toMatchObject({ ok: true, hasMore: true });
    expect(ids(first)).toEqual(['ch_c', 'ch_b']);
    const second = s.list(null, { ...ALL, limit: 2, gte: 10, lt: 11, startingAfter: 'ch_b' });
    expect(second).toMatchObject({ ok: true, hasMore: false });
    expect(ids(second)).toEqual(['ch_a']);
  });

  it('pages backwards with ending_before', () => {
    const s = store();
    const page = s.list(null, { ...ALL, limit: 2, endingBefore: 'ch_b' });
    expect(ids(page)).toEqual(['ch_d', 'ch_c']);
    expect(page).toMatchObject({ hasMore: true });
    expect(s.list(null, { ...ALL, limit: 10, endingBefore: 'ch_e' })).toMatchObject({ hasMore: false });
    expect(ids(s.list(null, { ...ALL, limit: 10, endingBefore: 'ch_e' }))).toEqual(['ch_f']);
  });

  it('handles cursors outside the range and unknown or foreign cursors', () => {
    const s = store();
    s.insert(record('ch_other', 10, 'acct_1'));
    expect(ids(s.list(null, { ...ALL, gte: 10, lt: 11, startingAfter: 'ch_f' }))).toEqual(['ch_c', 'ch_b', 'ch_a']);
    expect(ids(s.list(null, { ...ALL, gte: 11, lt: 13, startingAfter: 'ch_a' }))).toEqual([]);
    expect(s.list(null, { ...ALL, startingAfter: 'ch_zzz' })).toEqual({
      ok: false,
      missingCursor: 'ch_zzz',
      param: 'starting_after',
    });
    expect(s.list(null, { ...ALL, endingBefore: 'ch_other' })).toMatchObject({ ok: false, param: 'ending_before' });
  });

  it('merges a sorted batch into what is there', () => {
    const s = store();
    s.insertSorted(null, [record('ch_z', 11), record('ch_bb', 10), record('ch_0', 9)]);
    expect(ids(s.list(null, ALL))).toEqual(['ch_f', 'ch_e', 'ch_z', 'ch_d', 'ch_c', 'ch_bb', 'ch_b', 'ch_a', 'ch_0']);
    expect(() => s.insert(record('ch_a', 1))).toThrow(/duplicate/);
  });
});

describe('seedCharges', () => {
  it('creates charges in list order, inside [from, to), with distinct ids across calls', () => {
    const state = new DoubleState(new DoubleClock());
    seedCharges(state, 'acct_1', 3_000, { from: 1_000, to: 1_010 });
    seedCharges(state, 'acct_1', 3_000, { from: 1_005, to: 1_006 });
    const all = state.charges.list('acct_1', { gte: 0, lt: 10_000, limit: 100 });
    expect(state.charges.size('acct_1')).toBe(6_000);
    const charges = state.charges.all('acct_1');
    expect(new Set(charges.map((c) => c.id)).size).toBe(6_000);
    expect(charges.every((c) => c.created >= 1_000 && c.created < 1_010)).toBe(true);
    for (let i = 1; i < charges.length; i += 1) {
      const [a, b] = [charges[i - 1] as ChargeRecord, charges[i] as ChargeRecord];
      expect(a.created > b.created || (a.created === b.created && a.id > b.id)).toBe(true);
    }
    expect(all.ok).toBe(true);
  });

  it('attributes charges one by one (metadataOf) and renders realistic ones at about 2 KB', () => {
    const state = new DoubleState(new DoubleClock());
    const told: SeededCharge[] = [];
    seedCharges(state, null, 50, {
      from: 1_000,
      to: 2_000,
      realistic: true,
      metadata: { shared: 'yes' },
      metadataOf: (charge) => {
        told.push(charge);
        return charge.index % 2 === 0 ? { tenant_id: 't1', idempotency_key: `k-${charge.index}` } : undefined;
      },
    });
    const charges = state.charges.all(null);
    expect(told.map((c) => c.index).sort((a, b) => a - b)).toEqual([...Array(50).keys()]);
    for (const c of told) {
      const charge = state.charges.get(c.id) as ChargeRecord;
      expect(charge.created).toBe(c.created);
      expect(charge.amount).toBe(c.amount);
      expect(charge.metadata).toEqual(
        c.index % 2 === 0 ? { tenant_id: 't1', idempotency_key: `k-${c.index}` } : { shared: 'yes' },
      );
    }
    // Index 0 is the oldest.
    const oldest = told.find((c) => c.index === 0) as SeededCharge;
    expect(charges.at(-1)?.id).toBe(oldest.id);
    const json = renderCharge(charges[0] as ChargeRecord);
    expect(json).toMatchObject({
      object: 'charge',
      payment_method_details: { type: 'card' },
      refunds: { object: 'list' },
    });
    expect(typeof json.customer).toBe('string');
    const size = JSON.stringify(json).length;
    expect(size).toBeGreaterThan(1_800);
    expect(size).toBeLessThan(2_600);
    // The small shape stays the default.
    const plain = new DoubleState(new DoubleClock());
    seedCharges(plain, null, 1, { from: 1_000, to: 2_000 });
    expect(renderCharge(plain.charges.all(null)[0] as ChargeRecord)).not.toHaveProperty('payment_method_details');
  });
});

describe('parseForm', () => {
  it('decodes Stripe bracket encoding', () => {
    expect(
      parseForm(
        'amount=100&metadata[tenant_id]=t%201&expand[0]=latest_charge&expand[1]=customer&a[b][c]=d&list[]=x&list[]=y',
      ),
    ).toEqual({
      amount: '100',
      metadata: { tenant_id: 't 1' },
      expand: ['latest_charge', 'customer'],
      a: { b: { c: 'd' } },
      list: ['x', 'y'],
    });
  });

  it('compares parameters independently of their order', () => {
    expect(canonicalJson(parseForm('a=1&b[y]=2&b[x]=3'))).toBe(canonicalJson(parseForm('b[x]=3&a=1&b[y]=2')));
    expect(canonicalJson(parseForm('a=1'))).not.toBe(canonicalJson(parseForm('a=2')));
  });
});

describe('parseListQuery', () => {
  const status = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      return error instanceof DoubleError ? [error.status, error.body.error.param] : error;
    }
    return 'accepted';
  };

  it('turns created operators into one [gte, lt) range', () => {
    expect(parseListQuery(parseForm('created[gt]=10&created[lte]=20&limit=5'))).toMatchObject({
      gte: 11,
      lt: 21,
      limit: 5,
    });
    expect(parseListQuery(parseForm('created=7'))).toMatchObject({ gte: 7, lt: 8, limit: 10 });
  });

  it('rejects what Stripe rejects', () => {
    expect(status(() => parseListQuery(parseForm('limit=0')))).toEqual([400, 'limit']);
    expect(status(() => parseListQuery(parseForm('limit=101')))).toEqual([400, 'limit']);
    expect(status(() => parseListQuery(parseForm('limit=ten')))).toEqual([400, 'limit']);
    expect(status(() => parseListQuery(parseForm('created[gte]=soon')))).toEqual([400, 'created[gte]']);
    expect(status(() => parseListQuery(parseForm('starting_after=a&ending_before=b')))).toEqual([
      400,
      'starting_after',
    ]);
    expect(status(() => parseListQuery(parseForm('colour=red')))).toEqual([400, 'colour']);
    expect(status(() => parseListQuery(parseForm('limit=100')))).toBe('accepted');
  });
});

describe('IdempotencyStore', () => {
  it('replays, refuses other parameters, scopes by account and forgets after the TTL', () => {
    let now = 0;
    const keys = new IdempotencyStore(() => now, 1_000);
    const response = { status: 200, body: '{}', requestId: 'req_1' };
    expect(keys.lookup(null, 'k', 'A')).toEqual({ kind: 'new' });
    keys.store(null, 'k', 'A', response);
    expect(keys.lookup(null, 'k', 'A')).toEqual({ kind: 'replay', response });
    expect(keys.lookup(null, 'k', 'B')).toEqual({ kind: 'mismatch' });
    expect(keys.lookup('acct_1', 'k', 'B')).toEqual({ kind: 'new' });
    now = 999;
    expect(keys.lookup(null, 'k', 'A').kind).toBe('replay');
    now = 1_000;
    expect(keys.lookup(null, 'k', 'B')).toEqual({ kind: 'new' });
  });
});

describe('EndpointRateLimiter', () => {
  it('lets through perSecond requests per second after the burst, per endpoint', () => {
    let now = 0;
    const limiter = new EndpointRateLimiter(() => now);
    limiter.set('GET /v1/charges', { perSecond: 4, burst: 2 });
    const taken = () => limiter.take('GET /v1/charges') === undefined;
    expect([taken(), taken(), taken()]).toEqual([true, true, false]);
    now = 250;
    expect([taken(), taken()]).toEqual([true, false]);
    expect(limiter.take('GET /v1/charges/:id')).toBeUndefined();
    limiter.set('GET /v1/charges', null);
    expect(taken()).toBe(true);
  });
});

describe('DoubleClock', () => {
  it('stands still once set and moves when advanced', () => {
    const clock = new DoubleClock();
    clock.set('2026-03-10T12:00:00Z');
    expect(clock.nowSeconds()).toBe(Date.parse('2026-03-10T12:00:00Z') / 1000);
    clock.advance(1_500);
    expect(clock.now().toISOString()).toBe('2026-03-10T12:00:01.500Z');
    expect(() => clock.set('not a date')).toThrow(RangeError);
  });
});
