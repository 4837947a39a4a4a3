import { describe, expect, it } from 'vitest';
import { settle } from '../support/promises.js';
import { StripeListCounters } from '../../src/providers/stripe/counters.js';
import { IncompleteWindowError, InvalidStripeKeyError } from '../../src/providers/stripe/errors.js';
import { listChargeWindow, maxPagesFor, type ChargeBatch } from '../../src/providers/stripe/list-charges.js';
import type { FetchChargePage, PageQuery, RawChargePage } from '../../src/providers/stripe/page-source.js';

/**
 * An in-memory Stripe list endpoint, written as plainly as possible (sort, filter,
 * find the cursor) so that the lister's planning is checked against something it does
 * not share code with.
 */
interface RawCharge {
  id: string;
  created: number;
  amount?: number;
  currency?: string;
  status?: string;
}

/** 2026-01-01T00:00:00Z: test times are seconds after it (a charge before 2010 is malformed). */
const T0 = 1_767_225_600;
const at = (seconds: number) => T0 + seconds;
const span = (from: number, to: number) => ({ from: at(from), to: at(to) });

function memoryStripe(charges: RawCharge[]) {
  const sorted = [...charges].sort((a, b) => b.created - a.created || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  const queries: PageQuery[] = [];
  const pending = new Set<Promise<unknown>>();
  let inFlight = 0;
  let maxInFlight = 0;
  const fetchPage: FetchChargePage = (query, signal) => {
    const answer = answerPage(query, signal);
    pending.add(answer);
    void answer.catch(() => undefined).finally(() => pending.delete(answer));
    return answer;
  };
  const answerPage: FetchChargePage = async (query) => {
    queries.push(query);
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await settle();
    inFlight -= 1;
    let list = sorted.filter((c) => c.created >= query.gte && c.created < query.lt);
    if (query.startingAfter) {
      const index = list.findIndex((c) => c.id === query.startingAfter);
      if (index < 0) throw new Error(`cursor ${query.startingAfter} is outside ${query.gte}..${query.lt}`);
      list = list.slice(index + 1);
    }
    const data = list.slice(0, query.limit).map((c) => ({ amount: 100, currency: 'usd', status: 'succeeded', ...c }));
    return { data, hasMore: list.length > query.limit } satisfies RawChargePage;
  };
  return {
    fetchPage,
    queries,
    maxInFlight: () => maxInFlight,
    /** Resolves once every request made so far has been answered. */
    settled: () => Promise.allSettled([...pending]),
  };
}

function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function dataset(seed: number, parts: Array<{ n: number; from: number; to: number }>): RawCharge[] {
  const next = random(seed);
  const out: RawCharge[] = [];
  for (const part of parts) {
    for (let i = 0; i < part.n; i += 1) {
      out.push({
        id: `ch_${seed}_${out.length}_${Math.floor(next() * 1e9)}`,
        created: at(part.from + Math.floor(next() * (part.to - part.from))),
      });
    }
  }
  return out;
}

async function collect(listing: AsyncIterable<ChargeBatch>) {
  const ids: string[] = [];
  const malformed: string[] = [];
  for await (const batch of listing) {
    ids.push(...batch.charges.map((c) => c.id));
    malformed.push(...batch.malformed.map((m) => `${m.id}: ${m.problem}`));
  }
  return { ids, malformed };
}

const expectedIds = (charges: RawCharge[], from: number, to: number) =>
  charges
    .filter((c) => c.created >= at(from) && c.created < at(to))
    .map((c) => c.id)
    .sort();

describe('listChargeWindow against an in-memory list', () => {
  const cases = [
    { name: 'uniform', parts: [{ n: 5_000, from: 0, to: 86_400 }] },
    {
      name: 'a burst of 1,000 in one second amid sparse charges',
      parts: [
        { n: 300, from: 0, to: 86_400 },
        { n: 1_000, from: 40_000, to: 40_001 },
      ],
    },
    { name: 'everything in one second', parts: [{ n: 777, from: 5, to: 6 }] },
    {
      name: 'several bursts at the edges',
      parts: [
        { n: 250, from: 0, to: 1 },
        { n: 250, from: 86_399, to: 86_400 },
        { n: 101, from: 100, to: 101 },
      ],
    },
    { name: 'a few charges', parts: [{ n: 7, from: 0, to: 86_400 }] },
  ];
  for (const { name, parts } of cases) {
    for (const [concurrency, limit] of [
      [1, 100],
      [4, 100],
      [16, 100],
      [8, 7],
    ] as const) {
      it(`lists exactly the window (${name}; concurrency ${concurrency}, pages of ${limit})`, async () => {
        const charges = dataset(concurrency * 31 + limit, parts);
        const stripe = memoryStripe(charges);
        const { ids } = await collect(
          listChargeWindow(stripe.fetchPage, null, span(0, 86_400), { concurrency, limit }),
        );
        expect(ids.length).toBe(new Set(ids).size); // no duplicates
        expect(ids.sort()).toEqual(expectedIds(charges, 0, 86_400)); // no loss
        expect(stripe.maxInFlight()).toBeLessThanOrEqual(concurrency);
      });
    }
  }

  it('splits no sub-window while the budget has no spare capacity: one page per 100 charges', async () => {
    const charges = dataset(7, [{ n: 5_000, from: 0, to: 86_400 }]);
    const counters = new StripeListCounters();
    const saturated = memoryStripe(charges);
    const { ids } = await collect(
      listChargeWindow(saturated.fetchPage, null, span(0, 86_400), {
        concurrency: 16,
        counters,
        spareCapacity: () => false,
      }),
    );
    expect(ids.sort()).toEqual(expectedIds(charges, 0, 86_400));
    expect(counters.splits).toBe(0);
    expect(counters.pages).toBe(50); // 5,000 charges: 50 full pages, the last saying has_more false
    const idle = new StripeListCounters();
    await collect(
      listChargeWindow(memoryStripe(charges).fetchPage, null, span(0, 86_400), { concurrency: 16, counters: idle }),
    );
    expect(idle.splits).toBeGreaterThan(0); // the same listing with capacity to spare splits
  });

  it('takes created == from in and created == to out', async () => {
    const charges = [
      { id: 'ch_before', created: at(999) },
      { id: 'ch_from', created: at(1_000) },
      { id: 'ch_last_second', created: at(1_999) },
      { id: 'ch_to', created: at(2_000) },
    ];
    const { ids } = await collect(listChargeWindow(memoryStripe(charges).fetchPage, null, span(1_000, 2_000)));
    expect(ids.sort()).toEqual(['ch_from', 'ch_last_second']);
  });

  it('accepts Dates and rounds fractional seconds the way Stripe compares', async () => {
    const charges = [
      { id: 'ch_a', created: at(1_000) },
      { id: 'ch_b', created: at(1_001) },
      { id: 'ch_c', created: at(1_002) },
    ];
    const window = { from: new Date(at(1_000) * 1000 + 500), to: new Date(at(1_002) * 1000 + 500) };
    const { ids } = await collect(listChargeWindow(memoryStripe(charges).fetchPage, null, window));
    expect(ids.sort()).toEqual(['ch_b', 'ch_c']);
  });

  it('asks once for an empty window and yields nothing', async () => {
    const stripe = memoryStripe([{ id: 'ch_outside', created: at(10) }]);
    const { ids } = await collect(listChargeWindow(stripe.fetchPage, 'acct_1', span(100, 200)));
    expect(ids).toEqual([]);
    expect(stripe.queries).toHaveLength(1);
  });

  it('does not ask at all for a zero-length window, and rejects a reversed one', async () => {
    const stripe = memoryStripe([]);
    expect((await collect(listChargeWindow(stripe.fetchPage, null, span(100, 100)))).ids).toEqual([]);
    expect(stripe.queries).toHaveLength(0);
    await expect(collect(listChargeWindow(stripe.fetchPage, null, span(200, 100)))).rejects.toThrow(
      /ends before it starts/,
    );
  });

  it('reports malformed charges and keeps paging past them', async () => {
    const charges: RawCharge[] = dataset(5, [{ n: 250, from: 0, to: 1_000 }]);
    const broken = charges[10] as RawCharge;
    const stripe = memoryStripe(charges);
    const fetchPage: FetchChargePage = async (query, signal) => {
      const page = await stripe.fetchPage(query, signal);
      return {
        ...page,
        data: page.data.map((c) =>
          (c as RawCharge).id === broken.id ? { id: broken.id, created: broken.created } : c,
        ),
      };
    };
    const { ids, malformed } = await collect(listChargeWindow(fetchPage, null, span(0, 1_000), { limit: 10 }));
    expect(malformed).toEqual([`${broken.id}: missing amount, missing currency, missing status`]);
    expect([...ids, broken.id].sort()).toEqual(expectedIds(charges, 0, 1_000));
  });

  it('throws IncompleteWindowError naming the account and the window when a sub-window fails', async () => {
    const charges = dataset(9, [{ n: 2_000, from: 0, to: 86_400 }]);
    const stripe = memoryStripe(charges);
    let calls = 0;
    const fetchPage: FetchChargePage = async (query, signal) => {
      calls += 1;
      if (calls === 5) throw new Error('gave up after 8 attempts, the last: HTTP 500');
      return stripe.fetchPage(query, signal);
    };
    const seen: string[] = [];
    const listing = listChargeWindow(fetchPage, 'acct_9', span(0, 86_400));
    const error = await (async () => {
      try {
        for await (const batch of listing) seen.push(...batch.charges.map((c) => c.id));
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(IncompleteWindowError);
    const incomplete = error as IncompleteWindowError;
    expect(incomplete.message).toContain('account acct_9');
    expect(incomplete.message).toContain('[2026-01-01T00:00:00.000Z, 2026-01-02T00:00:00.000Z)');
    expect(incomplete.message).toContain('HTTP 500');
    expect(incomplete.exitCode).toBe(1);
    expect(incomplete.window).toEqual({ gte: at(0), lt: at(86_400) });
    // What was yielded before is real, but it is not all of it.
    expect(seen.length).toBeLessThan(charges.length);
  });

  it('passes configuration errors through as they are', async () => {
    const fetchPage: FetchChargePage = async () => {
      throw new InvalidStripeKeyError(null, 'Invalid API Key provided: sk_test_****abcd');
    };
    await expect(collect(listChargeWindow(fetchPage, null, span(0, 10)))).rejects.toBeInstanceOf(InvalidStripeKeyError);
  });

  it('fails rather than loop when Stripe says has_more with an empty page', async () => {
    const fetchPage: FetchChargePage = async () => ({ data: [], hasMore: true });
    await expect(collect(listChargeWindow(fetchPage, null, span(0, 10)))).rejects.toThrow(
      /has_more with an empty page/,
    );
  });

  it('stops asking when the consumer stops reading', async () => {
    const charges = dataset(3, [{ n: 5_000, from: 0, to: 86_400 }]);
    const stripe = memoryStripe(charges);
    for await (const batch of listChargeWindow(stripe.fetchPage, null, span(0, 86_400), { concurrency: 2 })) {
      expect(batch.charges.length).toBeGreaterThan(0);
      break;
    }
    const asked = stripe.queries.length;
    await stripe.settled();
    expect(stripe.queries.length).toBe(asked);
    expect(asked).toBeLessThan(10);
  });

  it('stops with the reason when the caller aborts', async () => {
    const controller = new AbortController();
    const stripe = memoryStripe(dataset(4, [{ n: 1_000, from: 0, to: 1_000 }]));
    const listing = listChargeWindow(stripe.fetchPage, null, span(0, 1_000), { signal: controller.signal });
    await listing.next();
    controller.abort(new Error('shutting down'));
    await expect(collect(listing)).rejects.toThrow('shutting down');
  });
});

/** How a listing ended: every id it yielded, and the error it threw (if any). */
async function outcome(listing: AsyncIterable<ChargeBatch>): Promise<{ ids: string[]; error: unknown }> {
  const ids: string[] = [];
  try {
    for await (const batch of listing) ids.push(...batch.charges.map((c) => c.id));
  } catch (error) {
    return { ids, error };
  }
  return { ids, error: undefined };
}

const good = (id: string, created = at(50)) => ({ id, created, amount: 100, currency: 'usd', status: 'succeeded' });

describe('a broken listing never counts as a clean window', () => {
  it.each<[string, unknown, RegExp]>([
    ['data null', { data: null, hasMore: false }, /data is null, not an array/],
    ['data a string', { data: 'ch_1', hasMore: false }, /data is a string, not an array/],
    ['data an object', { data: { 0: good('ch_1') }, hasMore: false }, /data is a object, not an array/],
    ['has_more missing', { data: [good('ch_1')] }, /has_more is missing, not a boolean/],
    ['has_more a string', { data: [good('ch_1')], hasMore: 'false' }, /has_more is a string, not a boolean/],
    ['no page at all', null, /the page is not an object \(null\)/],
    [
      'more charges than asked for',
      { data: Array.from({ length: 101 }, (_, i) => good(`ch_${i}`)), hasMore: false },
      /holds 101 charges, more than the 100/,
    ],
  ])('%s → IncompleteWindowError naming the window and the problem', async (_name, page, problem) => {
    const fetchPage = (async () => page) as unknown as FetchChargePage;
    const { ids, error } = await outcome(listChargeWindow(fetchPage, 'acct_1', span(0, 100)));
    expect(error).toBeInstanceOf(IncompleteWindowError);
    expect((error as Error).message).toMatch(problem);
    expect((error as Error).message).toContain(
      'account acct_1 in [2026-01-01T00:00:00.000Z, 2026-01-01T00:01:40.000Z)',
    );
    expect(ids).toEqual([]);
  });

  it('a cursor that does not advance fails the window instead of looping', async () => {
    const queries: PageQuery[] = [];
    // Whatever the cursor, the same page: ch_b last, has_more.
    const fetchPage: FetchChargePage = async (query) => {
      queries.push(query);
      return { data: [good('ch_a'), good('ch_b')], hasMore: true };
    };
    const { error } = await outcome(listChargeWindow(fetchPage, null, span(0, 100), { concurrency: 1 }));
    expect((error as Error).message).toMatch(/the cursor did not advance: the page after ch_b ends with ch_b again/);
    expect(queries).toHaveLength(2);
  });

  it('the same charge twice in one listing (two versions of it) fails the window', async () => {
    const fetchPage: FetchChargePage = async (query) =>
      query.startingAfter === undefined
        ? { data: [good('ch_a', at(60)), good('ch_b', at(50))], hasMore: true }
        : { data: [{ ...good('ch_a', at(40)), amount: 999_999 }], hasMore: false };
    const { error } = await outcome(listChargeWindow(fetchPage, null, span(0, 100), { concurrency: 1 }));
    expect(error).toBeInstanceOf(IncompleteWindowError);
    expect((error as Error).message).toMatch(/charge ch_a was listed twice in one listing/);
  });

  it('an upstream handing out new pages forever is cut off at the page cap', async () => {
    let n = 0;
    const fetchPage: FetchChargePage = async () => {
      n += 1;
      return { data: [good(`ch_${n}`)], hasMore: true };
    };
    const { error } = await outcome(listChargeWindow(fetchPage, null, span(0, 100), { concurrency: 1, maxPages: 25 }));
    expect((error as Error).message).toMatch(/more than 25 pages for a window of 100 seconds/);
    expect(n).toBe(26);
  });

  it('caps pages at 10 per second of the window, never fewer than 1,000', () => {
    expect(maxPagesFor({ gte: 0, lt: 60 })).toBe(1_000);
    expect(maxPagesFor({ gte: 0, lt: 3_600 })).toBe(36_000);
  });

  it('a charge dated outside the range asked for is reported as malformed, and the rest is listed', async () => {
    const counters = new StripeListCounters();
    const fetchPage: FetchChargePage = async () => ({
      data: [good('ch_in', at(50)), good('ch_out', at(5_000)), { created: at(10) }],
      hasMore: false,
    });
    const { ids, malformed } = await collect(listChargeWindow(fetchPage, null, span(0, 100), { counters }));
    expect(ids).toEqual(['ch_in']);
    expect(malformed).toEqual([
      expect.stringMatching(
        /^ch_out: created \d+ is outside the range listed, \[2026-01-01T00:00:00\.000Z, 2026-01-01T00:01:40\.000Z\)$/,
      ),
      'null: missing id, missing amount, missing currency, missing status',
    ]);
    expect(counters.snapshot()).toMatchObject({ pages: 1, charges: 1, malformed: 2, unnamed: 1 });
  });
});
