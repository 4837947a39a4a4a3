import { createHash } from 'node:crypto';
import { inTransaction, type Pool } from '../db/pool.js';
import { ensureDayPartitions, utcDay } from '../db/partitions.js';
import { LOCK_CLASS, LockObject } from '../db/locks.js';
import type { Logger } from '../log.js';
import type { MalformedCharge, NormalizedCharge } from '../stripe/types.js';
import { copyCharges } from './mirror-copy.js';
import { BrokenListingError, ownedBy } from './listing.js';
import type { ChargeSource } from './types.js';
import { widen, type TimeWindow } from './window.js';

/**
 * The pipeline of a real run (README "Throughput"): slices are listed and landed in the
 * mirror ahead of the judgement, several at once under the one shared rate budget, while
 * the judgement goes through the slices strictly in order (so checkpoints and the
 * watermark keep their meaning). Pages go to the mirror as they arrive, in batches, each
 * in its own short transaction: nothing per slice is held in memory but what a page
 * batch and the duplicate check need. A crash loses only what was listed ahead: the
 * mirror is a cache of Stripe, and the next run lists those slices again.
 */

/** Charges landed in the mirror per statement. */
const LAND_BATCH = 1_000;
export const MIN_DEPTH = 2;
export const MAX_DEPTH = 16;

/** What the judgement of a slice needs from its listing. */
export interface ListedSlice {
  unreadable: MalformedCharge[];
  /** Charges created in the slice itself (not the lease margins): `charges_scanned`. */
  inSlice: number;
}

export interface PrefetchDeps {
  pool: Pool;
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
  private readonly controller = new AbortController();
  private next = 0;
  private depth: number;

  constructor(
    private readonly deps: PrefetchDeps,
    private readonly account: string,
    private readonly slices: readonly TimeWindow[],
    private readonly margins: { leaseMs: number; readUntil: Date },
    signal?: AbortSignal,
  ) {
    const pace = deps.pace?.();
    this.depth = pace ? prefetchDepth(pace.ratePerSecond, pace.meanLatencyMs) : MIN_DEPTH;
    signal?.addEventListener('abort', () => this.controller.abort(signal.reason), { once: true });
    deps.log.info({ depth: this.depth }, 'listing slices ahead of the judgement (depth from the rate budget and the latency)');
  }

  /** Slice `index`, listed and in the mirror; starts the feeds after it, up to the depth. */
  async take(index: number): Promise<ListedSlice> {
    this.fill(index);
    const feed = this.feeds.get(index);
    if (!feed) throw new Error(`slice ${index} was never listed`);
    try {
      return await feed;
    } finally {
      this.feeds.delete(index);
      const pace = this.deps.pace?.();
      if (pace) this.depth = prefetchDepth(pace.ratePerSecond, pace.meanLatencyMs);
      this.fill(index + 1);
    }
  }

  /** Stops every listing still running (the run ended, failed or was interrupted). */
  close(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new Error('the run ended'));
    // Nobody waits on feeds past the end: their rejections are expected.
    for (const feed of this.feeds.values()) feed.catch(() => undefined);
  }

  private fill(from: number): void {
    while (this.next < this.slices.length && this.next < from + this.depth) {
      const index = this.next++;
      const feed = this.feed(this.slices[index] as TimeWindow);
      feed.catch(() => undefined); // awaited by take(); an early failure must not be unhandled meanwhile
      this.feeds.set(index, feed);
    }
  }

  private async feed(slice: TimeWindow): Promise<ListedSlice> {
    const readWindow = widen(slice, this.margins.leaseMs, this.margins.readUntil);
    const fetchedAt = this.deps.clock();
    const seen = new Map<string, string>();
    const unreadable: MalformedCharge[] = [];
    let inSlice = 0;
    let batch: NormalizedCharge[] = [];
    const land = async () => {
      if (batch.length === 0) return;
      const charges = batch;
      batch = [];
      const refused = await landCharges(this.deps.pool, charges, fetchedAt);
      for (const r of refused) {
        this.deps.log.warn({ charge: r.id, problem: r.problem }, 'the database refused a charge; it stays an open finding');
        unreadable.push(r);
      }
    };
    for await (const page of this.deps.listCharges(this.account, readWindow, this.controller.signal)) {
      for (const charge of page.charges) {
        const content = createHash('md5').update(JSON.stringify(charge)).digest('base64');
        const before = seen.get(charge.id);
        if (before !== undefined) {
          // One listing naming one charge twice: identical is harmless; different is a broken listing.
          if (before !== content) throw brokenListing(charge.id, readWindow);
          continue;
        }
        seen.set(charge.id, content);
        const at = charge.created * 1000;
        if (at >= slice.from.getTime() && at < slice.to.getTime()) inSlice += 1;
        batch.push(charge);
      }
      for (const bad of page.malformed) {
        // In the lease margins it belongs to the neighbouring slice, which lists it too.
        if (!ownedBy(slice, bad)) continue;
        unreadable.push(bad);
        this.deps.log.warn({ charge: bad.id, problem: bad.problem }, 'Stripe returned a charge the sweep cannot judge');
      }
      if (batch.length >= LAND_BATCH) await land();
    }
    await land();
    return { unreadable, inSlice };
  }
}


/** One batch into the mirror, in its own transaction; the charges the database refused come back as unreadable. */
async function landCharges(pool: Pool, charges: NormalizedCharge[], fetchedAt: Date): Promise<MalformedCharge[]> {
  let min = Infinity;
  let max = -Infinity;
  for (const c of charges) {
    min = Math.min(min, c.created);
    max = Math.max(max, c.created);
  }
  return inTransaction(pool, async (client) => {
    // Keeps `expire` from detaching a mirror partition under these inserts.
    await client.query('SELECT pg_advisory_xact_lock_shared($1, $2)', [LOCK_CLASS, LockObject.partitions]);
    await ensureDayPartitions(client, { from: utcDay(new Date(min * 1000)), to: utcDay(new Date(max * 1000)) }, ['stripe_charges']);
    const { refused } = await copyCharges(client, charges, fetchedAt);
    return refused.map((r) => ({ id: r.charge.id, account: r.charge.account, problem: `the database refused it: ${r.error.message}` }));
  });
}

function brokenListing(id: string, window: TimeWindow): Error {
  return new BrokenListingError(
    `Stripe listed charge ${id} twice with different content in ${window.from.toISOString()} – ${window.to.toISOString()}; ` +
      'the window is not judged (watermark kept); the next run reads it again',
  );
}
