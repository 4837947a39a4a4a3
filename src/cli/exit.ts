import { redact } from '../secrets.js';
import { terminalSafe, terminalSafeLine } from '../terminal-text.js';
import { writeStderr } from './stderr.js';
import { ExitCode } from '../exit-codes.js';

export { ExitCode } from '../exit-codes.js';

/**
 * Turns any error into one line on stderr and the documented exit code. Errors that
 * carry an `exitCode` (config, schema, lock) choose it; everything else is a failed
 * run (1). Stack traces only with SWEEPER_DEBUG=1.
 */
export function reportFatal(error: unknown): number {
  const err = error as { exitCode?: unknown; message?: string; stack?: string } | null | undefined;
  const code = typeof err?.exitCode === 'number' ? err.exitCode : ExitCode.failed;
  writeErrorLine((err?.message ?? String(error)).split('\n')[0] ?? '');
  if (process.env.SWEEPER_DEBUG === '1' && err?.stack) writeStderr(`${terminalSafe(redact(err.stack))}\n`);
  return code;
}

/**
 * Every `sweeper: …` line on stderr goes through here: secrets redacted by value,
 * control characters escaped, one line whatever the message held.
 */
export function writeErrorLine(message: string): void {
  writeStderr(`sweeper: ${terminalSafeLine(redact(message))}\n`);
}
