import { setMaxListeners } from 'node:events';
import type { Logger } from '../log.js';
import type { MalformedCharge, NormalizedCharge } from './provider.js';
import { BrokenListingError, ownedBy } from './listing.js';
import type { ChargeSource } from './types.js';
import { widen, type TimeWindow } from './window.js';

/**
 * The pipeline (README "Throughput"): slices are listed ahead of the judgement, several
 * at once under the one shared rate budget, into a prefetch bounded by the charges it
 * holds; the judgement takes the slices strictly in order and lands each in the mirror
 * inside its own transaction (so checkpoints and the watermark keep their meaning, and
 * what a slice's judgement sees never depends on how far the listing got: a dry run and
 * a real run see the same). A crash loses only what was listed ahead.
 */

export const MIN_DEPTH = 2;
export const MAX_DEPTH = 16;
/** Charges held listed-but-not-judged at most (about 1–2 KB each in memory), whatever the depth. */
export const MAX_PREFETCHED_CHARGES = 20_000;

/** A slice's listing, for its judgement. */
export interface ListedSlice {
  charges: NormalizedCharge[];
  unreadable: MalformedCharge[];
  /** Charges created in the slice itself (not the lease margins): `charges_scanned`. */
  inSlice: number;
  /** When its listing started: what the mirror records as the read time. */
  fetchedAt: Date;
  /** What was listed: the slice with its lease margins (up to the run's start). */
  readWindow: TimeWindow;
}

export interface PrefetchDeps {
  listCharges: ChargeSource;
  clock: () => Date;
  log: Logger;
  /** Requests per second and the mean latency measured so far: how deep to list ahead. */
  pace?: () => { ratePerSecond: number; meanLatencyMs: number | null };
}

/**
 * How many slices to list ahead: enough requests in flight to keep the budget busy
 * (rate × latency) with a margin, since a slice starts from one request and splits.
 */
export function prefetchDepth(ratePerSecond: number, meanLatencyMs: number | null): number {
  const latency = (meanLatencyMs ?? 300) / 1000;
  return Math.max(MIN_DEPTH, Math.min(MAX_DEPTH, Math.ceil(ratePerSecond * latency * 2)));
}

export class SlicePrefetcher {
  private readonly feeds = new Map<number, Promise<ListedSlice>>();
  private readonly sizes = new Map<number, number>();
  /** Listings that have finished (their size is final). */
  private readonly done = new Set<number>();
  /** The most charges one finished listing held: what a listing still running is expected to reach. */
  private largest: number | null = null;
  private readonly controller = new AbortController();
  private next = 0;
  /** The slice the judgement is on: listings start ahead of it. */
  private current = 0;
  private depth: number;

  constructor(
    private readonly deps: PrefetchDeps,
    private readonly account: string,
    private readonly slices: readonly TimeWindow[],
    private readonly margins: { leaseMs: number; readUntil: Date },
    signal?: AbortSignal,
    private readonly maxCharges = MAX_PREFETCHED_CHARGES,
  ) {
    const pace = deps.pace?.();
    this.depth = pace ? prefetchDepth(pace.ratePerSecond, pace.meanLatencyMs) : MIN_DEPTH;
    // Every listing in flight listens on it (up to MAX_DEPTH at once): not a leak.
    setMaxListeners(MAX_DEPTH * 4 + 10, this.controller.signal);
    signal?.addEventListener('abort', () => this.controller.abort(signal.reason), { once: true });
    deps.log.info(
      { depth: this.depth, max_charges: maxCharges },
      'listing slices ahead of the judgement (depth from the rate budget and the latency)',
    );
  }

  /** Slice `index`, listed; starts the listings after it, up to the depth and the charges bound. */
  async take(index: number): Promise<ListedSlice> {
    this.current = index;
    this.fill(index);
    const feed = this.feeds.get(index);
    if (!feed) throw new Error(`slice ${index} was never listed`);
    try {
      return await feed;
    } finally {
      this.feeds.delete(index);
      this.sizes.delete(index);
      this.done.delete(index);
      const pace = this.deps.pace?.();
      if (pace) this.depth = prefetchDepth(pace.ratePerSecond, pace.meanLatencyMs);
    }
  }

  /** Stops every listing still running (the run ended, failed or was interrupted). */
  close(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new Error('the run ended'));
    for (const feed of this.feeds.values()) feed.catch(() => undefined);
  }

  /**
   * The charges listed ahead of the slice being judged once the listings running now finish: a listing
   * still running counts as the largest finished one (its own count only says how far it
   * got, and every listing starts at zero). Until one has finished nothing is known, and
   * only MIN_DEPTH slices are listed ahead.
   */
  private expected(): number {
    let n = 0;
    for (const [index, size] of this.sizes) {
      if (index === this.current) continue; // the slice being judged: held besides the bound
      n += this.done.has(index) ? size : Math.max(size, this.largest ?? 0);
    }
    return n;
  }

  private fill(from: number): void {
    // The slice the judgement waits for is always listed; the ones after it while the bounds allow.
    while (
      this.next < this.slices.length &&
      (this.next <= from ||
        (this.largest === null
          ? this.next < from + MIN_DEPTH
          : this.next < from + this.depth && this.expected() + this.largest <= this.maxCharges))
    ) {
      const index = this.next++;
      this.sizes.set(index, 0);
      const feed = this.feed(index, this.slices[index] as TimeWindow);
      // A finished listing makes room for the next one while the judgement works.
      feed.then(
        (listed) => {
          this.done.add(index);
          this.largest = Math.max(this.largest ?? 0, listed.charges.length);
          this.fill(this.current);
        },
        () => undefined, // awaited by take(); an early failure must not be unhandled meanwhile
      );
      this.feeds.set(index, feed);
    }
  }

  private async feed(index: number, slice: TimeWindow): Promise<ListedSlice> {
    const readWindow = widen(slice, this.margins.leaseMs, this.margins.readUntil);
    const fetchedAt = this.deps.clock();
    const seen = new Map<string, NormalizedCharge>();
    const charges: NormalizedCharge[] = [];
    const unreadable: MalformedCharge[] = [];
    let inSlice = 0;
    for await (const page of this.deps.listCharges(this.account, readWindow, this.controller.signal)) {
      for (const charge of page.charges) {
        const before = seen.get(charge.id);
        if (before !== undefined) {
          // One listing naming one charge twice: identical is harmless; different is a broken listing.
          // Compared only when it happens: the charges are held anyway, nothing is hashed per charge.
          if (JSON.stringify(before) !== JSON.stringify(charge)) throw brokenListing(charge.id, readWindow);
          continue;
        }
        seen.set(charge.id, charge);
        const at = charge.created * 1000;
        if (at >= slice.from.getTime() && at < slice.to.getTime()) inSlice += 1;
        charges.push(charge);
      }
      for (const bad of page.malformed) {
        // In the lease margins it belongs to the neighbouring slice, which lists it too.
        if (!ownedBy(slice, bad)) continue;
        unreadable.push(bad);
        this.deps.log.warn({ charge: bad.id, problem: bad.problem }, 'Stripe returned a charge the sweep cannot judge');
      }
      this.sizes.set(index, charges.length);
    }
    return { charges, unreadable, inSlice, fetchedAt, readWindow };
  }
}

function brokenListing(id: string, window: TimeWindow): Error {
  return new BrokenListingError(
    `Stripe listed charge ${id} twice with different content in ${window.from.toISOString()} – ${window.to.toISOString()}; ` +
      'the window is not judged (watermark kept); the next run reads it again',
  );
}
