import type { Pool, PoolClient } from '../db/pool.js';
import { LOCK_CLASS } from '../db/locks.js';

/** Another sweep holds an account's lock: exit 75, do not wait. */
export class SweepLockedError extends Error {
  override readonly name = 'SweepLockedError';
  readonly exitCode = 75;
}

export interface SweepLock {
  release(): Promise<void>;
}

/**
 * Takes the session advisory lock of every account the run covers, on one
 * dedicated connection held for the run. All or nothing: if any is held elsewhere,
 * those taken are given back and the run stops. The lock dies with the connection,
 * so a killed sweeper never leaves it behind.
 */
export async function lockAccounts(pool: Pool, accounts: string[]): Promise<SweepLock> {
  const client: PoolClient = await pool.connect();
  const taken: string[] = [];
  try {
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
  return {
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
