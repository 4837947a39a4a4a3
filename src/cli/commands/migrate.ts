import type { Command } from 'commander';
import { loadConfig, requireDatabaseUrl } from '../../config.js';
import { checkConnection, createPool } from '../../db/pool.js';
import { migrate } from '../../db/migrate.js';
import { assertSchemaOwner } from '../../db/owner.js';
import { ensureDayPartitions, partitionDays } from '../../db/partitions.js';
import { cliLogger } from '../log-output.js';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('apply the SQL migrations and create the day partitions of the retention window (idempotent)')
    .option('--json', 'print the result as one JSON object')
    .addHelpText(
      'after',
      `
Example:
  DATABASE_URL=postgres://sweeper@localhost/payments sweeper migrate

Safe to run at every deploy and from several processes at once: migrations run
one at a time under an advisory lock, each in its own transaction.`,
    )
    .action(async (options: { json?: boolean }) => {
      const config = loadConfig();
      const url = requireDatabaseUrl(config);
      const logger = cliLogger(config);
      // No statement or lock limit: a migration may rewrite a big table, and a second
      // migrate waits for the first one's advisory lock by design.
      const pool = createPool(url, { max: 2, timeouts: { ...config.db, statementTimeoutMs: 0, lockTimeoutMs: 0 } });
      try {
        await checkConnection(pool, url);
        await assertSchemaOwner(pool, 'migrate');
        const result = await migrate(pool, { logger });
        const created = await ensureDayPartitions(pool, partitionDays(new Date(), config.retentionMs));
        const summary = { version: result.version, applied: result.applied, partitions_created: created };
        if (options.json) {
          process.stdout.write(`${JSON.stringify(summary)}\n`);
        } else {
          const what = result.applied.length ? `applied ${result.applied.join(', ')}` : 'already up to date';
          process.stdout.write(`schema at migration ${result.version}: ${what}; ${created} day partitions created\n`);
        }
      } finally {
        await pool.end();
      }
    });
}
