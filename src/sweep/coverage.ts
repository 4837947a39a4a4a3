import type { Queryable } from '../db/pool.js';
import type { TimeWindow } from './window.js';

/**
 * What the sweep has judged of an account so far: the committed part of every run's
 * window, `[window_from, checkpoint)` of its recon_runs row (scheduled runs and
 * backfills alike). The late-changes step and the deep re-read judge charges again only
 * inside it: a charge created before anything was swept waits for a backfill, as a first
 * run's lookback says (docs/judgement.md "Late changes").
 */

const COVERAGE = `
SELECT window_from, checkpoint FROM recon_runs
 WHERE account = $1 AND checkpoint > window_from AND checkpoint > $2 AND window_from < $3 AND id IS DISTINCT FROM $4
 ORDER BY window_from`;

/**
 * The judged parts of `range`, merged and clipped to it, oldest first. `exceptRun`: leave
 * out one run's own part (the deep re-read does not re-list what its run just listed).
 */
export async function readCoverage(
  db: Queryable,
  account: string,
  range: TimeWindow,
  exceptRun: string | null = null,
): Promise<TimeWindow[]> {
  const { rows } = await db.query<{ window_from: Date; checkpoint: Date }>(COVERAGE, [
    account,
    range.from,
    range.to,
    exceptRun,
  ]);
  return mergeIntervals(
    rows.map((r) => ({ from: r.window_from, to: r.checkpoint })),
    range,
  );
}

/** Overlapping or touching intervals joined, each clipped to `range`; empty ones dropped. */
export function mergeIntervals(intervals: readonly TimeWindow[], range: TimeWindow): TimeWindow[] {
  const clipped = intervals
    .map((i) => ({
      from: new Date(Math.max(i.from.getTime(), range.from.getTime())),
      to: new Date(Math.min(i.to.getTime(), range.to.getTime())),
    }))
    .filter((i) => i.from < i.to)
    .sort((a, b) => a.from.getTime() - b.from.getTime());
  const merged: TimeWindow[] = [];
  for (const i of clipped) {
    const last = merged.at(-1);
    if (last && i.from.getTime() <= last.to.getTime()) {
      if (i.to > last.to) last.to = i.to;
    } else merged.push({ ...i });
  }
  return merged;
}

/** Whether an instant lies inside the coverage. */
export function isCovered(coverage: readonly TimeWindow[], at: Date): boolean {
  const t = at.getTime();
  return coverage.some((i) => i.from.getTime() <= t && t < i.to.getTime());
}

/** Whether a whole window lies inside one interval of the coverage. */
export function coversWindow(coverage: readonly TimeWindow[], window: TimeWindow): boolean {
  return coverage.some((i) => i.from.getTime() <= window.from.getTime() && window.to.getTime() <= i.to.getTime());
}
