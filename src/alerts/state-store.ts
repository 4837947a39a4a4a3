import type { Queryable } from '../db/pool.js';
import type { SentState } from './transitions.js';

export async function loadAlertState(db: Queryable, sink: string, account: string): Promise<Map<string, SentState>> {
  const { rows } = await db.query<{ category: string; last_count: number; last_sent_at: Date }>(
    'SELECT category, last_count, last_sent_at FROM alert_state WHERE sink = $1 AND account = $2',
    [sink, account],
  );
  return new Map(rows.map((r) => [r.category, { lastCount: r.last_count, lastSentAt: r.last_sent_at }]));
}

/** Called only after the sink accepted the message that carried these counts. */
export async function recordDelivered(
  db: Queryable,
  args: { sink: string; account: string; sentAt: Date; counts: ReadonlyArray<{ category: string; count: number }> },
): Promise<void> {
  if (args.counts.length === 0) return;
  await db.query(
    `INSERT INTO alert_state (sink, account, category, last_count, last_sent_at)
     SELECT $1, $2, c.category, c.count, $3
       FROM jsonb_to_recordset($4::jsonb) AS c(category text, count int)
     ON CONFLICT (sink, account, category) DO UPDATE
        SET last_count = EXCLUDED.last_count, last_sent_at = EXCLUDED.last_sent_at`,
    [args.sink, args.account, args.sentAt, JSON.stringify(args.counts)],
  );
}

/**
 * A quiet decrease: the lower count becomes the baseline for "went up", but the
 * repeat clock keeps running from the last message actually sent.
 */
export async function recordQuietCounts(
  db: Queryable,
  args: { sink: string; account: string; counts: ReadonlyArray<{ category: string; count: number }> },
): Promise<void> {
  if (args.counts.length === 0) return;
  await db.query(
    `UPDATE alert_state s SET last_count = c.count
       FROM jsonb_to_recordset($3::jsonb) AS c(category text, count int)
      WHERE s.sink = $1 AND s.account = $2 AND s.category = c.category`,
    [args.sink, args.account, JSON.stringify(args.counts)],
  );
}
