import type { Command } from 'commander';
import { loadConfig } from '../../config.js';
import { assertSafeRetention, expirePartitions } from '../../db/expire.js';
import { STRIPE_IDEMPOTENCY_WINDOW } from '../../providers/stripe/limits.js';
import { assertSchemaOwner } from '../../db/owner.js';
import { withDatabase, writeJson } from '../context.js';

export function registerExpire(program: Command): void {
  program
    .command('expire')
    .description(
      'drop day partitions of claims and the charge mirror older than SWEEPER_RETENTION; create the ones ahead',
    )
    .option('--dry-run', 'list what would be dropped; change nothing')
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      `
Example:
  SWEEPER_RETENTION=14d sweeper expire --dry-run

Refuses (exit 64) a retention shorter than Stripe's 24h idempotency window plus
SWEEPER_RETRY_HORIZON: a retry arriving after its claim was dropped could charge twice.`,
    )
    .action((flags: { dryRun?: boolean; json?: boolean }) => {
      const config = loadConfig();
      assertSafeRetention(config.retentionMs, config.retryHorizonMs, STRIPE_IDEMPOTENCY_WINDOW);
      return withDatabase(async ({ pool, logger }) => {
        await assertSchemaOwner(pool, 'expire');
        const result = await expirePartitions(pool, {
          now: new Date(),
          retentionMs: config.retentionMs,
          dryRun: flags.dryRun,
        });
        logger.info({ ...result, dry_run: Boolean(flags.dryRun) }, 'expire finished');
        if (flags.json) return writeJson({ ...result, dry_run: Boolean(flags.dryRun) });
        const verb = flags.dryRun ? 'would drop' : 'dropped';
        process.stdout.write(
          `${verb} ${result.dropped.length} partitions older than ${result.keptFrom}${result.dropped.length ? `: ${result.dropped.join(', ')}` : ''}; ` +
            `${result.created} created ahead\n`,
        );
      }, config);
    });
}
