import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../../testkit/postgres-server.js';
import { createPool } from '../../src/db/pool.js';
import { migrate } from '../../src/db/migrate.js';
import { ensureBuilt } from './build.js';

/**
 * One PostgreSQL for the whole run: the server in DATABASE_URL, or a throwaway one.
 * A template database is migrated once; every test file copies it (CREATE DATABASE …
 * TEMPLATE), which takes milliseconds and isolates files from each other. Meanwhile the
 * CLI is built if src/ changed since the last build (build.ts): the tests spawn it from dist/.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const built = ensureBuilt();
  // Awaited once the template is ready; until then a failure must not go unhandled.
  built.catch(() => undefined);
  let server: ThrowawayPostgres | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    server = await startThrowawayPostgres();
    adminUrl = server.url;
  }
  const template = `sweeper_tpl_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  const pool = createPool(withDatabase(adminUrl, template), { max: 1 });
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
  const teardown = async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${template}`).catch(() => undefined);
    await admin.end();
    await server?.stop();
  };
  try {
    await built;
  } catch (error) {
    await teardown();
    throw error;
  }
  project.provide('pgAdminUrl', adminUrl);
  project.provide('pgTemplate', template);
  return teardown;
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
