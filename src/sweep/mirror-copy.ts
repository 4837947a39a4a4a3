import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import type { PoolClient } from '../db/pool.js';
import { accountName } from '../domain/identity.js';
import type { NormalizedCharge } from './provider.js';
import { isDataError, upsertChargesIsolating, type IsolatedUpsert } from './mirror-isolating.js';
import { MIRROR_COLUMNS, MIRROR_RECORD_TYPE, mirrorUpsertSql } from './mirror.js';

/**
 * The mirror's bulk path: a batch of charges streamed with `COPY` into a session
 * temporary table, then moved from it into the mirror by one statement (the same "only
 * a newer read overwrites" rule as `upsertCharges`: `mirrorUpsertSql`), which empties
 * the staging table as it reads it. No JSON built or parsed per charge.
 *
 * Guarded (the default), the batch lands inside a savepoint: if PostgreSQL refuses it for
 * its data, it is landed again through `upsertChargesIsolating` (bisected), so one bad
 * row costs only itself. Unguarded (a real sweep's first try at a slice: two statements
 * fewer per batch), a refusal aborts the caller's transaction and surfaces as
 * MirrorRefusedError: the caller rolls back and lands the slice again, guarded.
 * `client` must be inside a transaction.
 */

const LOAD_TABLE = `CREATE TEMP TABLE IF NOT EXISTS sweeper_mirror_load (${MIRROR_RECORD_TYPE}) ON COMMIT DELETE ROWS`;
const COPY_INTO_LOAD = `COPY sweeper_mirror_load (${MIRROR_COLUMNS.map(([name]) => name).join(', ')}) FROM STDIN`;
const UPSERT_FROM_LOAD = `WITH loaded AS (DELETE FROM sweeper_mirror_load RETURNING *),
landed AS (${mirrorUpsertSql('SELECT DISTINCT ON (charge_id) * FROM loaded ORDER BY charge_id', '$1')} RETURNING 1)
SELECT count(*)::int AS written FROM landed`;

/** The database refused an unguarded batch: the transaction is aborted; land the batch again, guarded. */
export class MirrorRefusedError extends Error {
  override readonly name = 'MirrorRefusedError';
}

export async function copyCharges(
  client: PoolClient,
  charges: NormalizedCharge[],
  fetchedAt: Date,
  options: { guarded?: boolean } = {},
): Promise<IsolatedUpsert> {
  if (charges.length === 0) return { written: 0, refused: [] };
  if (options.guarded === false) {
    try {
      return { written: await land(client, charges, fetchedAt), refused: [] };
    } catch (error) {
      if (isDataError(error)) throw new MirrorRefusedError('the database refused the batch', { cause: error });
      throw error;
    }
  }
  await client.query('SAVEPOINT sweeper_mirror_copy');
  try {
    const written = await land(client, charges, fetchedAt);
    await client.query('RELEASE SAVEPOINT sweeper_mirror_copy');
    return { written, refused: [] };
  } catch (error) {
    if (!isDataError(error)) throw error;
    await client.query('ROLLBACK TO SAVEPOINT sweeper_mirror_copy');
    await client.query('RELEASE SAVEPOINT sweeper_mirror_copy');
    return upsertChargesIsolating(client, charges, fetchedAt);
  }
}

/**
 * The staging table is created whenever it is missing, in the caller's transaction: a
 * rollback takes a table it created with it, so no session remembers that it has one.
 */
async function land(client: PoolClient, charges: NormalizedCharge[], fetchedAt: Date): Promise<number> {
  await client.query(LOAD_TABLE);
  await pipeline(Readable.from(lines(charges)), client.query(copyFrom(COPY_INTO_LOAD)));
  const { rows } = await client.query<{ written: number }>(UPSERT_FROM_LOAD, [fetchedAt]);
  return rows[0]?.written ?? 0;
}

function* lines(charges: NormalizedCharge[]): Generator<string> {
  let chunk = '';
  for (const c of charges) {
    chunk +=
      [
        text(accountName(c.account)),
        text(c.id),
        new Date(c.created * 1000).toISOString(),
        c.amount,
        c.amountCaptured,
        c.amountRefunded,
        text(c.currency),
        text(c.status),
        bool(c.captured),
        bool(c.refunded),
        bool(c.disputed),
        text(c.paymentIntent),
        text(c.customer),
        text(c.paymentMethod),
        text(c.tenantId),
        text(c.idempotencyKey),
        bool(c.livemode),
        text(c.reference ?? null),
        text(c.cardFingerprint ?? null),
      ].join('\t') + '\n';
    if (chunk.length > 64_000) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}

/** COPY's text format: `\N` for null; backslash, tab, newline and carriage return escaped. */
function text(value: string | null): string {
  if (value === null) return '\\N';
  return value.replace(/[\\\t\n\r]/g, (ch) =>
    ch === '\\' ? '\\\\' : ch === '\t' ? '\\t' : ch === '\n' ? '\\n' : '\\r',
  );
}

function bool(value: boolean): string {
  return value ? 't' : 'f';
}
