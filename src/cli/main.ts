import { Command, CommanderError } from 'commander';
import { registerMigrate } from './commands/migrate.js';
import { registerSweepCommands } from './commands/sweep.js';
import { registerStatusCommands } from './commands/status.js';
import { registerReport } from './commands/report.js';
import { registerExpire } from './commands/expire.js';
import { registerSchedule } from './commands/schedule.js';
import { registerDemo } from './commands/demo.js';
import { registerImportClaims } from './commands/import-claims.js';
import { registerServe } from './commands/serve.js';
import { registerPlanCommands } from './commands/plans.js';
import { ExitCode, reportFatal, writeErrorLine } from './exit.js';
import { packageJson } from './package-info.js';

export function buildProgram(): Command {
  const program = new Command('sweeper')
    .description('Reconciles Stripe charges against local idempotency claims and payment rows.')
    .version(packageJson().version, '-V, --version', 'print the version and exit')
    .exitOverride()
    .addHelpText(
      'after',
      `
Configuration is read from the environment (DATABASE_URL, STRIPE_API_KEY, …); see README.
Exit codes: 0 reconciled, 1 run failed, 3 unreconciled findings open, 64 bad usage or
configuration, 65 not a valid plan (apply, approve), 75 another run holds the lock,
77 a plan's author approving it.

Examples:
  sweeper demo
  sweeper migrate
  sweeper run --json
  sweeper backfill --from 2026-11-01 --to 2026-11-08
  sweeper run --plan plan.json && sweeper apply plan.json
  sweeper status`,
    );
  registerMigrate(program);
  registerSweepCommands(program);
  registerPlanCommands(program);
  registerStatusCommands(program);
  registerReport(program);
  registerExpire(program);
  registerSchedule(program);
  registerImportClaims(program);
  registerServe(program);
  registerDemo(program);
  // A subcommand's options are its own (`report payouts --format json`), not its parent's.
  program.enablePositionalOptions();
  for (const command of [program, ...program.commands])
    usageErrorsAsOneLine(command, command === program ? 'sweeper --help' : `sweeper ${command.name()} --help`);
  for (const parent of program.commands)
    for (const command of parent.commands)
      usageErrorsAsOneLine(command, `sweeper ${parent.name()} ${command.name()} --help`);
  return program;
}

/**
 * Commander's usage errors ("error: unknown option '--x'") end like every other
 * failure: one `sweeper: …` line, here with where the usage is (exit 64).
 */
function usageErrorsAsOneLine(command: Command, help: string): void {
  command.configureOutput({
    outputError: (text, write) =>
      write(
        `sweeper: ${text
          .replace(/^error: /, '')
          .replace(/\s*\n\s*/g, ' ')
          .trim()} (usage: ${help})\n`,
      ),
  });
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
      // Help and version exit 0; commander already printed usage errors (one sweeper: line).
      if (error.exitCode === 0) return ExitCode.reconciled;
      // No command at all: the help went to stderr; the last line still says what to do.
      if (error.code === 'commander.help')
        writeErrorLine('no command given: pick one of the commands above (sweeper <command> --help)');
      return ExitCode.usage;
    }
    return reportFatal(error);
  }
}

const code = await main(process.argv);
// Exit explicitly once stdout is flushed: a Stripe request abandoned by a shutdown
// (or a keep-alive socket) must not hold the process open past its answer.
process.stdout.write('', () => process.exit(code));
