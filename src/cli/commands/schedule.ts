import type { Command } from 'commander';
import { loadConfig } from '../../config.js';
import { assertSafeRetention, expirePartitions } from '../../db/expire.js';
import { createLogger } from '../../log.js';
import { isValidCron, startScheduler } from '../../schedule/scheduler.js';
import { UsageError, withDatabase } from '../context.js';
import { installShutdown } from '../shutdown.js';
import { executeSweep } from './sweep.js';

export function registerSchedule(program: Command): void {
  program
    .command('schedule')
    .description('run sweeps in process on a cron schedule (never two at once) and expiry once a day')
    .option('--cron <expr>', 'when to sweep (cron, 5 or 6 fields)', '*/15 * * * *')
    .option('--expire-cron <expr>', 'when to expire old partitions', '17 3 * * *')
    .option('--tz <zone>', 'IANA time zone for the cron expressions, e.g. Europe/Berlin (default: local)')
    .addHelpText(
      'after',
      `
Example:
  sweeper schedule --cron "*/10 * * * *" --tz UTC

For Kubernetes prefer the CronJob in jobs/; this is for a VM or a long-running pod.
SIGTERM stops ticking, lets a running sweep finish its slice, and exits.`,
    )
    .action(async (flags: { cron: string; expireCron: string; tz?: string }) => {
      for (const [name, expr] of [['--cron', flags.cron], ['--expire-cron', flags.expireCron]] as const) {
        if (!isValidCron(expr)) throw new UsageError(`${name} "${expr}" is not a valid cron expression`);
      }
      if (flags.tz && !isValidTimeZone(flags.tz)) throw new UsageError(`--tz ${flags.tz}: not an IANA time zone`);
      const config = loadConfig();
      assertSafeRetention(config.retentionMs, config.retryHorizonMs);
      const logger = createLogger({ level: config.logLevel });
      const signal = installShutdown(config.shutdownGraceMs);
      const scheduler = startScheduler({
        cron: flags.cron,
        expireCron: flags.expireCron,
        timezone: flags.tz,
        logger,
        sweepOnce: async () => {
          const code = await executeSweep('run', {}, signal);
          logger.info({ exit_code: code }, 'scheduled sweep finished');
        },
        expireOnce: () =>
          withDatabase(async ({ pool }) => {
            const result = await expirePartitions(pool, { now: new Date(), retentionMs: config.retentionMs });
            logger.info(result, 'scheduled expiry finished');
          }, config),
      });
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      await scheduler.stop();
      logger.info('scheduler stopped');
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
