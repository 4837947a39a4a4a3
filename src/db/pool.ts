import pg from 'pg';
import { DatabaseUnavailableError } from '../errors.js';
import { redactUrlPassword, type DbTimeouts } from '../config.js';
import { registerUrlCredentials } from '../secrets.js';
import { isoTimestamptzMs } from './timestamps.js';
import { ExitCode } from '../exit-codes.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: a pool or a checked-out client inside a transaction. */
export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

const INT8_OID = 20;
const TIMESTAMPTZ_OID = 1184;
const parseTimestamptzGeneric = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (text: string) => unknown;
// The sweep reads millions of these: read in place (src/db/timestamps.ts), the generic parser for the rest.
const parseTimestamptz = (text: string): unknown => {
  const ms = isoTimestamptzMs(text);
  return ms === null ? parseTimestamptzGeneric(text) : new Date(ms);
};

// Amounts are bigint in minor units; JavaScript numbers hold them exactly up to 2^53,
// far beyond any charge. Parse them as numbers, but refuse silently losing precision.
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID && format !== 'binary') {
      return (text: string) => {
        const n = Number(text);
        if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value ${text} exceeds Number.MAX_SAFE_INTEGER`);
        return n;
      };
    }
    if (oid === TIMESTAMPTZ_OID && format !== 'binary') return parseTimestamptz;
    return pg.types.getTypeParser(oid, format as 'text');
  },
} as pg.CustomTypesConfig;

export interface PoolOptions {
  max?: number;
  applicationName?: string;
  /** Session limits of every connection; 0 leaves one to the role's or server's setting. */
  timeouts?: Partial<DbTimeouts>;
}

/**
 * The sweeper's session limits (SWEEPER_DB_*; docs/configuration.md). Without them a
 * runner waiting on a row lock held by a frozen runner waits forever, and the frozen
 * runner's open transaction is never cut off. `jobs/sql/least-privilege-role.sql` sets
 * the same on the role, for sessions that do not come through here.
 */
export const DEFAULT_DB_TIMEOUTS: Readonly<DbTimeouts> = Object.freeze({
  lockTimeoutMs: 30_000,
  statementTimeoutMs: 300_000,
  idleInTransactionTimeoutMs: 300_000,
});

export function createPool(connectionString: string, options: PoolOptions = {}): Pool {
  registerUrlCredentials(connectionString);
  const timeouts = { ...DEFAULT_DB_TIMEOUTS, ...options.timeouts };
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'sweeper',
    connectionTimeoutMillis: 10_000,
    // Sent in the start-up packet: in force from the first statement, whatever the role says.
    lock_timeout: timeouts.lockTimeoutMs,
    statement_timeout: timeouts.statementTimeoutMs,
    idle_in_transaction_session_timeout: timeouts.idleInTransactionTimeoutMs,
    // No parallel workers: every sweeper statement reads a slice's few thousand rows by
    // index, but the planner misjudges some (a slice's charges without metadata against
    // every claim partition) as large, and starting a worker costs more than the whole
    // statement (docs/performance.md, "No parallel workers"). No JIT either, for the same
    // misjudged statements: compiling their many partitions costs more than running them.
    // An `options` in DATABASE_URL replaces this one.
    options: '-c max_parallel_workers_per_gather=0 -c jit=off',
    types,
  });
  // An idle client losing its connection must not crash the process; the next
  // checkout reconnects or fails with a real error.
  pool.on('error', () => undefined);
  return pool;
}

/** Connects once and turns the usual failures into a one-line message that says what to fix. */
export async function checkConnection(pool: Pool, connectionString: string): Promise<void> {
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    throw new DatabaseUnavailableError(describeConnectionError(error, connectionString));
  }
}

export function describeConnectionError(error: unknown, connectionString: string): string {
  const where = redactUrlPassword(connectionString);
  const err = error as { code?: string; message?: string };
  switch (err.code) {
    case 'ECONNREFUSED':
      return `cannot connect to PostgreSQL at ${where} (connection refused): is the server running, and is DATABASE_URL right?`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot resolve the PostgreSQL host in ${where}: check DATABASE_URL`;
    case 'ETIMEDOUT':
      return `timed out connecting to PostgreSQL at ${where}: check DATABASE_URL and the network`;
    case '28P01':
    case '28000':
      return `PostgreSQL refused the credentials in DATABASE_URL (${where}): check the user and password`;
    case '3D000':
      return `the database in DATABASE_URL does not exist (${where}): create it, then run \`sweeper migrate\``;
    default:
      return `cannot use PostgreSQL at ${where}: ${err.message ?? String(error)}`;
  }
}

/**
 * Checks a connection out with an 'error' listener attached: if the server drops it
 * (restart, failover, pg_terminate_backend) the query in flight rejects, and the
 * event that node-postgres also emits must not crash the process as unhandled.
 * `onError` lets a holder notice (the sweep's lock connection must).
 */
export async function checkout(pool: Pool, onError: (error: Error) => void = () => undefined): Promise<PoolClient> {
  const client = await pool.connect();
  client.on('error', onError);
  const release = client.release.bind(client);
  client.release = (destroy?: boolean | Error) => {
    client.off('error', onError);
    return release(destroy);
  };
  return client;
}

/** Runs `fn` in one transaction on one connection; rolls back on any error. */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await checkout(pool);
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {
      broken = true; // a connection that cannot roll back is not given to anyone else
    });
    throw explainTimeout(error);
  } finally {
    client.release(broken);
  }
}

/**
 * One of the session limits stopped a statement or a transaction. The message says
 * which, what usually causes it and which variable sets it; `code` stays PostgreSQL's.
 */
export class DatabaseTimeoutError extends Error {
  override readonly name = 'DatabaseTimeoutError';
  readonly exitCode = ExitCode.failed;
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const TIMEOUTS: Record<string, { what: string; variable: string }> = {
  '55P03': {
    what: 'waited too long for a lock another session holds (a frozen or slow runner, or a long transaction); the slice rolled back and the next run retries it',
    variable: 'SWEEPER_DB_LOCK_TIMEOUT',
  },
  '25P03': {
    what: 'the transaction sat idle too long and PostgreSQL ended the session; the slice rolled back',
    variable: 'SWEEPER_DB_IDLE_IN_TRANSACTION_TIMEOUT',
  },
};

/** PostgreSQL's timeout errors made readable; everything else unchanged. */
export function explainTimeout(error: unknown): unknown {
  const err = error as { code?: unknown; message?: unknown } | null;
  const code = typeof err?.code === 'string' ? err.code : undefined;
  const message = typeof err?.message === 'string' ? err.message : '';
  const known = code ? TIMEOUTS[code] : undefined;
  if (known && code)
    return new DatabaseTimeoutError(`PostgreSQL: ${known.what} (${known.variable}; ${message})`, code, {
      cause: error,
    });
  if (code === '57014' && /statement timeout/.test(message)) {
    return new DatabaseTimeoutError(
      `PostgreSQL: a statement ran longer than SWEEPER_DB_STATEMENT_TIMEOUT and was cancelled; the slice rolled back (${message})`,
      code,
      { cause: error },
    );
  }
  return error;
}
