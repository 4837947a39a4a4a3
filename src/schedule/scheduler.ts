import cron from 'node-cron';
import { forOperator, type Logger } from '../log.js';
import { errorMessage } from '../errors.js';

export interface SchedulerOptions {
  /** When sweeps run, e.g. every 15 minutes: `*\/15 * * * *`. */
  cron: string;
  /** When expiry runs: once a day. */
  expireCron: string;
  timezone?: string;
  sweepOnce: () => Promise<unknown>;
  /** null: this process does not expire (it runs without the schema owner's rights). */
  expireOnce: (() => Promise<unknown>) | null;
  logger: Logger;
  /** node-cron's `schedule`, replaceable in tests so ticks need no waiting. */
  schedule?: (expression: string, fn: () => Promise<void>, options: { timezone?: string }) => { stop(): unknown };
}

export interface RunningScheduler {
  /** Stops ticking and waits for the job in progress, if any. */
  stop(): Promise<void>;
}

/**
 * A job that never runs twice at once: a tick that arrives while the previous one
 * is still running is skipped and logged, never queued (a queue of sweeps behind a
 * slow one would only pile up).
 */
export function withoutOverlap(name: string, job: () => Promise<unknown>, logger: Logger) {
  let running: Promise<void> | null = null;
  const tick = async (): Promise<void> => {
    if (running) {
      logger.warn({ job: name }, 'previous run still going; this tick is skipped');
      return;
    }
    running = (async () => {
      try {
        await job();
      } catch (error) {
        logger.error({ job: name, err: { message: errorMessage(error) } }, 'scheduled job failed');
      }
    })();
    try {
      await running;
    } finally {
      running = null;
    }
  };
  return { tick, idle: () => running ?? Promise.resolve() };
}

export function startScheduler(options: SchedulerOptions): RunningScheduler {
  const schedule = options.schedule ?? ((expr, fn, opts) => cron.schedule(expr, fn, opts));
  const sweepJob = withoutOverlap('sweep', options.sweepOnce, options.logger);
  const expireJob = options.expireOnce ? withoutOverlap('expire', options.expireOnce, options.logger) : null;
  const tz = options.timezone ? { timezone: options.timezone } : {};
  const tasks = [schedule(options.cron, sweepJob.tick, tz)];
  if (expireJob) tasks.push(schedule(options.expireCron, expireJob.tick, tz));
  options.logger.info(
    forOperator({
      cron: options.cron,
      expire_cron: expireJob ? options.expireCron : null,
      timezone: options.timezone ?? 'local',
    }),
    'scheduler started',
  );
  return {
    async stop() {
      for (const task of tasks) task.stop();
      await Promise.all([sweepJob.idle(), expireJob?.idle()]);
    },
  };
}

export function isValidCron(expression: string): boolean {
  return cron.validate(expression);
}
