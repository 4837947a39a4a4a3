import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import { createPool, type Pool, type Queryable } from '../../src/db/pool.js';
import { withDatabase } from './global-setup.js';

export interface TestDatabase {
  name: string;
  url: string;
  pool: Pool;
  /** Drops the database; pass `keep` to leave it for inspection after a failure. */
  drop(options?: { keep?: boolean }): Promise<void>;
}

/** A fresh, migrated database of its own for one test file. */
export function createTestDatabase(options: { poolSize?: number } = {}): Promise<TestDatabase> {
  return copyOf(inject('pgTemplate'), options.poolSize ?? 10);
}

/** A copy of `source` (which must have no open connections), with a pool of its own. */
export function cloneDatabase(source: string, options: { poolSize?: number } = {}): Promise<TestDatabase> {
  return copyOf(source, options.poolSize ?? 4);
}

async function copyOf(source: string, poolSize: number): Promise<TestDatabase> {
  const adminUrl = inject('pgAdminUrl');
  const name = `sweeper_test_${randomBytes(5).toString('hex')}`;
  await withAdmin(adminUrl, (admin) => admin.query(`CREATE DATABASE ${name} TEMPLATE ${source}`));
  const url = withDatabase(adminUrl, name);
  const pool = createPool(url, { max: poolSize });
  return {
    name,
    url,
    pool,
    async drop({ keep = false } = {}) {
      if (!pool.ended) await pool.end();
      if (keep) {
        console.error(`test database kept for inspection: ${url}`);
        return;
      }
      await withAdmin(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/** A database with nothing in it, for migration tests. */
export async function createEmptyDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = inject('pgAdminUrl');
  const name = `sweeper_empty_${randomBytes(5).toString('hex')}`;
  await withAdmin(adminUrl, (admin) => admin.query(`CREATE DATABASE ${name}`));
  return {
    url: withDatabase(adminUrl, name),
    drop: () =>
      withAdmin(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** The settings a role carries for every database (`ALTER ROLE … SET`), as `name=value`. */
export async function roleSettings(db: Queryable, role: string): Promise<string[]> {
  const { rows } = await db.query<{ setconfig: string[] }>(
    `SELECT setconfig FROM pg_db_role_setting WHERE setrole = $1::regrole AND setdatabase = 0`,
    [role],
  );
  return rows[0]?.setconfig ?? [];
}

/** One statement on the server, outside any test database (roles belong to the cluster). */
export async function onServer(sql: string): Promise<void> {
  await withAdmin(inject('pgAdminUrl'), (admin) => admin.query(sql));
}

async function withAdmin<T>(adminUrl: string, fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

/**
 * `db` as a library function sees it, except that each statement is first EXPLAINed
 * (`COSTS OFF`, not run) and its plan kept in `plans`, then run as usual: a test can
 * assert how a statement reads its tables, not only what it returns.
 */
export function explaining(db: Queryable): { db: Queryable; plans: string[] } {
  const plans: string[] = [];
  const query = async (statement: string | { text: string; values?: unknown[] }, params?: unknown[]) => {
    const [text, values] = typeof statement === 'string' ? [statement, params] : [statement.text, statement.values];
    const { rows } = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${text}`, values);
    plans.push(...rows.map((r) => r['QUERY PLAN']));
    return typeof statement === 'string' ? db.query(statement, params) : db.query(statement);
  };
  return { db: { query } as unknown as Queryable, plans };
}

/**
 * A database of the test file's own (createTestDatabase) with a day partition for every
 * UTC day from `from` to `to` (by default tomorrow): what a sweep over those days writes into.
 */
export async function partitionedDatabase(
  from: Date,
  to: Date = new Date(Date.now() + 86_400_000),
  options: { poolSize?: number } = {},
): Promise<TestDatabase> {
  const db = await createTestDatabase(options);
  await ensureDayPartitions(db.pool, { from: utcDay(from), to: utcDay(to) });
  return db;
}
