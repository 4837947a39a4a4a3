import { Command, CommanderError } from 'commander';
import { registerMigrate } from './commands/migrate.js';
import { registerSweepCommands } from './commands/sweep.js';
import { registerStatusCommands } from './commands/status.js';
import { registerReport } from './commands/report.js';
import { registerExpire } from './commands/expire.js';
import { registerSchedule } from './commands/schedule.js';
import { registerDemo } from './commands/demo.js';
import { ExitCode, reportFatal } from './exit.js';
import { packageJson } from './package-info.js';

export function buildProgram(): Command {
  const program = new Command('sweeper')
    .description('Reconciles Stripe charges against local idempotency claims and payment rows.')
    .version(packageJson().version, '-V, --version', 'print the version and exit')
    .showHelpAfterError()
    .exitOverride()
    .addHelpText(
      'after',
      `
Configuration is read from the environment (DATABASE_URL, STRIPE_API_KEY, …); see README.
Exit codes: 0 reconciled, 1 run failed, 3 unreconciled findings open, 64 bad usage or
configuration, 75 another run holds the lock.

Examples:
  sweeper demo
  sweeper migrate
  sweeper run --json
  sweeper backfill --from 2026-11-01 --to 2026-11-08
  sweeper status`,
    );
  registerMigrate(program);
  registerSweepCommands(program);
  registerStatusCommands(program);
  registerReport(program);
  registerExpire(program);
  registerSchedule(program);
  registerDemo(program);
  return program;
}

// A reader that goes away (`sweeper report | head`) must not crash the command
// before it has cleaned up; what it would still print has nowhere to go.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
});

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return process.exitCode === undefined ? ExitCode.reconciled : Number(process.exitCode);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; commander already printed usage errors.
      return error.exitCode === 0 ? 0 : ExitCode.usage;
    }
    return reportFatal(error);
  }
}

const code = await main(process.argv);
// Exit explicitly once stdout is flushed: a Stripe request abandoned by a shutdown
// (or a keep-alive socket) must not hold the process open past its answer.
process.stdout.write('', () => process.exit(code));
