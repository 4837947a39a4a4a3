import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions, partitionDays, utcDay } from '../../src/db/partitions.js';
import { createPool, explainTimeout, inTransaction, type Pool } from '../../src/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/** The database limits of issue 10: session timeouts, and bounded partition creation. */
let db: TestDatabase;
const DAY_MS = 86_400_000;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe('session limits', () => {
  let pool: Pool;
  beforeAll(() => {
    pool = createPool(db.url, {
      max: 3,
      timeouts: { lockTimeoutMs: 300, statementTimeoutMs: 4_000, idleInTransactionTimeoutMs: 1_000 },
    });
  });
  afterAll(async () => {
    await pool.end();
  });

  it('every connection starts with them', async () => {
    const { rows } = await pool.query<{ lock: string; statement: string; idle: string }>(
      `SELECT current_setting('lock_timeout') AS lock, current_setting('statement_timeout') AS statement,
              current_setting('idle_in_transaction_session_timeout') AS idle`,
    );
    expect(rows[0]).toEqual({ lock: '300ms', statement: '4s', idle: '1s' });
    const defaults = createPool(db.url, { max: 1 });
    const { rows: d } = await defaults.query<{ lock: string }>(`SELECT current_setting('lock_timeout') AS lock`);
    await defaults.end();
    expect(d[0]?.lock).toBe('30s');
  });

  it('no connection plans parallel workers or JIT, its first statement included', async () => {
    const fresh = createPool(db.url, { max: 2 });
    try {
      // Two connections at once: the setting comes with each one's start-up, before any statement.
      const [a, b] = await Promise.all([fresh.connect(), fresh.connect()]);
      try {
        for (const client of [a, b]) {
          const { rows } = await client.query<{ workers: string; jit: string }>(
            `SELECT current_setting('max_parallel_workers_per_gather') AS workers, current_setting('jit') AS jit`,
          );
          expect(rows[0]).toEqual({ workers: '0', jit: 'off' });
        }
      } finally {
        a.release();
        b.release();
      }
      const { rows } = await fresh.query<{ workers: string }>(
        `SELECT current_setting('max_parallel_workers_per_gather') AS workers`,
      );
      expect(rows[0]?.workers).toBe('0');
    } finally {
      await fresh.end();
    }
  });

  it('a session frozen inside a transaction is ended by the server, and its row locks go with it', async () => {
    await db.pool.query(`CREATE TABLE IF NOT EXISTS limits_probe (id int PRIMARY KEY)`);
    await db.pool.query(`INSERT INTO limits_probe VALUES (1) ON CONFLICT DO NOTHING`);
    const frozen = await pool.connect();
    const ended = once(frozen, 'error');
    await frozen.query('BEGIN');
    await frozen.query('SELECT * FROM limits_probe WHERE id = 1 FOR UPDATE');
    // The "runner" now does nothing: the server ends it after idle_in_transaction_session_timeout.
    const [error] = (await ended) as [Error & { code?: string }];
    expect(error.code).toBe('25P03');
    frozen.release(true);
    await inTransaction(pool, (client) => client.query('SELECT * FROM limits_probe WHERE id = 1 FOR UPDATE'));
  });

  it('a lock wait gives up with a message naming SWEEPER_DB_LOCK_TIMEOUT', async () => {
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM limits_probe WHERE id = 1 FOR UPDATE');
      const error = await inTransaction(pool, (client) =>
        client.query('UPDATE limits_probe SET id = 1 WHERE id = 1'),
      ).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'DatabaseTimeoutError', code: '55P03', exitCode: 1 });
      expect((error as Error).message).toMatch(
        /waited too long for a lock another session holds .*SWEEPER_DB_LOCK_TIMEOUT/,
      );
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });

  it('explains a statement timeout and leaves other errors alone', () => {
    expect(explainTimeout({ code: '57014', message: 'canceling statement due to statement timeout' })).toMatchObject({
      message: expect.stringMatching(/SWEEPER_DB_STATEMENT_TIMEOUT/),
    });
    const other = { code: '23505', message: 'duplicate key' };
    expect(explainTimeout(other)).toBe(other);
  });
});

describe('sweeper_ensure_day_partitions is bounded', () => {
  const ensure = (table: string, from: string | null, to: string | null) =>
    db.pool.query(`SELECT sweeper_ensure_day_partitions($1::regclass, $2::date, $3::date) AS n`, [table, from, to]);
  const day = (offsetDays: number) => utcDay(new Date(Date.now() + offsetDays * DAY_MS));

  it.each<[string, string, string | null, string | null, RegExp]>([
    ['the year 2100', 'stripe_charges', '2100-01-01', '2100-01-31', /35 days ahead/],
    ['36 days ahead', 'idempotency_keys', day(36), day(36), /35 days ahead/],
    ['before 2010', 'stripe_charges', '2009-06-01', '2009-06-02', /between 2010-01-01/],
    ['more than 400 days at once', 'stripe_charges', '2020-01-01', '2021-03-01', /at most 400 days/],
    ['from after to', 'stripe_charges', day(2), day(1), /from not after to/],
    ['no dates', 'stripe_charges', null, null, /must be days/],
    ['another table', 'payments', day(0), day(0), /only idempotency_keys and stripe_charges/],
  ])('refuses %s (22023), creating nothing', async (_name, table, from, to, message) => {
    await expect(ensure(table, from, to)).rejects.toMatchObject({
      code: '22023',
      message: expect.stringMatching(message),
    });
  });

  it('accepts what its callers ask: the retention window (up to 366 days) and a month ahead, and old mirror days for a backfill', async () => {
    const widest = partitionDays(new Date(), 366 * DAY_MS);
    expect((Date.parse(widest.to) - Date.parse(widest.from)) / DAY_MS).toBeLessThanOrEqual(400);
    expect(widest.to).toBe(day(31));
    await expect(ensure('idempotency_keys', day(30), day(35))).resolves.toBeDefined();
    expect(await ensureDayPartitions(db.pool, { from: '2014-03-01', to: '2014-03-02' }, ['stripe_charges'])).toBe(2);
  });
});
