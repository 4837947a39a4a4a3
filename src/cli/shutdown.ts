/**
 * SIGTERM/SIGINT handling for long commands. The first signal aborts: the sweep
 * stops listing, lets the slice in progress commit or roll back, records the run as
 * interrupted and releases its lock. If that takes longer than the grace period
 * the process exits 1 anyway; PostgreSQL rolls back the open transaction and frees
 * the lock when the connection drops. A second signal exits at once.
 */
export function installShutdown(graceMs: number): AbortSignal {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      process.stderr.write(`sweeper: ${signal} again, exiting now\n`);
      process.exit(1);
    }
    process.stderr.write(`sweeper: ${signal} received; finishing the current slice (at most ${Math.round(graceMs / 1000)}s)\n`);
    controller.abort(new Error(`${signal} received`));
    setTimeout(() => {
      process.stderr.write('sweeper: grace period over, exiting; the open slice rolls back\n');
      process.exit(1);
    }, graceMs).unref();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return controller.signal;
}
