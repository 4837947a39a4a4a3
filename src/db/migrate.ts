import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { checkout, type Pool, type Queryable } from './pool.js';
import { LOCK_CLASS, LockObject } from './locks.js';
import type { Logger } from '../log.js';
import { ExitCode } from '../exit-codes.js';

export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

const FILE_NAME = /^(\d{3,})_[A-Za-z0-9_-]+\.sql$/;

/**
 * The schema the migrations produce, as `pg_dump --schema-only` shows it, beside them
 * for readers (`npm run schema:snapshot` writes it; a test keeps it true): never applied.
 */
export const SCHEMA_SNAPSHOT_FILE = 'schema.sql';

export interface MigrationFile {
  id: number;
  name: string;
  sql: string;
  checksum: string;
}

/** Migration failures are fatal and say which file and why. */
export class MigrationError extends Error {
  override readonly name = 'MigrationError';
  readonly exitCode: number;
  constructor(message: string, exitCode: number = ExitCode.failed) {
    super(message);
    this.exitCode = exitCode;
  }
}

export async function readMigrations(dir = DEFAULT_MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.sql') && n !== SCHEMA_SNAPSHOT_FILE).sort();
  const files: MigrationFile[] = [];
  for (const name of names) {
    const match = FILE_NAME.exec(name);
    if (!match) throw new MigrationError(`migration file name ${name} must look like 001_description.sql`);
    const sql = await readFile(path.join(dir, name), 'utf8');
    files.push({ id: Number(match[1]), name, sql, checksum: sha256(sql) });
  }
  files.forEach((file, index) => {
    if (file.id !== index + 1) {
      throw new MigrationError(`migrations must be numbered 1, 2, 3… without gaps; ${file.name} is number ${file.id}`);
    }
  });
  return files;
}

interface AppliedRow {
  id: number;
  name: string;
  checksum: string;
}

export interface MigrateResult {
  applied: string[];
  version: number;
}

/**
 * Applies pending migrations, each in its own transaction, while holding a
 * session advisory lock so two processes never interleave. Safe to run any number
 * of times; refuses a database that is ahead of this code or whose applied files
 * were edited afterwards.
 */
export async function migrate(pool: Pool, options: { dir?: string; logger?: Logger } = {}): Promise<MigrateResult> {
  const files = await readMigrations(options.dir);
  const client = await checkout(pool);
  let broken = false;
  try {
    await client.query('SELECT pg_advisory_lock($1, $2)', [LOCK_CLASS, LockObject.migrate]);
    try {
      await client.query(`
        CREATE TABLE IF NOT EXISTS sweeper_migrations (
          id         int         PRIMARY KEY,
          name       text        NOT NULL,
          checksum   text        NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`);
      const applied = await appliedMigrations(client);
      checkHistory(files, applied);
      const done: string[] = [];
      for (const file of files.slice(applied.length)) {
        await applyOne(client, file);
        options.logger?.info({ migration: file.name }, 'migration applied');
        done.push(file.name);
      }
      return { applied: done, version: files.length };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, LockObject.migrate]).catch(() => {
        broken = true;
      });
    }
  } finally {
    client.release(broken);
  }
}

async function appliedMigrations(db: Queryable): Promise<AppliedRow[]> {
  const { rows } = await db.query<AppliedRow>('SELECT id, name, checksum FROM sweeper_migrations ORDER BY id');
  return rows;
}

function checkHistory(files: MigrationFile[], applied: AppliedRow[]): void {
  const newest = applied.at(-1);
  if (newest && newest.id > files.length) {
    throw new MigrationError(
      `the database is at migration ${newest.id} (${newest.name}) but this sweeper only knows ${files.length}: ` +
        'upgrade sweeper before running it against this database',
      ExitCode.usage,
    );
  }
  for (const row of applied) {
    const file = files[row.id - 1];
    if (!file || file.checksum !== row.checksum) {
      throw new MigrationError(
        `migration ${row.name} was changed after it was applied (checksum differs): ` +
          'restore the original file and add a new migration instead',
        ExitCode.usage,
      );
    }
  }
}

async function applyOne(client: Queryable, file: MigrationFile): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(file.sql);
    await client.query('INSERT INTO sweeper_migrations (id, name, checksum) VALUES ($1, $2, $3)', [
      file.id,
      file.name,
      file.checksum,
    ]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    const err = error as { message?: string; position?: string };
    const where = err.position ? ` at character ${err.position}` : '';
    throw new MigrationError(
      `migration ${file.name} failed${where}: ${err.message ?? String(error)}; nothing of it was applied`,
    );
  }
}

/**
 * For commands that need the schema: fails with exit 64 and a message to run
 * `sweeper migrate` when the database is behind (or ahead of) this code.
 */
export async function assertSchemaCurrent(db: Queryable, dir?: string): Promise<void> {
  const files = await readMigrations(dir);
  const exists = await db.query<{ t: string | null }>(`SELECT to_regclass('sweeper_migrations')::text AS t`);
  let version: number | null = null;
  if (exists.rows[0]?.t) {
    const { rows } = await db.query<{ version: number }>(
      'SELECT coalesce(max(id), 0) AS version FROM sweeper_migrations',
    );
    version = rows[0]?.version ?? 0;
  }
  if (version === null || version < files.length) {
    throw new MigrationError(
      `the database schema is at migration ${version ?? 0} of ${files.length}: run \`sweeper migrate\` first`,
      ExitCode.usage,
    );
  }
  if (version > files.length) {
    throw new MigrationError(
      `the database is at migration ${version} but this sweeper only knows ${files.length}: upgrade sweeper`,
      ExitCode.usage,
    );
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
