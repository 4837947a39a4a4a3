import type { Queryable } from '../db/pool.js';
import { DAY_MS } from '../time/units.js';

/**
 * How complete reconciliation is, per account (docs/judgement.md "Completeness"):
 * - the lag of the charges watermark (how far the scheduled sweep has judged) and of
 *   the events cursor (how far Stripe's change events have been read), each against
 *   SWEEPER_MAX_LAG: either one past it means the sweeper is stalled, whatever the
 *   findings say;
 * - for each of the last `days` UTC days, the charges of that day in the mirror, and
 *   how many of them are settled: judged (created before the watermark, or inside the
 *   committed part of a backfill) and not the charge of an open finding.
 */
export interface CompletenessOptions {
  now: Date;
  /** SWEEPER_DEEP_READ_DAYS: the days the deep re-read keeps checking. */
  days: number;
  maxLagMs: number;
}

export interface DaySettled {
  /** UTC day, `YYYY-MM-DD`. */
  day: string;
  charges: number;
  settled: number;
  /** settled / charges, 1 for a day without charges (nothing is unsettled); 4 decimals. */
  fraction: number;
}

export interface AccountCompleteness {
  account: string;
  watermark: string | null;
  watermark_lag_seconds: number | null;
  events_cursor: string | null;
  events_lag_seconds: number | null;
  max_lag_seconds: number;
  /** A lag is past SWEEPER_MAX_LAG: the `reconciliation_lag` alert fires. */
  lagging: boolean;
  /** Oldest day first; the last is today (its recent charges are not settled yet, by design). */
  days: DaySettled[];
}

/**
 * One statement for any number of accounts, each measured on its own (a lateral
 * subquery per account). The day counts read the mirror through its (account, created)
 * index over the last `days` day partitions only; the other rows touched are the open
 * findings of those charges (a probe each), the account's open duplicates, and the few
 * backfill runs that overlap those days. A duplicate's extra charges count as its
 * finding's, like the kept one.
 */
const COMPLETENESS_SQL = `
SELECT a.account, m.watermark, m.cursor, m.days
  FROM unnest($1::text[]) AS a(account)
  CROSS JOIN LATERAL (
  WITH wm AS (SELECT watermark FROM recon_watermarks WHERE account = a.account AND shard = ''),
       -- What backfills judged: each one up to its last committed slice (a resumed one's
       -- row carries its predecessors' checkpoint, so its range covers theirs too).
       backfilled AS MATERIALIZED (
         SELECT window_from AS from_at, checkpoint AS to_at FROM recon_runs
          WHERE account = a.account AND mode = 'backfill' AND checkpoint > $2 AND window_from < $3 AND checkpoint > window_from
       ),
       -- A duplicate's extra charges, named in its finding's details (open duplicates are few).
       duplicate_charges AS (
         SELECT c ->> 'id' AS id FROM recon_findings f
           CROSS JOIN LATERAL jsonb_array_elements(
             CASE WHEN jsonb_typeof(f.details -> 'charges') = 'array' THEN f.details -> 'charges' ELSE '[]'::jsonb END) c
          WHERE f.account = a.account AND f.state = 'open'
            AND f.category IN ('duplicate_charge', 'duplicate_effect', 'suspected_duplicate')
       ),
       -- Each day's charges, and those judged: before the watermark or in a backfill's committed part.
       judged AS (
         SELECT date_trunc('day', s.created AT TIME ZONE 'UTC') AS day, count(*)::bigint AS charges,
                count(*) FILTER (WHERE s.created < (SELECT watermark FROM wm)
                                  OR EXISTS (SELECT 1 FROM backfilled b WHERE s.created >= b.from_at AND s.created < b.to_at))::bigint AS judged
           FROM stripe_charges s
          WHERE s.account = a.account AND s.created >= $2 AND s.created < $3
          GROUP BY 1
       ),
       -- Of those judged, the ones an open finding holds, asked of each charge of those days
       -- (recon_findings_open_charge, an index by charge): never every open finding of
       -- the account, whose number grows with the history, not with the days measured.
       open_judged AS (
         SELECT date_trunc('day', s.created AT TIME ZONE 'UTC') AS day, count(*)::bigint AS open
           FROM stripe_charges s
          WHERE s.account = a.account AND s.created >= $2 AND s.created < $3
            AND (s.created < (SELECT watermark FROM wm)
                 OR EXISTS (SELECT 1 FROM backfilled b WHERE s.created >= b.from_at AND s.created < b.to_at))
            AND (EXISTS (SELECT 1 FROM recon_findings f
                          WHERE f.account = a.account AND f.state = 'open' AND f.charge_id = s.charge_id)
                 OR s.charge_id IN (SELECT id FROM duplicate_charges))
          GROUP BY 1
       ),
       per_day AS (
         SELECT to_char(j.day, 'YYYY-MM-DD') AS day, j.charges, j.judged - coalesce(o.open, 0) AS settled
           FROM judged j LEFT JOIN open_judged o USING (day)
       )
  SELECT (SELECT watermark FROM wm) AS watermark,
         (SELECT cursor FROM recon_event_cursors WHERE account = a.account) AS cursor,
         coalesce((SELECT json_agg(json_build_object('day', day, 'charges', charges, 'settled', settled)) FROM per_day), '[]'::json) AS days
  ) m`;

export async function readCompleteness(
  db: Queryable,
  account: string,
  options: CompletenessOptions,
): Promise<AccountCompleteness> {
  return (await readCompletenessOf(db, [account], options))[0] as AccountCompleteness;
}

/** Several accounts' completeness in one statement, in the order given (duplicates once). */
export async function readCompletenessOf(
  db: Queryable,
  accounts: readonly string[],
  options: CompletenessOptions,
): Promise<AccountCompleteness[]> {
  const unique = [...new Set(accounts)];
  if (unique.length === 0) return [];
  const days = dayRange(options.now, options.days);
  const first = days[0] as string;
  const from = new Date(`${first}T00:00:00Z`);
  // Through the end of today: a charge may be stamped a little ahead of this clock.
  const to = new Date(Date.parse(`${days[days.length - 1]}T00:00:00Z`) + DAY_MS);
  const { rows } = await db.query<CompletenessRow>(COMPLETENESS_SQL, [unique, from, to]);
  const byAccount = new Map(rows.map((r) => [r.account, r]));
  return unique.map((account) => completenessOf(account, byAccount.get(account), days, options));
}

interface CompletenessRow {
  account: string;
  watermark: Date | null;
  cursor: Date | null;
  days: Array<{ day: string; charges: number | string; settled: number | string }>;
}

function completenessOf(
  account: string,
  row: CompletenessRow | undefined,
  days: readonly string[],
  options: CompletenessOptions,
): AccountCompleteness {
  const counted = new Map(
    (row?.days ?? []).map((d) => [d.day, { charges: Number(d.charges), settled: Number(d.settled) }]),
  );
  const lagOf = (at: Date | null | undefined) =>
    at ? Math.max(0, Math.round((options.now.getTime() - at.getTime()) / 1000)) : null;
  const watermarkLag = lagOf(row?.watermark);
  const eventsLag = lagOf(row?.cursor);
  const maxLagSeconds = Math.round(options.maxLagMs / 1000);
  return {
    account,
    watermark: row?.watermark?.toISOString() ?? null,
    watermark_lag_seconds: watermarkLag,
    events_cursor: row?.cursor?.toISOString() ?? null,
    events_lag_seconds: eventsLag,
    max_lag_seconds: maxLagSeconds,
    lagging: isLagging(watermarkLag, eventsLag, maxLagSeconds),
    days: days.map((day) => {
      const c = counted.get(day) ?? { charges: 0, settled: 0 };
      return {
        day,
        charges: c.charges,
        settled: c.settled,
        fraction: c.charges === 0 ? 1 : Math.floor((c.settled / c.charges) * 10_000) / 10_000,
      };
    }),
  };
}

/**
 * Past the limit, either lag: the sweeper has stopped judging. A lag not known yet
 * (no scheduled run has set a watermark, no events were read) is not a stall.
 */
export function isLagging(
  watermarkLagSeconds: number | null,
  eventsLagSeconds: number | null,
  maxLagSeconds: number,
): boolean {
  return (watermarkLagSeconds ?? 0) > maxLagSeconds || (eventsLagSeconds ?? 0) > maxLagSeconds;
}

/** The last `n` UTC days, oldest first, today last. */
export function dayRange(now: Date, n: number): string[] {
  const today = Math.floor(now.getTime() / DAY_MS) * DAY_MS;
  return Array.from({ length: n }, (_, i) => new Date(today - (n - 1 - i) * DAY_MS).toISOString().slice(0, 10));
}

/** Every account: the configured ones, and any with a watermark or an events cursor. */
export async function readCompletenessAll(
  db: Queryable,
  configured: readonly string[],
  options: CompletenessOptions,
): Promise<AccountCompleteness[]> {
  const { rows } = await db.query<{ account: string }>(
    `SELECT account FROM recon_watermarks UNION SELECT account FROM recon_event_cursors`,
  );
  const accounts = [...new Set([...configured, ...rows.map((r) => r.account)])].sort();
  return readCompletenessOf(db, accounts, options);
}
