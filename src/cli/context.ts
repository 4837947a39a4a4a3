import { userInfo } from 'node:os';
import { loadConfig, loadReviewSettings, requireDatabaseUrl, type Config } from '../config.js';
import { createStripeProvider, type StripeProvider } from '../providers/stripe/provider.js';
import { personName } from '../serve/names.js';
import { assertSchemaCurrent } from '../db/migrate.js';
import { checkConnection, createPool, type Pool } from '../db/pool.js';
import type { Logger } from '../log.js';
import { cliLogger } from './log-output.js';
import { redactDeep } from '../secrets.js';
import { terminalSafeJson } from '../terminal-text.js';
import { ExitCode } from '../exit-codes.js';

export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly exitCode = ExitCode.usage;
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
  const logger = cliLogger(config);
  // A sweep's accounts in flight each hold a connection while they judge, besides the lock's and the groups' own.
  const pool = createPool(url, { max: Math.max(8, config.accountConcurrency + 3), timeouts: config.db });
  try {
    await checkConnection(pool, url);
    await assertSchemaCurrent(pool);
    return await fn({ config, pool, logger });
  } finally {
    await pool.end();
  }
}

/**
 * One JSON line on stdout: every registered secret redacted (the shape is kept), and
 * no character that could steer a terminal (escaped the JSON way, so it parses the same).
 */
export function writeJson(value: unknown): void {
  process.stdout.write(`${terminalSafeJson(JSON.stringify(redactDeep(value)))}\n`);
}

/** The OS user running the command: who a person's action is recorded as when nothing else names them. */
export function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

/**
 * Who a person's command acts as (a plan's author, its approver, whoever applies it):
 * `--by`, else SWEEPER_ACTOR, else the OS user; a name as the review page takes one.
 */
export function actorName(by: string | undefined, flag = '--by'): string {
  const given = by ?? loadReviewSettings().actor ?? osUser();
  const checked = personName(given);
  if ('problem' in checked) {
    throw new UsageError(
      by !== undefined
        ? `${flag}: the name ${checked.problem}; give the person's own name`
        : `the OS user's name ${checked.problem}: pass ${flag} NAME (or set SWEEPER_ACTOR)`,
    );
  }
  return checked.name;
}

/** The Stripe provider of a command, from the configuration (one rate budget for all its requests). */
export function stripeProviderFor(config: Config, apiKey: string): StripeProvider {
  return createStripeProvider({
    apiKey,
    apiBase: config.stripeApiBase,
    timeoutMs: config.requestDeadlineMs,
    ratePerSecond: config.stripeRatePerSecond,
    metadataKeys: config.metadataKeys,
  });
}
