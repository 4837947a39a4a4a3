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
 * temporary table, then upserted from it in one statement (the same "only a newer read
 * overwrites" rule as `upsertCharges`: `mirrorUpsertSql`). No JSON built or parsed per charge. If
 * PostgreSQL refuses the batch for its data, it is landed again through
 * `upsertChargesIsolating` (bisected), so one bad row costs only itself.
 * `client` must be inside a transaction.
 */

const LOAD_TABLE = `CREATE TEMP TABLE IF NOT EXISTS sweeper_mirror_load (${MIRROR_RECORD_TYPE}) ON COMMIT DELETE ROWS`;
const COPY_INTO_LOAD = `COPY sweeper_mirror_load (${MIRROR_COLUMNS.map(([name]) => name).join(', ')}) FROM STDIN`;
const UPSERT_FROM_LOAD = mirrorUpsertSql(
  'SELECT DISTINCT ON (charge_id) * FROM sweeper_mirror_load ORDER BY charge_id',
  '$1',
);

export async function copyCharges(
  client: PoolClient,
  charges: NormalizedCharge[],
  fetchedAt: Date,
): Promise<IsolatedUpsert> {
  if (charges.length === 0) return { written: 0, refused: [] };
  await client.query(LOAD_TABLE);
  await client.query('SAVEPOINT sweeper_mirror_copy');
  try {
    await pipeline(Readable.from(lines(charges)), client.query(copyFrom(COPY_INTO_LOAD)));
    const { rowCount } = await client.query(UPSERT_FROM_LOAD, [fetchedAt]);
    await client.query('RELEASE SAVEPOINT sweeper_mirror_copy');
    return { written: rowCount ?? 0, refused: [] };
  } catch (error) {
    if (!isDataError(error)) throw error;
    await client.query('ROLLBACK TO SAVEPOINT sweeper_mirror_copy');
    await client.query('RELEASE SAVEPOINT sweeper_mirror_copy');
    return upsertChargesIsolating(client, charges, fetchedAt);
  }
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
