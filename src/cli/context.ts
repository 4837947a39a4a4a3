import { loadConfig, requireDatabaseUrl, type Config } from '../config.js';
import { assertSchemaCurrent } from '../db/migrate.js';
import { checkConnection, createPool, type Pool } from '../db/pool.js';
import { createLogger, type Logger } from '../log.js';

export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly exitCode = 64;
}

export interface CommandContext {
  config: Config;
  pool: Pool;
  logger: Logger;
}

/**
 * What every database command starts with: configuration validated, then one
 * connection made and the schema checked, before anything is read or written.
 */
export async function withDatabase<T>(fn: (ctx: CommandContext) => Promise<T>, config = loadConfig()): Promise<T> {
  const url = requireDatabaseUrl(config);
  const logger = createLogger({ level: config.logLevel });
  const pool = createPool(url, { max: 8 });
  try {
    await checkConnection(pool, url);
    await assertSchemaCurrent(pool);
    return await fn({ config, pool, logger });
  } finally {
    await pool.end();
  }
}

export function writeJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
