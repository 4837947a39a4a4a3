import type { Queryable } from '../db/pool.js';
import type { NormalizedCharge } from './provider.js';
import { upsertCharges } from './mirror.js';

/** A charge the database refused, with the reason PostgreSQL gave. */
export interface RefusedCharge {
  charge: NormalizedCharge;
  error: { code: string; message: string };
}

export interface IsolatedUpsert {
  /** Rows inserted or updated (a row newer in the mirror is left alone and not counted). */
  written: number;
  /** Charges that could not be written, each alone: every other charge of the batch was. */
  refused: RefusedCharge[];
}

/**
 * SQLSTATE classes that are about the rows sent, not about the database or the
 * transaction: 21 cardinality (a charge twice in one statement), 22 data exception
 * (NUL, a value too long, out of range, bad JSON), 23 integrity (a CHECK, NOT NULL, no
 * partition for the row's day), and 54000 (a value too large for an index). Anything
 * else (connection lost, serialization failure, deadlock, lock or statement timeout,
 * disk full) says nothing about one row and is rethrown.
 */
export function isDataError(error: unknown): error is { code: string; message: string } {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return false;
  return code.startsWith('21') || code.startsWith('22') || code.startsWith('23') || code === '54000';
}

/**
 * The mirror upsert with a safety net. The normaliser refuses everything it knows the
 * schema would; this catches what it does not know (a CHECK added later, a day without
 * a partition). Contract:
 *
 * - `db` is a client **inside a transaction** (a slice's): every attempt runs in a
 *   SAVEPOINT, so a refused statement never aborts the caller's transaction.
 * - The whole batch is tried in one statement first (the normal case costs one
 *   SAVEPOINT and one RELEASE more than `upsertCharges`). When PostgreSQL refuses it
 *   with a data error, the batch is halved and each half tried again, down to single
 *   rows: k bad rows in n cost about 2·k·log2(n) statements, and every good row is written.
 * - Returns what was written and each refused charge with PostgreSQL's code and
 *   message; the caller records those as findings (they name the charge) and commits
 *   the rest. It never throws for a data error.
 * - Any other error is rethrown as it is; the caller's transaction is then unusable,
 *   as with `upsertCharges`.
 */
export async function upsertChargesIsolating(
  db: Queryable,
  charges: NormalizedCharge[],
  fetchedAt: Date,
): Promise<IsolatedUpsert> {
  const result: IsolatedUpsert = { written: 0, refused: [] };
  await tryBatch(db, charges, fetchedAt, result);
  return result;
}

async function tryBatch(
  db: Queryable,
  charges: NormalizedCharge[],
  fetchedAt: Date,
  result: IsolatedUpsert,
): Promise<void> {
  if (charges.length === 0) return;
  await db.query('SAVEPOINT sweeper_mirror_batch');
  try {
    result.written += await upsertCharges(db, charges, fetchedAt);
  } catch (error) {
    if (!isDataError(error)) throw error;
    await db.query('ROLLBACK TO SAVEPOINT sweeper_mirror_batch');
    await db.query('RELEASE SAVEPOINT sweeper_mirror_batch');
    if (charges.length === 1) {
      result.refused.push({
        charge: charges[0] as NormalizedCharge,
        error: { code: error.code, message: error.message },
      });
      return;
    }
    const half = Math.ceil(charges.length / 2);
    await tryBatch(db, charges.slice(0, half), fetchedAt, result);
    await tryBatch(db, charges.slice(half), fetchedAt, result);
    return;
  }
  await db.query('RELEASE SAVEPOINT sweeper_mirror_batch');
}
