import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/log.js';
import { startScheduler, withoutOverlap } from '../../src/schedule/scheduler.js';

function logLines() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const l of chunk.toString().trim().split('\n')) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: createLogger({ destination: stream }), lines };
}

function gate() {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe('withoutOverlap', () => {
  it('skips and logs a tick that arrives while the previous run is still going', async () => {
    const { logger, lines } = logLines();
    const g = gate();
    let runs = 0;
    const job = withoutOverlap(
      'sweep',
      async () => {
        runs += 1;
        await g.promise;
      },
      logger,
    );
    const first = job.tick();
    await job.tick(); // overlapping: returns at once
    await job.tick();
    expect(runs).toBe(1);
    g.open();
    await first;
    await job.tick(); // the previous one finished: this one runs
    expect(runs).toBe(2);
    expect(lines.filter((l) => l.msg === 'previous run still going; this tick is skipped')).toHaveLength(2);
  });

  it('a failing run is logged and does not stop later ticks', async () => {
    const { logger, lines } = logLines();
    let runs = 0;
    const job = withoutOverlap(
      'sweep',
      async () => {
        runs += 1;
        throw new Error('db down');
      },
      logger,
    );
    await job.tick();
    await job.tick();
    expect(runs).toBe(2);
    expect(lines.filter((l) => l.msg === 'scheduled job failed')).toHaveLength(2);
  });
});

describe('startScheduler', () => {
  it('with expiry off (the runtime role cannot drop partitions) schedules only the sweep', async () => {
    const { logger } = logLines();
    const scheduled: string[] = [];
    const scheduler = startScheduler({
      cron: '*/5 * * * *',
      expireCron: '17 3 * * *',
      logger,
      sweepOnce: async () => undefined,
      expireOnce: null,
      schedule: (expr) => {
        scheduled.push(expr);
        return { stop: () => undefined };
      },
    });
    expect(scheduled).toEqual(['*/5 * * * *']);
    await scheduler.stop();
  });

  it('schedules the sweep and the daily expiry, and stop() waits for the run in progress', async () => {
    const { logger } = logLines();
    const scheduled: Array<{ expr: string; fn: () => Promise<void>; stopped: boolean; tz?: string }> = [];
    const g = gate();
    let finished = false;
    const scheduler = startScheduler({
      cron: '*/5 * * * *',
      expireCron: '17 3 * * *',
      timezone: 'UTC',
      logger,
      sweepOnce: async () => {
        await g.promise;
        finished = true;
      },
      expireOnce: async () => undefined,
      schedule: (expr, fn, opts) => {
        const task = { expr, fn, stopped: false, tz: opts.timezone };
        scheduled.push(task);
        return { stop: () => (task.stopped = true) };
      },
    });
    expect(scheduled.map((s) => [s.expr, s.tz])).toEqual([
      ['*/5 * * * *', 'UTC'],
      ['17 3 * * *', 'UTC'],
    ]);
    void scheduled[0]!.fn();
    const stopping = scheduler.stop();
    expect(scheduled.every((s) => s.stopped)).toBe(true);
    expect(finished).toBe(false);
    g.open();
    await stopping;
    expect(finished).toBe(true);
  });
});
