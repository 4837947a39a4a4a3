import { checkout, type Pool, type PoolClient, type Queryable } from '../db/pool.js';
import { LOCK_CLASS } from '../db/locks.js';

/** Another sweep holds an account's lock: exit 75, do not wait. */
export class SweepLockedError extends Error {
  override readonly name = 'SweepLockedError';
  readonly exitCode = 75;
}

export interface SweepLock {
  release(): Promise<void>;
  /** Throws when the connection holding the locks died: another run may have them now. */
  assertHeld(): void;
  /**
   * The same, asked of the database inside a slice's transaction just before it
   * commits: a slice never commits after its run lost the lock.
   */
  confirmHeld(db: Queryable): Promise<void>;
}

/**
 * Takes the session advisory lock of every account the run covers, on one
 * dedicated connection held for the run. All or nothing: if any is held elsewhere,
 * those taken are given back and the run stops. The lock dies with the connection,
 * so a killed sweeper never leaves it behind.
 */
export async function lockAccounts(pool: Pool, accounts: string[]): Promise<SweepLock> {
  let lostWith: Error | undefined;
  const client: PoolClient = await checkout(pool, (error) => {
    lostWith = error;
  });
  const taken: string[] = [];
  let holder = 0;
  try {
    holder = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0;
    for (const account of [...accounts].sort()) {
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [
        LOCK_CLASS,
        `sweep:${account}`,
      ]);
      if (!rows[0]?.ok) {
        throw new SweepLockedError(`another sweep is running for account ${account}; this one stops (it does not wait)`);
      }
      taken.push(account);
    }
  } catch (error) {
    await unlock(client, taken).catch(() => undefined);
    client.release();
    throw error;
  }
  const assertHeld = () => {
    if (lostWith) {
      throw new Error(`lost the database connection that held the sweep lock (${lostWith.message}); stopping so two runs never overlap`);
    }
  };
  return {
    assertHeld,
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
    async release() {
      try {
        await unlock(client, taken);
        client.release();
      } catch {
        client.release(true); // closing the connection frees its locks
      }
    },
  };
}

async function unlock(client: PoolClient, accounts: string[]): Promise<void> {
  for (const account of accounts) {
    await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_CLASS, `sweep:${account}`]);
  }
}
