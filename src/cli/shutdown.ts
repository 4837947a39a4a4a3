import { formatDuration } from '../time/duration.js';
import { ExitCode, writeErrorLine } from './exit.js';

/**
 * SIGTERM/SIGINT handling for long commands. The first signal aborts: the sweep
 * stops listing, lets the slice in progress commit or roll back, records the run as
 * interrupted and releases its lock. If that takes longer than the grace period
 * the process exits 1 anyway; PostgreSQL rolls back the open transaction and frees
 * the lock when the connection drops. A second signal exits at once.
 *
 * With `runDeadlineMs` (SWEEPER_RUN_DEADLINE), reaching the deadline is the first
 * signal: the run stops exactly as on SIGTERM, before the scheduler (the CronJob's
 * activeDeadlineSeconds) kills it without a word.
 */
/** What an operator does after a stop that did not finish the run: nothing, or run it again. */
const RESUME = 'committed slices stand, and the next run (or the same backfill again) resumes from the last one';

export function installShutdown(graceMs: number, runDeadlineMs?: number): AbortSignal {
  const controller = new AbortController();
  const stop = (reason: string, announce: string) => {
    controller.abort(new Error(reason));
    writeErrorLine(`${announce}; finishing the current slice (at most ${Math.round(graceMs / 1000)}s)`);
    setTimeout(() => {
      writeErrorLine(`grace period over, exiting; the open slice rolls back: ${RESUME}`);
      process.exit(ExitCode.failed);
    }, graceMs).unref();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      writeErrorLine(`${signal} again, exiting now; the open slice rolls back: ${RESUME}`);
      process.exit(ExitCode.failed);
    }
    stop(`${signal} received`, `${signal} received`);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  if (runDeadlineMs !== undefined) {
    const limit = formatDuration(runDeadlineMs);
    setTimeout(() => {
      if (controller.signal.aborted) return;
      stop(
        `the run deadline SWEEPER_RUN_DEADLINE (${limit}) was reached`,
        `the run deadline SWEEPER_RUN_DEADLINE (${limit}) was reached: stopping as on SIGTERM; the next run resumes from the last committed slice`,
      );
    }, runDeadlineMs).unref();
  }
  return controller.signal;
}
