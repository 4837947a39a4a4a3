import pg from 'pg';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../src/fakes/postgres-server.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { migrate } from '../src/db/migrate.js';

/** A migrated database for a benchmark: in DATABASE_URL's server, or a throwaway one. */
export async function benchDatabase(name: string): Promise<{ pool: Pool; url: string; close(): Promise<void> }> {
  let server: ThrowawayPostgres | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    server = await startThrowawayPostgres();
    adminUrl = server.url;
  }
  const db = `sweeper_bench_${name}_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${db}`);
  await admin.query(`CREATE DATABASE ${db}`);
  const url = new URL(adminUrl);
  url.pathname = `/${db}`;
  const pool = createPool(url.toString(), { max: 8 });
  await migrate(pool);
  return {
    pool,
    url: url.toString(),
    async close() {
      await pool.end();
      await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      await admin.end();
      await server?.stop();
    },
  };
}

/** Counts every statement any pg client of this process sends, from now on. */
export function countStatements(): { count: () => number; reset: () => void } {
  let n = 0;
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    n += 1;
    return original.apply(this, args);
  };
  return { count: () => n, reset: () => (n = 0) };
}

export async function writeResult(name: string, result: unknown): Promise<void> {
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
}
