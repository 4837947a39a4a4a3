import { setMaxListeners } from 'node:events';
import type { Logger } from '../log.js';
import { requestsPerLatency, type MalformedCharge, type NormalizedCharge } from './provider.js';
import { BrokenListingError, ownedBy } from './listing.js';
import type { ChargeSource } from './types.js';
import { widen, type TimeWindow } from './window.js';

/**
 * The pipeline (docs/performance.md "The throughput design"): slices are listed ahead of the judgement, several
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
  return Math.max(MIN_DEPTH, Math.min(MAX_DEPTH, Math.ceil(requestsPerLatency({ ratePerSecond, meanLatencyMs }) * 2)));
}

/** One listing of a window: its charges (each once) and the ones it could not read. */
interface Listing {
  charges: NormalizedCharge[];
  unreadable: MalformedCharge[];
  fetchedAt: Date;
}

/**
 * Every slice is listed exactly, once. Its lease margins (docs/performance.md, "Every charge is listed once") are not
 * listed again: the charges of `[from - lease, from)` come from the listings before it
 * (kept since their own judgement), those of `[to, to + lease)` from the listings after
 * it (listed ahead anyway); only the first slice's listing reaches back into the margin
 * before the run, and the last one's into the margin after it. So a slice is judged once
 * the listing after it has finished too. Should that listing fail, the slice lists its
 * trailing margin itself, so a broken slice stops the run where it did when every slice
 * listed its own margins (no earlier).
 */
export class SlicePrefetcher {
  private readonly feeds = new Map<number, Promise<Listing>>();
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
  /** Charges already judged that lie in the next slice's leading margin, and when they were read. */
  private recent: { charges: NormalizedCharge[]; fetchedAt: Date } | null = null;

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

  /** Slice `index`, listed with its margins; starts the listings after it, up to the depth and the charges bound. */
  async take(index: number): Promise<ListedSlice> {
    this.current = index;
    const slice = this.slices[index] as TimeWindow;
    const readWindow = widen(slice, this.margins.leaseMs, this.margins.readUntil);
    const lastNeighbour = this.lastNeighbour(readWindow);
    this.fill(index, lastNeighbour);
    const feed = this.feeds.get(index);
    if (!feed) throw new Error(`slice ${index} was never listed`);
    try {
      const listed = await feed;
      const from = slice.from.getTime();
      const to = slice.to.getTime();
      const own = listed.charges.filter((c) => c.created * 1000 >= from && c.created * 1000 < to);
      const before = this.leading(index, listed, readWindow);
      const after = await this.trailing(index, listed, slice, readWindow, lastNeighbour);
      const charges = [...before.charges, ...own, ...after.charges];
      const fetchedAt = earliest(before.fetchedAt, listed.fetchedAt);
      // What the next slice's leading margin needs: it was judged here, and is judged again there.
      this.recent = {
        charges: [...before.charges, ...own].filter((c) => c.created * 1000 >= to - this.margins.leaseMs),
        fetchedAt,
      };
      return {
        charges,
        unreadable: listed.unreadable.filter((bad) => ownedBy(slice, bad)),
        // The earliest read of them all: a later read of any of these charges must be able to replace it.
        fetchedAt: earliest(fetchedAt, after.fetchedAt),
        readWindow,
      };
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

  /** The last slice whose listing holds part of `readWindow` (the slice's trailing margin). */
  private lastNeighbour(readWindow: TimeWindow): number {
    let last = this.current;
    while (last + 1 < this.slices.length && (this.slices[last + 1] as TimeWindow).from < readWindow.to) last += 1;
    return last;
  }

  /** The leading margin: charges kept from the slices before, or (the first slice) its own listing's. */
  private leading(index: number, listed: Listing, readWindow: TimeWindow): Margin {
    const from = readWindow.from.getTime();
    if (index === 0) {
      const start = (this.slices[0] as TimeWindow).from.getTime();
      return { charges: listed.charges.filter((c) => c.created * 1000 < start), fetchedAt: listed.fetchedAt };
    }
    const recent = this.recent;
    if (!recent) throw new Error(`slice ${index} was taken before slice ${index - 1}`);
    return { charges: recent.charges.filter((c) => c.created * 1000 >= from), fetchedAt: recent.fetchedAt };
  }

  /** The trailing margin: from the listings after the slice (the last one's own listing reaches past it). */
  private async trailing(
    index: number,
    listed: Listing,
    slice: TimeWindow,
    readWindow: TimeWindow,
    lastNeighbour: number,
  ): Promise<Margin> {
    const to = slice.to.getTime();
    const until = readWindow.to.getTime();
    if (index === this.slices.length - 1) {
      return { charges: listed.charges.filter((c) => c.created * 1000 >= to), fetchedAt: listed.fetchedAt };
    }
    const charges: NormalizedCharge[] = [];
    let fetchedAt: Date | null = null;
    try {
      for (let j = index + 1; j <= lastNeighbour; j += 1) {
        const next = await (this.feeds.get(j) as Promise<Listing>);
        charges.push(...next.charges.filter((c) => c.created * 1000 >= to && c.created * 1000 < until));
        fetchedAt = earliest(fetchedAt, next.fetchedAt);
      }
      return { charges, fetchedAt: fetchedAt ?? listed.fetchedAt };
    } catch (error) {
      if (this.controller.signal.aborted) throw error;
      // A later slice's listing failed; its own judgement reports that. This slice lists its margin itself.
      const own = await this.list({ from: slice.to, to: readWindow.to });
      return { charges: own.charges, fetchedAt: own.fetchedAt };
    }
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

  /** Lists slices from `this.next`: always up to `needed` (the judgement waits for them), then while the bounds allow. */
  private fill(from: number, needed = from): void {
    while (
      this.next < this.slices.length &&
      (this.next <= needed ||
        (this.largest === null
          ? this.next < from + MIN_DEPTH
          : this.next < from + this.depth && this.expected() + this.largest <= this.maxCharges))
    ) {
      const index = this.next++;
      this.sizes.set(index, 0);
      const feed = this.list(this.listingWindow(index), (n) => this.sizes.set(index, n));
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

  /** A slice's listing: the slice itself, and at the run's edges the margin outside it. */
  private listingWindow(index: number): TimeWindow {
    const slice = this.slices[index] as TimeWindow;
    const widened = widen(slice, this.margins.leaseMs, this.margins.readUntil);
    return {
      from: index === 0 ? widened.from : slice.from,
      to: index === this.slices.length - 1 ? new Date(Math.max(widened.to.getTime(), slice.to.getTime())) : slice.to,
    };
  }

  private async list(window: TimeWindow, onSize?: (charges: number) => void): Promise<Listing> {
    const fetchedAt = this.deps.clock();
    const seen = new Map<string, NormalizedCharge>();
    const charges: NormalizedCharge[] = [];
    const unreadable: MalformedCharge[] = [];
    if (window.to <= window.from) return { charges, unreadable, fetchedAt };
    for await (const page of this.deps.listCharges(this.account, window, this.controller.signal)) {
      for (const charge of page.charges) {
        const before = seen.get(charge.id);
        if (before !== undefined) {
          // One listing naming one charge twice: identical is harmless; different is a broken listing.
          // Compared only when it happens: the charges are held anyway, nothing is hashed per charge.
          if (JSON.stringify(before) !== JSON.stringify(charge)) throw brokenListing(charge.id, window);
          continue;
        }
        seen.set(charge.id, charge);
        charges.push(charge);
      }
      for (const bad of page.malformed) {
        unreadable.push(bad);
        this.deps.log.warn({ charge: bad.id, problem: bad.problem }, 'Stripe returned a charge the sweep cannot judge');
      }
      onSize?.(charges.length);
    }
    return { charges, unreadable, fetchedAt };
  }
}

type Margin = { charges: NormalizedCharge[]; fetchedAt: Date };

function earliest(a: Date | null, b: Date): Date {
  return a === null || b < a ? b : a;
}

function brokenListing(id: string, window: TimeWindow): Error {
  return new BrokenListingError(
    `Stripe listed charge ${id} twice with different content in ${window.from.toISOString()} – ${window.to.toISOString()}; ` +
      'the window is not judged (watermark kept); the next run reads it again',
  );
}
