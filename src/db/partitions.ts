import type { Queryable } from './pool.js';
import { DAY_MS } from '../time/units.js';

/** Tables partitioned by UTC day of `created_at`. */
export const DAY_PARTITIONED_TABLES = ['idempotency_keys', 'stripe_charges'] as const;
export type DayPartitionedTable = (typeof DAY_PARTITIONED_TABLES)[number];

/** The UTC calendar day of an instant, as `YYYY-MM-DD`. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/**
 * How far ahead partitions are made: enough that midnight never finds a day without
 * one even if maintenance skipped weeks, and within what sweeper_ensure_day_partitions
 * accepts (migrations/001_claims_and_payments.sql: at most 35 days ahead of the database's today).
 */
export const MAX_DAYS_AHEAD = 31;

/**
 * The days whose partitions must exist at `now`: the whole retention window behind
 * (a repair may re-create a claim dated days back) and as far ahead, up to
 * MAX_DAYS_AHEAD (so midnight never finds a day without a partition).
 */
export function partitionDays(now: Date, retentionMs: number): { from: string; to: string } {
  const days = Math.ceil(retentionMs / DAY_MS);
  return {
    from: utcDay(new Date(now.getTime() - days * DAY_MS)),
    to: utcDay(new Date(now.getTime() + Math.min(days, MAX_DAYS_AHEAD) * DAY_MS)),
  };
}

/** Creates missing day partitions in `[from, to]` (inclusive days); returns how many. */
export async function ensureDayPartitions(
  db: Queryable,
  range: { from: string; to: string },
  tables: readonly DayPartitionedTable[] = DAY_PARTITIONED_TABLES,
): Promise<number> {
  let created = 0;
  for (const table of tables) {
    const { rows } = await db.query<{ created: number }>(
      'SELECT sweeper_ensure_day_partitions($1::regclass, $2::date, $3::date) AS created',
      [table, range.from, range.to],
    );
    created += rows[0]?.created ?? 0;
  }
  return created;
}
