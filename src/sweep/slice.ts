import { judgeBatch, type RunContext } from './batch.js';
import type { ListedSlice } from './prefetch.js';
import { loadListedSliceFacts } from './listed-facts.js';
import { partsOf } from './parts.js';
import { advanceWatermark, recordSliceProgress } from './runs-store.js';
import type { SweepDeps, SweepOptions } from './types.js';
import type { TimeWindow } from './window.js';

/**
 * One slice of the window: its listing (charges created in it ± a lease, read outside
 * any transaction by the prefetcher) judged as one batch (batch.ts), or, when it holds
 * more than SweepOptions.batchCharges charges, as several batches, one per part of it
 * (parts.ts). Each batch's checkpoint is the run's resume point and, for a scheduled
 * run, the watermark.
 */

export interface SliceContext extends RunContext {
  slice: TimeWindow;
  index: number;
  /**
   * The start of the first slice that deferred a key (a live lease, a repair lost to
   * a writer, Stripe's word still missing): the watermark or checkpoint goes no
   * further this run, so a later run judges that key again.
   */
  watermarkHold: { at: Date | null };
}

export async function sweepSlice(
  deps: SweepDeps,
  options: SweepOptions,
  ctx: SliceContext,
  /** The slice's listing, from the prefetcher (prefetch.ts). */
  listed: ListedSlice,
): Promise<{ refundIntents: number; complete: boolean }> {
  const { run, slice, report } = ctx;
  const { charges, unreadable, fetchedAt, readWindow } = listed;
  await deps.faultPoint?.(`slice:${ctx.index}:listed`);
  const parts = partsOf(
    slice,
    readWindow,
    charges.map((c) => c.created),
    options.batchCharges,
  );
  let refundIntents = 0;
  // Between two parts no transaction holds the mirror's partitions: the lock connection
  // does, for the whole slice, or `expire` could drop a day that part 0 landed and a
  // later part judges (its payment rows would then look chargeless).
  const release = parts.length > 1 ? await ctx.lock.holdPartitions() : null;
  try {
    for (const [k, part] of parts.entries()) {
      // Between parts, as between slices: a stop asked for ends the run at the last commit.
      if (k > 0 && options.signal?.aborted) return { refundIntents, complete: false };
      const partCtx: SliceContext = { ...ctx, slice: part.slice };
      // The first part lands the slice's whole listing: every part then judges its
      // identities with every charge the slice listed (parts.ts).
      const done = await judgeBatch(deps, options, partCtx, {
        name: parts.length === 1 ? `slice:${ctx.index}` : `slice:${ctx.index}.${k}`,
        charges: k === 0 ? charges : [],
        fetchedAt,
        // Every part carries the slice's named unreadable charges (the first part's refused
        // ones included): a later part may judge an older read of one from the mirror, and
        // must not close its finding as healed. Counted once (countedMalformed).
        unreadable: k === 0 ? unreadable : unreadable.filter((bad) => bad.id !== null),
        partitionsHeld: release !== null,
        // Judged from the listing itself when the mirror holds just what it read (listed-facts.ts).
        load: (client) => loadListedSliceFacts(client, run.account, part, { charges, fetchedAt }, options),
        countsMatched: (at) => at >= part.slice.from && at < part.slice.to,
        async checkpoint(client, deferred, now) {
          if (deferred.length > 0) holdAt(partCtx, deferred);
          const reached = ctx.watermarkHold.at ?? part.slice.to;
          await recordSliceProgress(client, run.id, {
            checkpoint: reached,
            // With this part's charges, counted in the report once the part has committed (below).
            chargesScanned: report.charges_scanned + part.charges,
            findings: report.findings,
            repaired: report.repaired,
          });
          if (run.mode === 'run') await advanceWatermark(client, run.account, reached, run.id, now);
        },
      });
      // Counted once the part stands: a part rolled back (a stop asked for while Stripe's word
      // was read) is in neither the charges scanned nor the category counts.
      report.charges_scanned += part.charges;
      refundIntents += done.refundIntents;
    }
    return { refundIntents, complete: true };
  } finally {
    await release?.();
  }
}

/**
 * Keys held back were not judged: this run goes no further than the start of the
 * first slice that deferred one (watermark, or a backfill's resume checkpoint), so a
 * later run judges them again. Settle is at least one lease, so with one lease
 * setting and agreeing clocks no settled key is in a live lease: it means they disagree.
 */
function holdAt(ctx: SliceContext, deferred: string[]): void {
  const { slice } = ctx;
  ctx.watermarkHold.at ??= slice.from;
  const then =
    ctx.run.mode === 'run'
      ? `this run's watermark goes no further than ${ctx.watermarkHold.at.toISOString()}, so the next run judges them again`
      : 'they are counted in deferred_keys: run this backfill again once their leases have ended';
  ctx.log.warn(
    {
      slice: { from: slice.from.toISOString(), to: slice.to.toISOString() },
      deferred: deferred.length,
      example: deferred[0],
    },
    `keys held by a live writer inside the settled window were not judged (or Stripe's own word on them was still missing); ${then}. ` +
      "If this repeats, check that the claim library's lease is SWEEPER_CLAIM_LEASE (claimSettingsFromEnv) and that app servers " +
      'and this job agree on the time',
  );
}
