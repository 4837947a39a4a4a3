import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import type { ChargePage, ChargeSource, NormalizedCharge } from '../../src/sweep/provider.js';
import { BrokenListingError } from '../../src/sweep/listing.js';
import { partsOf } from '../../src/sweep/parts.js';
import { MAX_DEPTH, MIN_DEPTH, prefetchDepth, SlicePrefetcher } from '../../src/sweep/prefetch.js';
import type { TimeWindow } from '../../src/sweep/window.js';
import { deferred, settle } from '../support/promises.js';
import { charge } from '../support/scenario.js';

/**
 * The prefetch (docs/performance.md "The throughput design"): how many slices are listed ahead of the judgement,
 * and the bound on the charges they hold. Listings are driven by hand: each one waits
 * until the test lets it finish, so what runs at once is observed, not timed.
 */

const HOUR = 3_600_000;
const START = Date.UTC(2026, 10, 10);
const slices: TimeWindow[] = Array.from({ length: 12 }, (_, i) => ({
  from: new Date(START + i * HOUR),
  to: new Date(START + (i + 1) * HOUR),
}));
const sliceOf = (window: TimeWindow) => Math.round((window.from.getTime() - START) / HOUR);

/** A listing per slice that yields `perSlice` charges once released. */
function heldListings(perSlice: number) {
  const gates = new Map<number, ReturnType<typeof deferred<void>>>();
  const started: number[] = [];
  const gate = (i: number) => {
    if (!gates.has(i)) gates.set(i, deferred<void>());
    return gates.get(i)!;
  };
  const source: ChargeSource = async function* (_account, window) {
    const i = sliceOf(window);
    started.push(i);
    await gate(i).promise;
    const created = Math.floor(window.from.getTime() / 1000);
    const charges: NormalizedCharge[] = Array.from({ length: perSlice }, (_, k) =>
      charge({ id: `ch_${i}_${k}`, created: created + (k % 3000) }),
    );
    const page: ChargePage = { charges, malformed: [] };
    yield page;
  };
  return { source, started, release: (i: number) => gate(i).resolve() };
}

function prefetcher(source: ChargeSource, ratePerSecond: number, maxCharges?: number) {
  return new SlicePrefetcher(
    {
      listCharges: source,
      clock: () => new Date(START + 24 * HOUR),
      log: silentLogger(),
      pace: () => ({ ratePerSecond, meanLatencyMs: 300 }),
    },
    'platform',
    slices,
    { leaseMs: 0, readUntil: new Date(START + 24 * HOUR) },
    undefined,
    maxCharges,
  );
}

describe('prefetchDepth', () => {
  it('keeps rate × latency × 2 requests in flight, between MIN_DEPTH and MAX_DEPTH', () => {
    expect(prefetchDepth(25, 300)).toBe(15);
    expect(prefetchDepth(20, 300)).toBe(12);
    expect(prefetchDepth(1, 300)).toBe(MIN_DEPTH);
    expect(prefetchDepth(100, 300)).toBe(MAX_DEPTH);
    expect(prefetchDepth(25, null)).toBe(15); // 300 ms assumed before the first answer
  });
});

describe('SlicePrefetcher', () => {
  it('lists MIN_DEPTH slices ahead until one listing finished, then up to the depth while small slices fit the bound', async () => {
    const { source, started, release } = heldListings(100);
    const p = prefetcher(source, 25); // depth 15
    const first = p.take(0);
    await settle();
    expect([...started].sort((a, b) => a - b)).toEqual([0, 1]);
    release(0);
    expect((await first).charges).toHaveLength(100);
    await settle();
    // 100 charges each: the depth, not the 20,000 bound, decides.
    expect(started.length).toBe(Math.min(slices.length, 15));
    for (let i = 0; i < slices.length; i += 1) release(i);
    p.close();
  });

  it('never lists ahead more charges than the bound: large slices go one at a time beside the one being judged', async () => {
    const { source, started, release } = heldListings(15_000);
    const p = prefetcher(source, 25, 20_000);
    const first = p.take(0);
    await settle();
    release(0);
    await first;
    release(1);
    await settle();
    await settle();
    // Slice 1 (15,000) is listed ahead; a second one would pass 20,000.
    expect([...started].sort((a, b) => a - b)).toEqual([0, 1]);
    const second = p.take(1);
    await settle();
    // Judging slice 1 (held besides the bound): slice 2 may be listed ahead, no more.
    expect([...started].sort((a, b) => a - b)).toEqual([0, 1, 2]);
    expect((await second).charges).toHaveLength(15_000);
    for (let i = 0; i < slices.length; i += 1) release(i);
    p.close();
  });
});

describe('a listing naming one charge twice', () => {
  const twice = (second: NormalizedCharge): ChargeSource =>
    async function* (_account, window) {
      const first = charge({ id: 'ch_twice', created: Math.floor(window.from.getTime() / 1000) + 60 });
      yield { charges: [first], malformed: [] };
      yield { charges: [{ ...second, created: first.created }], malformed: [] };
    };

  it('keeps one copy when both are identical', async () => {
    const p = prefetcher(twice(charge({ id: 'ch_twice', created: 0 })), 25);
    expect((await p.take(0)).charges.map((c) => c.id)).toEqual(['ch_twice']);
    p.close();
  });

  it('fails the window when they differ (two versions of one charge)', async () => {
    const p = prefetcher(twice(charge({ id: 'ch_twice', created: 0, amount: 1 })), 25);
    await expect(p.take(0)).rejects.toBeInstanceOf(BrokenListingError);
    p.close();
  });
});

describe('lease margins come from the neighbouring listings, not from listing them again', () => {
  const LEASE = 2 * 60_000;
  const MINUTE = 60_000;
  // A charge a minute inside each side of every slice boundary, and one mid-slice.
  const times = slices.flatMap((s) => [
    s.from.getTime() + MINUTE,
    s.from.getTime() + 30 * MINUTE,
    s.to.getTime() - MINUTE,
  ]);
  const all = [START - MINUTE, ...times, START + 12 * HOUR + MINUTE].map((at, k) =>
    charge({ id: `ch_${k}`, created: Math.floor(at / 1000) }),
  );
  const inWindow = (window: TimeWindow) =>
    all.filter((c) => c.created * 1000 >= window.from.getTime() && c.created * 1000 < window.to.getTime());

  function source(failing?: (window: TimeWindow) => boolean) {
    const asked: TimeWindow[] = [];
    const list: ChargeSource = async function* (_account, window) {
      asked.push(window);
      if (failing?.(window)) throw new Error('Stripe is down');
      yield { charges: inWindow(window), malformed: [] };
    };
    return { list, asked };
  }

  const withLease = (list: ChargeSource) =>
    new SlicePrefetcher(
      { listCharges: list, clock: () => new Date(START + 24 * HOUR), log: silentLogger() },
      'platform',
      slices,
      { leaseMs: LEASE, readUntil: new Date(START + 24 * HOUR) },
    );

  it('lists every slice once (the first reaching back a lease, the last forward one) and hands each slice its margins', async () => {
    const { list, asked } = source();
    const p = withLease(list);
    for (const [i, slice] of slices.entries()) {
      const listed = await p.take(i);
      const readWindow = { from: new Date(slice.from.getTime() - LEASE), to: new Date(slice.to.getTime() + LEASE) };
      expect(listed.readWindow).toEqual(readWindow);
      expect(listed.charges.map((c) => c.id).sort()).toEqual(
        inWindow(readWindow)
          .map((c) => c.id)
          .sort(),
      );
      // What slice.ts counts as scanned: the parts' charges, the margins left out.
      const parts = partsOf(
        slice,
        listed.readWindow,
        listed.charges.map((c) => c.created),
        2,
      );
      expect(parts.reduce((n, part) => n + part.charges, 0)).toBe(inWindow(slice).length);
    }
    p.close();
    const last = slices[slices.length - 1]!;
    expect(asked.map((w) => [w.from.getTime(), w.to.getTime()]).sort((a, b) => a[0]! - b[0]!)).toEqual(
      slices.map((s, i) => [
        i === 0 ? s.from.getTime() - LEASE : s.from.getTime(),
        s === last ? s.to.getTime() + LEASE : s.to.getTime(),
      ]),
    );
  });

  it('a slice whose next listing failed lists its trailing margin itself and is judged; the next slice then fails', async () => {
    const broken = slices[3]!;
    const { list, asked } = source(
      (w) => w.from.getTime() === broken.from.getTime() && w.to.getTime() === broken.to.getTime(),
    );
    const p = withLease(list);
    for (let i = 0; i < 3; i += 1) await p.take(i);
    const third = slices[2]!;
    expect(asked).toContainEqual({ from: third.to, to: new Date(third.to.getTime() + LEASE) });
    await expect(p.take(3)).rejects.toThrow('Stripe is down');
    p.close();
  });
});
