import type { Queryable } from '../db/pool.js';

export interface SweepStatus {
  watermarks: Array<{ account: string; shard: string; watermark: string; lag_seconds: number }>;
  last_runs: Array<{ id: string; mode: string; account: string; status: string; started_at: string; finished_at: string | null; unreconciled: number | null; error: string | null }>;
  open_findings: Record<string, Record<string, number>>;
  unreconciled: number;
  claims: { count: number; in_flight: number; oldest_created_at: string | null; oldest_age_seconds: number | null };
}

/** What an operator asks first: how far behind, what ran, what is open, how big the claim store is. */
export async function readStatus(db: Queryable, now: Date): Promise<SweepStatus> {
  const watermarks = await db.query<{ account: string; shard: string; watermark: Date }>(
    'SELECT account, shard, watermark FROM recon_watermarks ORDER BY account, shard',
  );
  const runs = await db.query(
    `SELECT DISTINCT ON (account, mode) id, mode, account, status, started_at, finished_at, unreconciled, error
       FROM recon_runs ORDER BY account, mode, started_at DESC, id DESC`,
  );
  const open = await db.query<{ account: string; category: string; n: number }>(
    `SELECT account, category, count(*)::int AS n FROM recon_findings WHERE state = 'open' GROUP BY account, category ORDER BY 1, 2`,
  );
  const claims = await db.query<{ count: number; in_flight: number; oldest: Date | null }>(
    `SELECT count(*)::int AS count, count(*) FILTER (WHERE status = 'in_flight')::int AS in_flight, min(created_at) AS oldest
       FROM idempotency_keys`,
  );
  const openByAccount: Record<string, Record<string, number>> = {};
  for (const row of open.rows) (openByAccount[row.account] ??= {})[row.category] = row.n;
  const c = claims.rows[0];
  return {
    watermarks: watermarks.rows.map((w) => ({
      account: w.account,
      shard: w.shard,
      watermark: w.watermark.toISOString(),
      lag_seconds: Math.round((now.getTime() - w.watermark.getTime()) / 1000),
    })),
    last_runs: runs.rows.map((r) => ({
      id: r.id,
      mode: r.mode,
      account: r.account,
      status: r.status,
      started_at: (r.started_at as Date).toISOString(),
      finished_at: r.finished_at ? (r.finished_at as Date).toISOString() : null,
      unreconciled: r.unreconciled,
      error: r.error,
    })),
    open_findings: openByAccount,
    unreconciled: open.rows.reduce((sum, r) => sum + r.n, 0),
    claims: {
      count: c?.count ?? 0,
      in_flight: c?.in_flight ?? 0,
      oldest_created_at: c?.oldest ? c.oldest.toISOString() : null,
      oldest_age_seconds: c?.oldest ? Math.round((now.getTime() - c.oldest.getTime()) / 1000) : null,
    },
  };
}

export class FindingNotFoundError extends Error {
  override readonly name = 'FindingNotFoundError';
  readonly exitCode = 64;
}

/** A person closes an open finding; the audit keeps who, when and why. */
export async function resolveFinding(
  db: Queryable,
  args: { id: number; note: string; actor: string; now: Date; state?: 'resolved' | 'ignored' },
): Promise<{ previous: string }> {
  const state = args.state ?? 'resolved';
  const { rows } = await db.query<{ id: number }>(
    `WITH updated AS (
       UPDATE recon_findings SET state = $2, closed_at = $3, closed_by = $4, note = $5
        WHERE id = $1 AND state = 'open' RETURNING id
     ), audit AS (
       INSERT INTO recon_repairs (finding_id, run_id, action, before, after, actor, at)
       SELECT id, NULL, $2, jsonb_build_object('state', 'open'), jsonb_build_object('state', $2::text, 'note', $5::text), $4, $3
         FROM updated
     )
     SELECT id FROM updated`,
    [args.id, state, args.now, args.actor, args.note],
  );
  if (rows[0]) return { previous: 'open' };
  const found = await db.query<{ state: string; closed_by: string | null }>(
    'SELECT state, closed_by FROM recon_findings WHERE id = $1',
    [args.id],
  );
  const finding = found.rows[0];
  if (!finding) throw new FindingNotFoundError(`no finding with id ${args.id}: see \`sweeper status\` or \`sweeper report\``);
  throw new FindingNotFoundError(
    `finding ${args.id} is already ${finding.state}${finding.closed_by ? ` (by ${finding.closed_by})` : ''}: only open findings are resolved`,
  );
}
