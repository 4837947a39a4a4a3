import type { Queryable } from '../db/pool.js';

/** One run as the runs table shows it (recon_runs). */
export interface RunRow {
  id: string;
  mode: string;
  account: string;
  shard: string;
  status: string;
  window_from: Date;
  window_to: Date;
  charges_scanned: number;
  findings: Record<string, number>;
  repaired: Record<string, number>;
  unreconciled: number | null;
  error: string | null;
  started_at: Date;
  finished_at: Date | null;
}

export const RUNS_PAGE_SIZE = 50;

/** The latest runs, newest first, keyset-paged by (started_at, id): `before` is the last run of the previous page. */
export async function readRuns(
  db: Queryable,
  options: { account: string | null; before: { at: Date; id: string } | null },
): Promise<{ rows: RunRow[]; hasMore: boolean }> {
  const { rows } = await db.query<RunRow>(
    `SELECT id, mode, account, shard, status, window_from, window_to, charges_scanned, findings, repaired,
            unreconciled, error, started_at, finished_at
       FROM recon_runs
      WHERE ($1::text IS NULL OR account = $1)
        AND ($2::timestamptz IS NULL OR (started_at, id) < ($2, $3))
      ORDER BY started_at DESC, id DESC
      LIMIT ${RUNS_PAGE_SIZE + 1}`,
    [options.account, options.before?.at ?? null, options.before?.id ?? null],
  );
  return { rows: rows.slice(0, RUNS_PAGE_SIZE), hasMore: rows.length > RUNS_PAGE_SIZE };
}

/** Open findings per category at evenly spaced instants: `at[i]`, and each category's count there. */
export interface OpenSeries {
  at: Date[];
  byCategory: Map<string, number[]>;
}

/**
 * How many findings of each category were open at each of `points` instants from `from`
 * to `to`, derived from first_seen_at and closed_at: a finding counts at instant t when
 * first_seen_at <= t and it was not closed by t (a finding repaired as it was found,
 * closed_at = first_seen_at, never counts). One scan of the findings that were open at
 * some time after `from`: each contributes +1 at the instant it was found and -1 at the
 * instant it closed, summed per bucket and then cumulatively per category, so the cost
 * does not grow with the number of instants. A finding reopened later (a repair undone)
 * counts from its first sighting: the table keeps no history of reopenings.
 */
export async function readOpenSeries(
  db: Queryable,
  options: { from: Date; to: Date; points: number; account: string | null },
): Promise<OpenSeries> {
  const steps = Math.max(1, options.points - 1);
  const stepSeconds = (options.to.getTime() - options.from.getTime()) / 1000 / steps;
  const { rows } = await db.query<{ category: string; i: number; open: number }>(
    `WITH changes AS (
       SELECT category, first_seen_at AS at, 1 AS delta FROM recon_findings
        WHERE ($4::text IS NULL OR account = $4) AND first_seen_at <= $2
          AND (closed_at IS NULL OR (closed_at > first_seen_at AND closed_at > $1))
       UNION ALL
       SELECT category, closed_at, -1 FROM recon_findings
        WHERE ($4::text IS NULL OR account = $4) AND first_seen_at <= $2
          AND closed_at > first_seen_at AND closed_at > $1 AND closed_at <= $2
     ), per_bucket AS (
       -- Instant i is $1 + i * step: a change at t counts from the first instant at or after it.
       SELECT category, greatest(0, ceil(extract(epoch FROM (at - $1)) / $3))::int AS i, sum(delta)::int AS delta
         FROM changes GROUP BY 1, 2
     ), grid AS (
       SELECT c.category, i FROM (SELECT DISTINCT category FROM per_bucket) c CROSS JOIN generate_series(0, $5) AS i
     )
     SELECT g.category, g.i,
            sum(coalesce(b.delta, 0)) OVER (PARTITION BY g.category ORDER BY g.i)::int AS open
       FROM grid g LEFT JOIN per_bucket b USING (category, i)
      ORDER BY g.category, g.i`,
    [options.from, options.to, stepSeconds, options.account, steps],
  );
  const at = Array.from({ length: steps + 1 }, (_, i) => new Date(options.from.getTime() + i * stepSeconds * 1000));
  const byCategory = new Map<string, number[]>();
  for (const r of rows) {
    const values = byCategory.get(r.category) ?? new Array<number>(steps + 1).fill(0);
    values[r.i] = r.open;
    byCategory.set(r.category, values);
  }
  // A category whose findings all closed before the range shows no line.
  for (const [category, values] of byCategory) if (values.every((v) => v === 0)) byCategory.delete(category);
  return { at, byCategory };
}
