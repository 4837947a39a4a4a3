import { describe, expect, it } from 'vitest';
import { listTransactionWindows, type FetchTransactionPage } from '../../src/providers/stripe/payout-listing.js';
import { failure } from '../support/promises.js';

/**
 * The listing of one payout's balance transactions by `created` sub-windows
 * (payout-listing.ts) against an in-memory list answering as Stripe does (newest first by
 * created, then id; `created[gte]`/`created[lt]`, `starting_after`, 100 a page): every
 * transaction exactly once, whatever the spread, at a bounded cost in requests.
 */

interface Txn {
  id: string;
  created: number;
}

const NOW = 1_800_000_000;

function stripeLike(txns: Txn[]): { fetch: FetchTransactionPage; asked: number; mostAtOnce: number } {
  const sorted = [...txns].sort((a, b) => b.created - a.created || (a.id < b.id ? 1 : -1));
  const state = { asked: 0, mostAtOnce: 0, fetch: undefined as unknown as FetchTransactionPage };
  let atOnce = 0;
  state.fetch = async (task) => {
    state.asked += 1;
    atOnce += 1;
    state.mostAtOnce = Math.max(state.mostAtOnce, atOnce);
    await new Promise((resolve) => setImmediate(resolve));
    atOnce -= 1;
    let rows = sorted.filter((t) => t.created >= task.gte && t.created < task.lt);
    if (task.startingAfter !== undefined) rows = rows.slice(rows.findIndex((t) => t.id === task.startingAfter) + 1);
    return { data: rows.slice(0, 100), has_more: rows.length > 100 };
  };
  return state;
}

async function listAll(fetch: FetchTransactionPage): Promise<string[]> {
  const ids: string[] = [];
  for await (const page of listTransactionWindows(fetch, {
    concurrency: 16,
    limit: 100,
    maxPages: 10_000,
    what: 'po_x',
  }))
    ids.push(...page.map((t) => (t as Txn).id));
  return ids;
}

const txns = (n: number, createdOf: (i: number) => number): Txn[] =>
  Array.from({ length: n }, (_, i) => ({ id: `txn_${String(i).padStart(6, '0')}`, created: createdOf(i) }));

/** A deterministic spread: the same case on every run. */
function spread(seed: number): (i: number) => number {
  let s = seed;
  return () => {
    s = (s * 16_807) % 2_147_483_647;
    return NOW - 5 * 86_400 + Math.floor((s / 2_147_483_647) * 2 * 86_400);
  };
}

describe('listing a payout by sub-windows', () => {
  it.each([
    ['a small payout, one page', txns(40, spread(3))],
    ['exactly one full page', txns(100, spread(5))],
    [
      'charges over two days and refunds over the next, a day apart',
      [
        ...txns(2_000, spread(7)),
        ...txns(300, (i) => NOW - 86_400 + i * 200).map((t) => ({ ...t, id: `txn_r${t.id.slice(4)}` })),
      ],
    ],
    [
      'a burst of 700 in one second among others',
      [
        ...txns(700, () => NOW - 3 * 86_400),
        ...txns(500, spread(11)).map((t) => ({ ...t, id: `txn_s${t.id.slice(4)}` })),
      ],
    ],
    [
      'a transaction from 2011 among recent ones',
      [...txns(450, spread(13)), { id: 'txn_old', created: 1_300_000_000 }],
    ],
  ])('%s: every transaction exactly once, at a bounded cost', async (_name, all) => {
    const stripe = stripeLike(all);
    const ids = await listAll(stripe.fetch);
    expect(ids.length).toBe(all.length);
    expect(new Set(ids)).toEqual(new Set(all.map((t) => t.id)));
    const pages = Math.max(1, Math.ceil(all.length / 100));
    // Each sub-window cut ends in a partial page; never a request per halving from 1970.
    expect(stripe.asked).toBeLessThanOrEqual(Math.ceil(pages * 1.6) + 10);
    if (pages <= 1) expect(stripe.asked).toBe(1);
    else expect(stripe.mostAtOnce).toBeGreaterThan(1);
  });

  it('a listing that hands out the same transaction twice fails, naming it', async () => {
    const fetch: FetchTransactionPage = async (task) =>
      task.startingAfter === undefined && task.gte === 0
        ? {
            data: [
              { id: 'txn_b', created: 10 },
              { id: 'txn_a', created: 10 },
            ],
            has_more: true,
          }
        : { data: [{ id: 'txn_b', created: 10 }], has_more: false };
    const error = await failure(listAll(fetch));
    expect(error.message).toBe('po_x cannot be listed: transaction txn_b was listed twice (a broken cursor)');
  });

  it('an answer that is not a list fails the listing, and the first failure wins', async () => {
    const fetch: FetchTransactionPage = async () => ({ data: null, has_more: false }) as never;
    const error = await failure(listAll(fetch));
    expect(error.message).toBe('po_x cannot be listed: data is null, not an array');
  });
});
