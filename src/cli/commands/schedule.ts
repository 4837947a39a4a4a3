import type { Command } from 'commander';
import { alertConfigFromEnv } from '../../alerts/index.js';
import { loadConfig, requireStripeApiKey } from '../../config.js';
import { metricsConfigFromEnv } from '../../metrics/index.js';
import { assertSafeRetention, expirePartitions } from '../../db/expire.js';
import { STRIPE_IDEMPOTENCY_WINDOW } from '../../providers/stripe/limits.js';
import { isValidCron, startScheduler } from '../../schedule/scheduler.js';
import { UsageError, withDatabase } from '../context.js';
import { cliLogger } from '../log-output.js';
import { installShutdown } from '../shutdown.js';
import { executeSweep } from './sweep.js';
import { findingsExitFrom } from '../exit-decision.js';
import { forOperator } from '../../log.js';

export function registerSchedule(program: Command): void {
  program
    .command('schedule')
    .description('run sweeps in process on a cron schedule (never two at once) and expiry once a day')
    .option('--cron <expr>', 'when to sweep (cron, 5 or 6 fields)', '*/15 * * * *')
    .option('--expire-cron <expr>', 'when to expire old partitions', '17 3 * * *')
    .option('--tz <zone>', 'IANA time zone for the cron expressions, e.g. Europe/Berlin (default: local)')
    .option(
      '--no-expire',
      'do not run expiry (when this process runs as the least-privilege role: expiry needs the schema owner)',
    )
    .addHelpText(
      'after',
      `
Example:
  sweeper schedule --cron "*/10 * * * *" --tz UTC

For Kubernetes prefer the CronJob in jobs/; this is for a VM or a long-running pod.
SIGTERM stops ticking, lets a running sweep finish its slice, and exits.
Expiry drops partitions, which needs the schema owner: run this as the owner, or
pass --no-expire and run \`sweeper expire\` as the owner elsewhere.`,
    )
    .action(async (flags: { cron: string; expireCron: string; tz?: string; expire: boolean }) => {
      for (const [name, expr] of [
        ['--cron', flags.cron],
        ['--expire-cron', flags.expireCron],
      ] as const) {
        if (!isValidCron(expr)) throw new UsageError(`${name} "${expr}" is not a valid cron expression`);
      }
      if (flags.tz && !isValidTimeZone(flags.tz)) throw new UsageError(`--tz ${flags.tz}: not an IANA time zone`);
      // Everything a tick will need is checked now: a bad setting exits 64 at start,
      // not as a log line every 15 minutes.
      const config = loadConfig();
      requireStripeApiKey(config);
      alertConfigFromEnv();
      metricsConfigFromEnv();
      findingsExitFrom(undefined);
      if (flags.expire) assertSafeRetention(config.retentionMs, config.retryHorizonMs, STRIPE_IDEMPOTENCY_WINDOW);
      await withDatabase(async () => undefined, config); // reachable, migrated
      const logger = cliLogger(config);
      const signal = installShutdown(config.shutdownGraceMs);
      const scheduler = startScheduler({
        cron: flags.cron,
        expireCron: flags.expireCron,
        timezone: flags.tz,
        logger,
        sweepOnce: async () => {
          // Each tick has the run deadline of `sweeper run`: stopped as on SIGTERM when it passes.
          const tick = new AbortController();
          const stop = () => tick.abort(signal.reason);
          signal.addEventListener('abort', stop, { once: true });
          const deadline = setTimeout(
            () => tick.abort(new Error('the run deadline SWEEPER_RUN_DEADLINE was reached')),
            config.runDeadlineMs,
          );
          try {
            const code = await executeSweep('run', {}, tick.signal);
            logger.info(forOperator({ exit_code: code }), 'scheduled sweep finished');
          } finally {
            clearTimeout(deadline);
            signal.removeEventListener('abort', stop);
          }
        },
        expireOnce: flags.expire
          ? () =>
              withDatabase(async ({ pool }) => {
                const result = await expirePartitions(pool, { now: new Date(), retentionMs: config.retentionMs });
                logger.info(forOperator(result), 'scheduled expiry finished');
              }, config)
          : null,
      });
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      await scheduler.stop();
      logger.info(forOperator({}), 'scheduler stopped');
    });
}

function isValidTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
