import { checkout, type Pool } from './pool.js';
import { LOCK_CLASS, LockObject } from './locks.js';
import { DAY_PARTITIONED_TABLES, ensureDayPartitions, partitionDays, utcDay } from './partitions.js';
import { ConfigError } from '../errors.js';
import { formatDuration } from '../time/duration.js';
import { ExitCode } from '../exit-codes.js';

/**
 * A claim must outlive every retry that could still arrive for it: the provider forgets
 * an idempotency key after its window (`window`, Stripe's: 24 h), and a
 * caller may retry for `retryHorizonMs` after its first attempt. Dropping the claim
 * earlier would let a late retry charge again.
 */
export function assertSafeRetention(
  retentionMs: number,
  retryHorizonMs: number,
  window: { ms: number; name: string },
): void {
  const minimum = window.ms + retryHorizonMs;
  if (retentionMs < minimum) {
    throw new ConfigError(
      `SWEEPER_RETENTION ${formatDuration(retentionMs)} is shorter than ${window.name} plus ` +
        `SWEEPER_RETRY_HORIZON ${formatDuration(retryHorizonMs)} (= ${formatDuration(minimum)}): a retry arriving after ` +
        'its claim was dropped would be charged again. Raise SWEEPER_RETENTION or lower SWEEPER_RETRY_HORIZON',
    );
  }
}

export class ExpireLockedError extends Error {
  override readonly name = 'ExpireLockedError';
  readonly exitCode = ExitCode.locked;
}

export interface ExpireResult {
  dropped: string[];
  created: number;
  keptFrom: string;
}

/**
 * Drops day partitions that lie wholly before `now − retention`, and creates the
 * partitions of the window ahead. Partitions are detached CONCURRENTLY (no
 * ACCESS EXCLUSIVE lock on the parent, so payment traffic and sweeps keep running)
 * and then dropped: never a mass DELETE.
 */
export async function expirePartitions(
  pool: Pool,
  options: { now: Date; retentionMs: number; dryRun?: boolean },
): Promise<ExpireResult> {
  const keptFrom = utcDay(new Date(options.now.getTime() - options.retentionMs));
  const client = await checkout(pool);
  let broken = false;
  try {
    const { rows: lock } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [
      LOCK_CLASS,
      LockObject.expire,
    ]);
    if (!lock[0]?.ok)
      throw new ExpireLockedError('another `sweeper expire` is running; this one stops (it does not wait)');
    try {
      const { rows } = await client.query<{ parent: string; name: string; pending: boolean }>(
        `SELECT p.relname AS parent, c.relname AS name, i.inhdetachpending AS pending
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
          WHERE p.relname = ANY($1::text[]) ORDER BY c.relname`,
        [[...DAY_PARTITIONED_TABLES]],
      );
      const dropped: string[] = [];
      for (const row of rows) {
        const day = dayOfPartition(row.name);
        if (!day || day >= keptFrom) continue;
        dropped.push(row.name);
        if (options.dryRun) continue;
        const parent = quoteIdent(row.parent);
        const part = quoteIdent(row.name);
        // Sweep slices hold this lock shared: a backfill of old days may be writing
        // into this very partition, and would find it gone mid-slice.
        const mirror = row.parent === 'stripe_charges';
        if (mirror) await client.query('SELECT pg_advisory_lock($1, $2)', [LOCK_CLASS, LockObject.partitions]);
        try {
          // A detach interrupted earlier is finished first; CONCURRENTLY cannot run in a transaction.
          await client.query(
            `ALTER TABLE ${parent} DETACH PARTITION ${part} ${row.pending ? 'FINALIZE' : 'CONCURRENTLY'}`,
          );
          await client.query(`DROP TABLE ${part}`);
        } finally {
          if (mirror) await client.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, LockObject.partitions]);
        }
      }
      // The mirror's key and reference indexes, its refunds and the claims' directory are not
      // partitioned: their entries of the dropped days go too. The key and reference tables
      // have no index on `created` (every charge landed would pay for it): read whole here.
      if (!options.dryRun) {
        // The day's first instant in UTC, as the partitions are cut: not the session's time zone.
        const cut = `($1::date)::timestamp AT TIME ZONE 'UTC'`;
        await client.query(`DELETE FROM stripe_charge_keys WHERE created < ${cut}`, [keptFrom]);
        await client.query(`DELETE FROM stripe_charge_references WHERE created < ${cut}`, [keptFrom]);
        // The refunds mirror is one table (refunds are few): its old rows go with the charges'.
        await client.query(`DELETE FROM stripe_refunds WHERE created < ${cut}`, [keptFrom]);
        // A dispute's last status is on its payment row; the event it came from is as old as the events kept.
        await client.query(`DELETE FROM stripe_disputes WHERE as_of < ${cut}`, [keptFrom]);
        // So are payouts and their balance transactions; recon_payouts (what was booked) stays.
        await client.query(`DELETE FROM stripe_payouts WHERE created < ${cut}`, [keptFrom]);
        await client.query(`DELETE FROM stripe_balance_transactions WHERE created < ${cut}`, [keptFrom]);
        await client.query(`DELETE FROM idempotency_key_directory WHERE created_at < ${cut}`, [keptFrom]);
        // The claim library's counts are kept as long as the claims; its quota only for the minute it counts.
        await client.query(`DELETE FROM claim_outcomes WHERE day < $1::date`, [keptFrom]);
        await client.query(`DELETE FROM claim_quota WHERE minute < $1::timestamptz - interval '1 hour'`, [options.now]);
      }
      const created = options.dryRun
        ? 0
        : await ensureDayPartitions(client, partitionDays(options.now, options.retentionMs));
      return { dropped, created, keptFrom };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, LockObject.expire]).catch(() => {
        broken = true;
      });
    }
  } finally {
    client.release(broken);
  }
}

/** `idempotency_keys_p20261101` → `2026-11-01`. */
export function dayOfPartition(name: string): string | undefined {
  const match = /_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  return match ? `${match[1]}-${match[2]}-${match[3]}` : undefined;
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
