import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFile, mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPool, type Pool } from '../../src/db/pool.js';
import { DEFAULT_MIGRATIONS_DIR, MigrationError, migrate } from '../../src/db/migrate.js';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { createEmptyDatabase } from '../support/db.js';

/** Migration 010 on a database that already holds claims, with payment code still writing them. */
describe('migration 010: the claims directory over existing claims', () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: Pool;
  let before: string;
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

  beforeAll(async () => {
    db = await createEmptyDatabase();
    pool = createPool(db.url, { max: 4 });
    before = await mkdtemp(path.join(tmpdir(), 'sweeper-migrations-009-'));
    for (const name of await readdir(DEFAULT_MIGRATIONS_DIR)) {
      if (name < '010') await copyFile(path.join(DEFAULT_MIGRATIONS_DIR, name), path.join(before, name));
    }
    await migrate(pool, { dir: before });
    await ensureDayPartitions(pool, { from: day(-5), to: day(2) });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  const partition = (offset: number) => `idempotency_keys_p${day(offset).replaceAll('-', '')}`;
  const insert = (table: string, key: string, offset: number) =>
    pool.query(
      `INSERT INTO ${table} (tenant_id, key, request_fingerprint, status, downstream_key, created_at, updated_at)
       VALUES ('acme', $1, 'f', 'released', 'd', $2::date + time '10:00', $2::date + time '10:00')`,
      [key, day(offset)],
    );

  it('refuses, naming the key, when a key already has two claims (one written straight into a partition)', async () => {
    await insert('idempotency_keys', 'twice', -2);
    await insert(partition(-1), 'twice', -1); // before 010, nothing checked a partition's own inserts
    const error = await migrate(pool).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationError);
    expect((error as Error).message).toMatch(
      /010_claim_directory.sql failed: .*holds 2 claims of .*\(acme, twice\): keep one claim per key/,
    );
    expect((await pool.query(`SELECT to_regclass('idempotency_key_directory') AS t`)).rows[0].t).toBeNull();
    await pool.query(`DELETE FROM ${partition(-1)} WHERE key = 'twice'`);
  });

  it('files every claim, also one a writer commits while the migration runs', async () => {
    await insert('idempotency_keys', 'settled', -3);
    const writer = await pool.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(
        `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, downstream_key, created_at, updated_at)
         VALUES ('acme', 'in-flight-during-migrate', 'f', 'released', 'd', now(), now())`,
      );
      const migrating = migrate(pool);
      // The migration waits for the writer (observed, not slept on), then copies its claim.
      for (;;) {
        const { rows } = await pool.query(
          `SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
            WHERE c.relname = 'idempotency_keys' AND l.mode = 'ShareRowExclusiveLock' AND NOT l.granted`,
        );
        if (rows.length > 0) break;
      }
      await writer.query('COMMIT');
      const result = await migrating;
      expect(result.applied[0]).toBe('010_claim_directory.sql');
    } finally {
      writer.release();
    }
    const { rows } = await pool.query<{ key: string; filed: boolean }>(
      `SELECT k.key, d.created_at = k.created_at AS filed
         FROM idempotency_keys k LEFT JOIN idempotency_key_directory d USING (tenant_id, key) ORDER BY k.key`,
    );
    expect(rows).toEqual([
      { key: 'in-flight-during-migrate', filed: true },
      { key: 'settled', filed: true },
      { key: 'twice', filed: true },
    ]);
    // And from now on a second claim of a key is refused, through a partition too.
    await expect(insert(partition(-1), 'settled', -1)).rejects.toMatchObject({ code: '23505' });
  });
});
