import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeClaim } from '../../src/claims/claim-store.js';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * The claims' directory on the baseline schema: a claim written by any path is filed
 * before anyone else can claim its key, on any day, so a second claim of a key is
 * refused however it is written, and a taker of a key being written waits for the
 * writer, then finds its claim.
 */
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 6 });
  await ensureDayPartitions(db.pool, { from: '2026-03-14', to: '2026-03-18' });
});
afterAll(async () => {
  await db.drop();
});

/** A plain INSERT of an in-flight claim, as payment code or a person would write it. */
const insertInto = (db: Pick<TestDatabase['pool'], 'query'>, table: string, key: string, at: string) =>
  db.query(
    `INSERT INTO ${table} (tenant_id, key, request_fingerprint, status, locked_until, downstream_key, created_at, updated_at)
     VALUES ('acme', $1, 'f', 'in_flight', $2::timestamptz + interval '1 hour', 'd', $2, $2)`,
    [key, at],
  );

async function claimsOf(key: string) {
  const { rows } = await db.pool.query<{ day: string; filed: boolean }>(
    `SELECT to_char(k.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, d.created_at = k.created_at AS filed
       FROM idempotency_keys k LEFT JOIN idempotency_key_directory d USING (tenant_id, key)
      WHERE k.tenant_id = 'acme' AND k.key = $1`,
    [key],
  );
  return rows;
}

/** Takes `key` on the next day, from a connection of its own, and reports when it waits for a lock. */
async function takeOnTheNextDay(key: string) {
  const taker = await db.pool.connect();
  const pid = (await taker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
  const outcome = takeClaim(taker, {
    tenantId: 'acme',
    key,
    fingerprint: 'f',
    downstreamKey: 'd',
    now: new Date('2026-03-17T00:00:30Z'),
    leaseMs: 60_000,
  }).finally(() => taker.release());
  const waiting = async () => {
    // Observed, not slept on: the taker blocks on the writer's directory entry.
    for (;;) {
      const { rows } = await db.pool.query('SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted', [pid]);
      if (rows.length > 0) return;
    }
  };
  return { outcome, waiting };
}

describe('the claims directory', () => {
  it('a take of a key that a plain INSERT is writing on the previous day waits for it, then finds its claim', async () => {
    const writer = await db.pool.connect();
    try {
      await writer.query('BEGIN');
      await insertInto(writer, 'idempotency_keys', 'written-at-midnight', '2026-03-16T23:59:00Z');
      const take = await takeOnTheNextDay('written-at-midnight');
      await take.waiting();
      await writer.query('COMMIT');
      expect(await take.outcome).toMatchObject({ outcome: 'in_flight', attempt: 1 });
    } finally {
      writer.release();
    }
    expect(await claimsOf('written-at-midnight')).toEqual([{ day: '2026-03-16', filed: true }]);
  });

  it('when that INSERT rolls back, the waiting take claims the key on its own day', async () => {
    const writer = await db.pool.connect();
    try {
      await writer.query('BEGIN');
      await insertInto(writer, 'idempotency_keys', 'rolled-back', '2026-03-16T23:59:00Z');
      const take = await takeOnTheNextDay('rolled-back');
      await take.waiting();
      await writer.query('ROLLBACK');
      expect(await take.outcome).toMatchObject({ outcome: 'claimed', attempt: 1 });
    } finally {
      writer.release();
    }
    expect(await claimsOf('rolled-back')).toEqual([{ day: '2026-03-17', filed: true }]);
  });

  it("refuses a second claim of a key written straight into another day's partition, naming the key", async () => {
    await insertInto(db.pool, 'idempotency_keys', 'twice', '2026-03-14T10:00:00Z');
    const error = await insertInto(db.pool, 'idempotency_keys_p20260315', 'twice', '2026-03-15T10:00:00Z').catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      code: '23505',
      constraint: 'idempotency_keys_tenant_key_unique',
      message: expect.stringContaining('(acme, twice)'),
    });
    expect(await claimsOf('twice')).toEqual([{ day: '2026-03-14', filed: true }]);
  });
});
