import type { TimeWindow } from './window.js';

/**
 * A dense slice is judged in parts, each holding at most `maxCharges` of the charges
 * created in the slice (docs/performance.md "Dense slices judged in parts"): one batch
 * gathers and judges every identity of its charges at once, so its objects grow with the
 * slice's density, not with the run.
 *
 * The parts cut the slice at whole seconds (Stripe's `created` resolution) between
 * charges, so no second is split: a part holds more than `maxCharges` only when that many
 * charges share one second. The first part's listed window starts where the slice's
 * listing did (its lease margin before), the last one's ends where it ended; in between,
 * a part's listed window is the part itself. Every charge the slice listed therefore
 * names its identities into exactly one part's judgement, and every charge the slice
 * counts is counted by one part. The whole listing lands in the mirror before the first
 * part is judged (slice.ts), so a part never judges an identity without a charge that
 * the slice listed.
 */
export interface SlicePart {
  /** What this part judges and counts, and where its checkpoint goes. */
  slice: TimeWindow;
  /** The charges its identities come from: the part, with the slice's margins at either end. */
  listed: TimeWindow;
  /** Charges created in `slice`. */
  charges: number;
}

export function partsOf(
  slice: TimeWindow,
  listed: TimeWindow,
  /** `created` (unix seconds) of the charges listed, in any order; those outside the slice are left out. */
  createdSeconds: readonly number[],
  maxCharges: number,
): SlicePart[] {
  if (!(Number.isInteger(maxCharges) && maxCharges >= 1)) {
    throw new RangeError(`maxCharges must be a positive integer (got ${maxCharges})`);
  }
  const from = slice.from.getTime();
  const to = slice.to.getTime();
  const sorted = Float64Array.from(createdSeconds.filter((s) => s * 1000 >= from && s * 1000 < to)).sort();
  const cuts: Array<{ at: number; index: number }> = [];
  let start = 0;
  while (sorted.length - start > maxCharges) {
    const second = sorted[start + maxCharges] as number;
    // The first charge of that second opens the next part, unless the whole part so far
    // lies in that one second: then the part ends after it.
    let index = lowerBound(sorted, second, start);
    if (index === start) index = lowerBound(sorted, second + 1, start);
    if (index >= sorted.length) break;
    cuts.push({ at: (sorted[index] as number) * 1000, index });
    start = index;
  }
  const bounds = [from, ...cuts.map((c) => c.at), to];
  const indices = [0, ...cuts.map((c) => c.index), sorted.length];
  const last = bounds.length - 2;
  return bounds.slice(0, -1).map((start, k) => {
    const end = bounds[k + 1] as number;
    return {
      slice: { from: new Date(start), to: new Date(end) },
      listed: {
        from: k === 0 ? listed.from : new Date(start),
        to: k === last ? listed.to : new Date(end),
      },
      charges: (indices[k + 1] as number) - (indices[k] as number),
    };
  });
}

/** The first index at or after `from` whose value is at least `value` (`sorted` ascending). */
function lowerBound(sorted: Float64Array, value: number, from: number): number {
  let lo = from;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
