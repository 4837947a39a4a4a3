import { checkout, explainTimeout, type Pool, type PoolClient, type Queryable } from '../db/pool.js';
import { LOCK_CLASS, LockObject } from '../db/locks.js';
import { formatDuration } from '../time/duration.js';
import { ExitCode } from '../exit-codes.js';

/** Another sweep holds an account's lock (or a backfill waited for it in vain): exit 75. */
export class SweepLockedError extends Error {
  override readonly name = 'SweepLockedError';
  readonly exitCode = ExitCode.locked;
}

export interface SweepLock {
  /** The accounts this run holds, in the order asked for: all of them, less `skipped`. */
  accounts: string[];
  /** A scheduled run's accounts left alone because a backfill has them (running or waiting). */
  skipped: string[];
  /**
   * More accounts, on the same connection and under the same policy (a platform's many
   * accounts are locked a group at a time, never thousands at once): throws as
   * `lockAccounts` does, having released what this call took.
   */
  take(accounts: readonly string[]): Promise<{ accounts: string[]; skipped: string[] }>;
  /** Releases some accounts' locks (an account whose sweep is done); the others stay held. */
  give(accounts: readonly string[]): Promise<void>;
  release(): Promise<void>;
  /** Throws when the connection holding the locks died: another run may have them now. */
  assertHeld(): void;
  /**
   * The same, asked of the database inside a slice's transaction just before it
   * commits: a slice never commits after its run lost the lock.
   */
  confirmHeld(db: Queryable): Promise<void>;
  /**
   * Holds the mirror's partitions (shared, on the lock connection) until the returned
   * function is called: `expire` detaches no day meanwhile, though no transaction is
   * open (between the parts of a dense slice).
   */
  holdPartitions(): Promise<() => Promise<void>>;
}

export interface LockRequest {
  mode: 'run' | 'backfill';
  /** Backfill only: how long to wait for each account's locks, in all; 0 = not at all. */
  waitMs?: number;
  /** Stops a backfill's wait (SIGTERM). */
  signal?: AbortSignal;
  /** Called once per account a backfill has to wait for, before it waits. */
  onWait?: (account: string) => void;
}

/**
 * The lock policy (docs/deployment.md "Backfills and scheduled runs: the account lock"). Two session advisory locks
 * per account, both held on one dedicated connection for the whole run, so a killed
 * sweeper never leaves one behind:
 *
 * - `sweep:<account>`, exclusive: one sweep of the account at a time.
 * - `mode:<account>`, the gate: a scheduled run holds it *shared*, a backfill
 *   *exclusive*, each taken before `sweep:` and released after it.
 *
 * A run try-locks the gate shared. That fails exactly when a backfill holds the gate
 * or is queued for it (PostgreSQL refuses a lock that conflicts with a waiter, too), so
 * the run skips the account: "skipped: backfill in progress". Holding the gate, the run
 * try-locks `sweep:`; failing that, the holder cannot be a backfill (a backfill holds
 * `sweep:` only while it holds the gate exclusive, which the run's shared gate
 * excludes): it is another run, and this one exits 75. No check-then-act window: what
 * the run learns is decided by the lock manager in the same call that would take it.
 *
 * A backfill waits (`lock_timeout`) for the gate, then for `sweep:` (held by a run
 * still finishing, or by a sweeper too old to know the gate), up to `waitMs` in all,
 * and exits 75 if that runs out. Runs arriving while it waits skip, so a backfill waits
 * for at most the run in progress. Accounts are locked in sorted order, so two
 * backfills of overlapping accounts queue instead of deadlocking.
 */
export async function lockAccounts(
  pool: Pool,
  accounts: string[],
  request: LockRequest = { mode: 'run' },
): Promise<SweepLock> {
  let lostWith: Error | undefined;
  const client: PoolClient = await checkout(pool, (error) => {
    lostWith = error;
  });
  let holder = 0;
  let first: { accounts: string[]; skipped: string[] };
  try {
    holder = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0;
    first = await takeAccounts(pool, client, holder, accounts, request);
  } catch (error) {
    await client.query('SELECT pg_advisory_unlock_all()').then(
      () => client.release(),
      () => client.release(true),
    );
    throw error;
  }
  const assertHeld = () => {
    if (lostWith) {
      throw new Error(
        `lost the database connection that held the sweep lock (${lostWith.message}); stopping so two runs never overlap`,
      );
    }
  };
  return {
    ...first,
    assertHeld,
    async take(more) {
      assertHeld();
      return takeAccounts(pool, client, holder, more, request);
    },
    async give(done) {
      if (done.length === 0 || lostWith) return;
      await client.query(UNLOCK[request.mode], [LOCK_CLASS, [...new Set(done)]]);
    },
    async confirmHeld(db) {
      const { rows } = await db.query<{ held: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = $1 AND granted) AS held`,
        [holder],
      );
      if (!rows[0]?.held) lostWith ??= new Error('the lock-holding session is gone');
      // A session being terminated still shows its locks until its backend exits; the
      // connection's error event may already have told us it is gone.
      assertHeld();
    },
    async holdPartitions() {
      assertHeld();
      const lock = [LOCK_CLASS, LockObject.partitions];
      // Waits for an `expire` detaching a day, up to SWEEPER_DB_LOCK_TIMEOUT (then says so).
      await client.query('SELECT pg_advisory_lock_shared($1, $2)', lock).catch((error: unknown) => {
        throw explainTimeout(error);
      });
      // A connection lost meanwhile took the lock with it; release() unlocks all anyway.
      return async () => {
        await client.query('SELECT pg_advisory_unlock_shared($1, $2)', lock).catch(() => undefined);
      };
    },
    async release() {
      try {
        // The connection holds nothing but this run's locks.
        await client.query('SELECT pg_advisory_unlock_all()');
        client.release();
      } catch {
        client.release(true); // closing the connection frees its locks
      }
    },
  };
}

/** A run's or a backfill's locks of some accounts, released in one statement each. */
const UNLOCK: Record<LockRequest['mode'], string> = {
  run: `SELECT pg_advisory_unlock($1, hashtext('sweep:' || a)), pg_advisory_unlock_shared($1, hashtext('mode:' || a))
          FROM unnest($2::text[]) AS a`,
  backfill: `SELECT pg_advisory_unlock($1, hashtext('sweep:' || a)), pg_advisory_unlock($1, hashtext('mode:' || a))
               FROM unnest($2::text[]) AS a`,
};

/**
 * Takes the accounts' locks under the policy above: a run try-locks every gate shared in
 * one statement, then the sweep locks of the gates it got in another; a backfill waits
 * for each account in sorted order. Throws having released what it took here.
 */
async function takeAccounts(
  pool: Pool,
  client: PoolClient,
  holder: number,
  accounts: readonly string[],
  request: LockRequest,
): Promise<{ accounts: string[]; skipped: string[] }> {
  const sorted = [...new Set(accounts)].sort();
  const taken: string[] = [];
  try {
    if (request.mode === 'run') {
      const gated = await tryLockAll(client, sorted, 'mode', 'shared');
      taken.push(...gated);
      const swept = new Set(await tryLockAll(client, gated, 'sweep', 'exclusive'));
      const held = gated.find((a) => !swept.has(a));
      if (held !== undefined) {
        throw new SweepLockedError(`another sweep is running for account ${held}; this one stops (it does not wait)`);
      }
    } else {
      const deadline = Date.now() + (request.waitMs ?? 0);
      for (const account of sorted) {
        await waitForLock(pool, client, holder, account, deadline, request);
        taken.push(account);
      }
    }
  } catch (error) {
    // What this call took goes back (unlocking a sweep lock it did not get only warns).
    if (taken.length > 0) await client.query(UNLOCK[request.mode], [LOCK_CLASS, taken]).catch(() => undefined);
    throw error;
  }
  const takenSet = new Set(taken);
  return {
    accounts: [...new Set(accounts)].filter((a) => takenSet.has(a)),
    skipped: sorted.filter((a) => !takenSet.has(a)),
  };
}

/** The accounts whose `kind` lock this connection took now, in one statement. */
async function tryLockAll(
  client: PoolClient,
  accounts: readonly string[],
  kind: 'mode' | 'sweep',
  mode: 'shared' | 'exclusive',
): Promise<string[]> {
  if (accounts.length === 0) return [];
  const fn = mode === 'shared' ? 'pg_try_advisory_lock_shared' : 'pg_try_advisory_lock';
  const { rows } = await client.query<{ account: string; ok: boolean }>(
    `SELECT a AS account, ${fn}($1, hashtext($2 || ':' || a)) AS ok FROM unnest($3::text[]) AS a`,
    [LOCK_CLASS, kind, accounts],
  );
  return rows.filter((r) => r.ok).map((r) => r.account);
}

const gateKey = (account: string) => `mode:${account}`;
const sweepKey = (account: string) => `sweep:${account}`;

async function tryLock(client: PoolClient, key: string, kind: 'shared' | 'exclusive'): Promise<boolean> {
  const fn = kind === 'shared' ? 'pg_try_advisory_lock_shared' : 'pg_try_advisory_lock';
  const { rows } = await client.query<{ ok: boolean }>(`SELECT ${fn}($1, hashtext($2)) AS ok`, [LOCK_CLASS, key]);
  return rows[0]?.ok === true;
}

/** A backfill takes the account's gate, then its sweep lock, each waiting until `deadline`. */
async function waitForLock(
  pool: Pool,
  client: PoolClient,
  pid: number,
  account: string,
  deadline: number,
  request: LockRequest,
): Promise<void> {
  const waitMs = request.waitMs ?? 0;
  let told = false;
  for (const key of [gateKey(account), sweepKey(account)]) {
    if (await tryLock(client, key, 'exclusive')) continue;
    const remaining = deadline - Date.now();
    if (waitMs <= 0 || remaining <= 0) {
      throw new SweepLockedError(
        waitMs <= 0
          ? `another sweep is running for account ${account}; this backfill does not wait (--wait 0)`
          : `another sweep still holds account ${account} after --wait ${formatDuration(waitMs)}; run the backfill again later or with a longer --wait`,
      );
    }
    if (!told) request.onWait?.(account);
    told = true;
    await blockingLock(pool, client, pid, key, remaining, request.signal).catch(
      (error: { code?: string } | null | undefined) => {
        if (error?.code === '55P03') {
          throw new SweepLockedError(
            `another sweep still holds account ${account} after --wait ${formatDuration(waitMs)}; run the backfill again later or with a longer --wait`,
          );
        }
        if (request.signal?.aborted)
          throw new Error(`interrupted while waiting for the lock of account ${account}; nothing was swept`);
        throw error;
      },
    );
  }
}

async function blockingLock(
  pool: Pool,
  client: PoolClient,
  pid: number,
  key: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<void> {
  if (signal?.aborted) throw Object.assign(new Error('aborted'), { code: '57014' });
  // lock_timeout bounds the wait; statement_timeout (the role may set one) must not cut it shorter.
  await client.query(`SELECT set_config('lock_timeout', $1, false), set_config('statement_timeout', '0', false)`, [
    `${Math.ceil(timeoutMs)}ms`,
  ]);
  // A signal cancels the wait from another connection: the waiting one is busy.
  const cancel = () => void pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [LOCK_CLASS, key]);
  } finally {
    signal?.removeEventListener('abort', cancel);
    await client.query('RESET lock_timeout; RESET statement_timeout').catch(() => undefined);
  }
}
