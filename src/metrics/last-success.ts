import type { Queryable } from '../db/pool.js';

/**
 * When each account's scheduled sweep last succeeded. The status snapshot shows only
 * the latest run, which after a failure hides the success a staleness alert needs.
 */
export async function readLastSuccessByAccount(db: Queryable): Promise<Record<string, Date>> {
  const { rows } = await db.query<{ account: string; finished_at: Date }>(
    `SELECT account, max(finished_at) AS finished_at FROM recon_runs
      WHERE mode = 'run' AND status = 'succeeded' AND finished_at IS NOT NULL GROUP BY account`,
  );
  return Object.fromEntries(rows.map((r) => [r.account, r.finished_at]));
}
