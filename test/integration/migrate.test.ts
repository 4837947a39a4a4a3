import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, writeFile, copyFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPool, type Pool } from '../../src/db/pool.js';
import { DEFAULT_MIGRATIONS_DIR, MigrationError, assertSchemaCurrent, migrate } from '../../src/db/migrate.js';
import { createEmptyDatabase } from '../support/db.js';

/** The migration files, not the schema snapshot or the README beside them. */
const migrationFiles = async () => (await readdir(DEFAULT_MIGRATIONS_DIR)).filter((n) => /^\d{3,}_.*\.sql$/.test(n));

describe('migrate', () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: Pool;

  beforeAll(async () => {
    db = await createEmptyDatabase();
    pool = createPool(db.url, { max: 8 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('refuses to serve a database that was never migrated', async () => {
    await expect(assertSchemaCurrent(pool)).rejects.toMatchObject({
      exitCode: 64,
      message: expect.stringMatching(/run `sweeper migrate`/),
    });
  });

  it('applies every migration once, even when two processes race, and is idempotent', async () => {
    const [a, b] = await Promise.all([migrate(pool), migrate(pool)]);
    const files = await migrationFiles();
    expect(a.version).toBe(files.length);
    expect([...a.applied, ...b.applied].sort()).toEqual(files.sort());
    const again = await migrate(pool);
    expect(again.applied).toEqual([]);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM sweeper_migrations');
    expect(rows[0].n).toBe(files.length);
    await expect(assertSchemaCurrent(pool)).resolves.toBeUndefined();
  });

  it('refuses a database that has a newer migration than the code knows', async () => {
    await pool.query(`INSERT INTO sweeper_migrations (id, name, checksum) VALUES (999, '999_future.sql', 'x')`);
    try {
      await expect(migrate(pool)).rejects.toMatchObject({
        exitCode: 64,
        message: expect.stringMatching(/at migration 999 .*upgrade sweeper/),
      });
      await expect(assertSchemaCurrent(pool)).rejects.toMatchObject({ exitCode: 64 });
    } finally {
      await pool.query('DELETE FROM sweeper_migrations WHERE id = 999');
    }
  });

  it('stops at a failing migration, names the file and the SQL error, and applies none of it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sweeper-migrations-'));
    for (const name of await readdir(DEFAULT_MIGRATIONS_DIR)) {
      await copyFile(path.join(DEFAULT_MIGRATIONS_DIR, name), path.join(dir, name));
    }
    const next = String((await migrationFiles()).length + 1).padStart(3, '0');
    await writeFile(
      path.join(dir, `${next}_broken.sql`),
      'CREATE TABLE half_applied (id int);\nSELECT * FROM no_such_table;\n',
    );
    const error = await migrate(pool, { dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationError);
    expect((error as Error).message).toMatch(new RegExp(`${next}_broken.sql failed .*no_such_table`));
    const { rows } = await pool.query(`SELECT to_regclass('half_applied') AS t`);
    expect(rows[0].t).toBeNull();
  });

  it('refuses a migration file edited after it was applied', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sweeper-migrations-'));
    for (const name of await readdir(DEFAULT_MIGRATIONS_DIR)) {
      await copyFile(path.join(DEFAULT_MIGRATIONS_DIR, name), path.join(dir, name));
    }
    await writeFile(path.join(dir, '001_claims_and_payments.sql'), '-- edited\n', { flag: 'a' });
    await expect(migrate(pool, { dir })).rejects.toThrow(
      /001_claims_and_payments.sql was changed after it was applied/,
    );
  });
});
