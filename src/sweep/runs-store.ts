import type { Queryable } from '../db/pool.js';
import { redact } from '../secrets.js';
import type { Category } from './categories.js';
import type { TimeWindow } from './window.js';

export type RunMode = 'run' | 'backfill';

export interface RunRow {
  id: string;
  mode: RunMode;
  account: string;
  shard: string;
  window: TimeWindow;
  startedAt: Date;
  checkpoint: Date;
}

export async function insertRun(db: Queryable, run: RunRow): Promise<void> {
  await db.query(
    `INSERT INTO recon_runs (id, mode, account, shard, window_from, window_to, status, checkpoint, started_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8)
     ON CONFLICT (id) DO NOTHING`,
    [run.id, run.mode, run.account, run.shard, run.window.from, run.window.to, run.checkpoint, run.startedAt],
  );
}

/** Runs left `running` by a process that died: we hold the lock now, so they are not running. */
export async function markAbandonedRuns(db: Queryable, account: string, now: Date): Promise<number> {
  const result = await db.query(
    `UPDATE recon_runs SET status = 'interrupted', finished_at = $2,
            error = coalesce(error, 'the process ended without finishing; a later run took over')
      WHERE account = $1 AND status = 'running'`,
    [account, now],
  );
  return result.rowCount ?? 0;
}

/**
 * An account's watermark is its own whatever the shard count (re-sharding restarts
 * nobody), so the `shard` column of recon_watermarks (part of its key) is always '', its
 * default.
 */
export async function readWatermark(db: Queryable, account: string): Promise<Date | null> {
  const { rows } = await db.query<{ watermark: Date }>(
    "SELECT watermark FROM recon_watermarks WHERE account = $1 AND shard = ''",
    [account],
  );
  return rows[0]?.watermark ?? null;
}

/** Only ever forwards. */
export async function advanceWatermark(
  db: Queryable,
  account: string,
  to: Date,
  runId: string,
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO recon_watermarks AS w (account, shard, watermark, run_id, updated_at) VALUES ($1, '', $2, $3, $4)
     ON CONFLICT (account, shard) DO UPDATE SET watermark = EXCLUDED.watermark, run_id = EXCLUDED.run_id,
            updated_at = EXCLUDED.updated_at
      WHERE w.watermark < EXCLUDED.watermark`,
    [account, to, runId, now],
  );
}

/** A backfill of the same account and range that did not finish: where to pick it up. */
export async function findResumableBackfill(
  db: Queryable,
  account: string,
  window: TimeWindow,
): Promise<{ id: string; checkpoint: Date } | null> {
  const { rows } = await db.query<{ id: string; checkpoint: Date }>(
    `SELECT id, checkpoint FROM recon_runs
      WHERE mode = 'backfill' AND account = $1 AND window_from = $2 AND window_to = $3
      ORDER BY started_at DESC, id DESC LIMIT 1`,
    [account, window.from, window.to],
  );
  const last = rows[0];
  if (!last) return null;
  const { rows: status } = await db.query<{ status: string }>('SELECT status FROM recon_runs WHERE id = $1', [last.id]);
  return status[0]?.status === 'succeeded' ? null : last;
}

export interface SliceProgress {
  checkpoint: Date;
  chargesScanned: number;
  findings: Record<Category, number>;
  repaired: Record<Category, number>;
}

export async function recordSliceProgress(db: Queryable, runId: string, progress: SliceProgress): Promise<void> {
  await db.query(
    `UPDATE recon_runs SET checkpoint = $2, charges_scanned = $3, findings = $4, repaired = $5 WHERE id = $1`,
    [
      runId,
      progress.checkpoint,
      progress.chargesScanned,
      JSON.stringify(progress.findings),
      JSON.stringify(progress.repaired),
    ],
  );
}

export async function finishRun(
  db: Queryable,
  runId: string,
  outcome: { status: 'succeeded' | 'failed' | 'interrupted'; now: Date; unreconciled?: number; error?: string },
): Promise<void> {
  await db.query(
    `UPDATE recon_runs SET status = $2, finished_at = $3, unreconciled = $4, error = $5 WHERE id = $1`,
    // The error may quote an upstream's answer, which may quote a secret: stored redacted.
    [
      runId,
      outcome.status,
      outcome.now,
      outcome.unreconciled ?? null,
      outcome.error === undefined ? null : redact(outcome.error),
    ],
  );
}

export async function countOpenFindings(db: Queryable, account: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM recon_findings WHERE account = $1 AND state = 'open'`,
    [account],
  );
  return rows[0]?.n ?? 0;
}
