import type { Queryable } from '../db/pool.js';

/** Where an account's events were read up to (docs/judgement.md "Late changes"). */
export async function readEventCursor(db: Queryable, account: string): Promise<Date | null> {
  const { rows } = await db.query<{ cursor: Date }>('SELECT cursor FROM recon_event_cursors WHERE account = $1', [
    account,
  ]);
  return rows[0]?.cursor ?? null;
}

/** Only ever forwards, like the watermark. */
export async function advanceEventCursor(
  db: Queryable,
  account: string,
  to: Date,
  runId: string,
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO recon_event_cursors AS c (account, cursor, run_id, updated_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (account) DO UPDATE SET cursor = EXCLUDED.cursor, run_id = EXCLUDED.run_id, updated_at = EXCLUDED.updated_at
      WHERE c.cursor < EXCLUDED.cursor`,
    [account, to, runId, now],
  );
}

export interface DeepReadRecord {
  lastAt: Date;
  from: Date;
  to: Date;
  hours: number;
  differing: number;
}

export async function readDeepRead(db: Queryable, account: string): Promise<DeepReadRecord | null> {
  const { rows } = await db.query<{
    last_at: Date;
    window_from: Date;
    window_to: Date;
    hours: number;
    differing: number;
  }>('SELECT last_at, window_from, window_to, hours, differing FROM recon_deep_reads WHERE account = $1', [account]);
  const r = rows[0];
  return r ? { lastAt: r.last_at, from: r.window_from, to: r.window_to, hours: r.hours, differing: r.differing } : null;
}

export async function recordDeepRead(
  db: Queryable,
  account: string,
  runId: string,
  read: DeepReadRecord,
): Promise<void> {
  await db.query(
    `INSERT INTO recon_deep_reads (account, last_at, window_from, window_to, hours, differing, run_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (account) DO UPDATE SET last_at = EXCLUDED.last_at, window_from = EXCLUDED.window_from,
            window_to = EXCLUDED.window_to, hours = EXCLUDED.hours, differing = EXCLUDED.differing, run_id = EXCLUDED.run_id`,
    [account, read.lastAt, read.from, read.to, read.hours, read.differing, runId],
  );
}

export async function recordRunChanges(db: Queryable, runId: string, changes: unknown): Promise<void> {
  await db.query('UPDATE recon_runs SET changes = $2 WHERE id = $1', [runId, JSON.stringify(changes)]);
}
