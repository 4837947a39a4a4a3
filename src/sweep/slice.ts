import type { MalformedCharge, NormalizedCharge } from '../stripe/types.js';
import { judgeBatch, type RunContext } from './batch.js';
import { BrokenListingError, ownedBy } from './listing.js';
import type { ListedSlice } from './prefetch.js';
import { loadSliceFacts } from './facts-sql.js';
import { advanceWatermark, recordSliceProgress } from './runs-store.js';
import type { SweepDeps, SweepOptions } from './types.js';
import { widen, type TimeWindow } from './window.js';

/**
 * One slice of the window: read Stripe's charges created in it (± a lease, outside any
 * transaction), then judge it as one batch (batch.ts) whose checkpoint is the run's
 * resume point and, for a scheduled run, the watermark.
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
  /** A real run's prefetcher has listed the slice and landed it in the mirror already (prefetch.ts). */
  listed?: ListedSlice,
): Promise<{ refundIntents: number }> {
  const { run, slice, report } = ctx;
  const readWindow = widen(slice, options.leaseMs, ctx.readUntil);
  const fetchedAt = deps.clock();
  const { charges, unreadable, inSlice } = listed ? { charges: [], ...listed } : await readSlice(deps, options, ctx, readWindow);
  await deps.faultPoint?.(`slice:${ctx.index}:listed`);
  report.charges_scanned += inSlice;
  return judgeBatch(deps, options, ctx, {
    name: `slice:${ctx.index}`,
    charges,
    fetchedAt,
    unreadable,
    load: (client) => loadSliceFacts(client, run.account, slice),
    countsMatched: (created) => created >= slice.from && created < slice.to,
    async checkpoint(client, deferred, now) {
      if (deferred.length > 0) holdAt(ctx, deferred);
      const reached = ctx.watermarkHold.at ?? slice.to;
      await recordSliceProgress(client, run.id, {
        checkpoint: reached,
        chargesScanned: report.charges_scanned,
        findings: report.findings,
        repaired: report.repaired,
      });
      if (run.mode === 'run') await advanceWatermark(client, run.account, run.watermarkShard, reached, run.id, now);
    },
  });
}

async function readSlice(deps: SweepDeps, options: SweepOptions, ctx: SliceContext, readWindow: TimeWindow) {
  const { slice } = ctx;
  const seen = new Map<string, NormalizedCharge>();
  const unreadable: MalformedCharge[] = [];
  let inSlice = 0;
  for await (const page of deps.listCharges(ctx.run.account, readWindow, options.signal)) {
    for (const charge of page.charges) {
      const before = seen.get(charge.id);
      if (before) {
        // One listing naming one charge twice: identical is harmless; different is a broken listing.
        if (JSON.stringify(before) !== JSON.stringify(charge)) {
          throw new BrokenListingError(
            `Stripe listed charge ${charge.id} twice with different content in ${readWindow.from.toISOString()} – ${readWindow.to.toISOString()}; ` +
              'the window is not judged (watermark kept); the next run reads it again',
          );
        }
        continue;
      }
      seen.set(charge.id, charge);
      const at = charge.created * 1000;
      if (at >= slice.from.getTime() && at < slice.to.getTime()) inSlice += 1;
    }
    for (const bad of page.malformed) {
      if (!ownedBy(slice, bad)) continue;
      unreadable.push(bad);
      ctx.log.warn({ charge: bad.id, problem: bad.problem }, 'Stripe returned a charge the sweep cannot judge');
    }
  }
  return { charges: [...seen.values()], unreadable, inSlice };
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
    { slice: { from: slice.from.toISOString(), to: slice.to.toISOString() }, deferred: deferred.length, example: deferred[0] },
    `keys held by a live writer inside the settled window were not judged (or Stripe's own word on them was still missing); ${then}. ` +
      "If this repeats, check that the claim library's lease is SWEEPER_CLAIM_LEASE (claimSettingsFromEnv) and that app servers " +
      'and this job agree on the time',
  );
}

export { MAX_CLAIMS_CREATED_PER_SLICE } from './batch.js';
