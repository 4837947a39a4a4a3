import { formatDuration } from '../time/duration.js';
import { UsageError } from './context.js';
import { DAY_MS } from '../time/units.js';

/** Stripe has no charge before 2010: an older --from is a typo (or 1970), never history. */
export const EARLIEST_BACKFILL = new Date('2010-01-01T00:00:00Z');
/** A backfill longer than this, or cut into more slices, needs --i-know-this-is-large. */
export const LARGE_BACKFILL_DAYS = 31;
export const LARGE_BACKFILL_SLICES = 10_000;
/** No backfill is cut into more slices than this, flag or not: raise SWEEPER_SLICE instead. */
export const MAX_BACKFILL_SLICES = 1_000_000;

export const LARGE_BACKFILL_FLAG = '--i-know-this-is-large';

/**
 * The ceilings of one backfill (docs/judgement.md "Bad input and a hostile upstream"). A month
 * of hourly slices is an ordinary backfill; years of one-minute slices are a mistake
 * that would run for days, so a person has to say they mean it.
 */
export function assertBackfillBounds(window: { from: Date; to: Date }, sliceMs: number, large: boolean): void {
  const { from, to } = window;
  if (from < EARLIEST_BACKFILL) {
    throw new UsageError(
      `--from ${from.toISOString()} is before 2010-01-01: Stripe has no charges that old; start the backfill later`,
    );
  }
  const spanMs = to.getTime() - from.getTime();
  const slices = Math.ceil(spanMs / sliceMs);
  const size = `${formatDuration(spanMs)} in ${slices} slices of SWEEPER_SLICE ${formatDuration(sliceMs)}`;
  if (slices > MAX_BACKFILL_SLICES) {
    throw new UsageError(
      `the backfill is ${size}, more than ${MAX_BACKFILL_SLICES} slices: raise SWEEPER_SLICE or split the range`,
    );
  }
  if (!large && (spanMs > LARGE_BACKFILL_DAYS * DAY_MS || slices > LARGE_BACKFILL_SLICES)) {
    throw new UsageError(
      `the backfill is ${size}, more than ${LARGE_BACKFILL_DAYS} days or ${LARGE_BACKFILL_SLICES} slices: ` +
        `split the range, or pass ${LARGE_BACKFILL_FLAG} if you mean it`,
    );
  }
}
