import { afterEach, describe, expect, it, vi } from 'vitest';
import { DURATION_BOUNDS, loadConfig } from '../../src/config.js';
import { createProgressReporter } from '../../src/cli/progress.js';
import {
  formatClock,
  progressFields,
  progressFigures,
  progressLine,
  progressLineWithin,
  progressMessage,
} from '../../src/cli/progress-format.js';
import { createLogger } from '../../src/log.js';
import type { SweepProgress } from '../../src/sweep/types.js';

const start = new Date('2026-11-01T00:00:00Z');
function progress(over: Partial<SweepProgress> = {}): SweepProgress {
  return {
    runId: 'run_1',
    mode: 'backfill',
    account: 'platform',
    window: { from: start, to: new Date('2026-11-02T00:00:00Z') },
    start,
    phase: 'slices',
    slicesDone: 6,
    slicesTotal: 24,
    chargesScanned: 12_000,
    ...over,
  };
}

describe('progress figures', () => {
  it('percent of slices, charges per second, and an ETA from the time per slice so far', () => {
    const f = progressFigures(progress(), 60_000);
    expect(f).toMatchObject({ percent: 25, charges: 12_000, ratePerSecond: 200, etaMs: 180_000, elapsedMs: 60_000 });
    expect(progressLine(f)).toBe(
      'backfill platform [█████░░░░░░░░░░░░░░░]  25%  6/24 slices  12,000 charges  200/s  ETA 3m 00s  elapsed 1m 00s',
    );
    expect(progressMessage(f)).toBe(
      'progress: backfill platform 25%  6/24 slices  12,000 charges  200/s  ETA 3m 00s  elapsed 1m 00s',
    );
    expect(progressFields(f)).toEqual({
      event: 'progress',
      account: 'platform',
      mode: 'backfill',
      run_id: 'run_1',
      phase: 'slices',
      slices_done: 6,
      slices_total: 24,
      percent: 25,
      charges_scanned: 12_000,
      rate_per_second: 200,
      eta_seconds: 180,
      elapsed_seconds: 60,
    });
  });

  it('no ETA before the first slice, none while the late changes are read, 0 once every slice is done', () => {
    expect(progressFigures(progress({ slicesDone: 0, chargesScanned: 0 }), 500)).toMatchObject({
      etaMs: null,
      ratePerSecond: null,
      percent: 0,
    });
    expect(progressLine(progressFigures(progress({ slicesDone: 0 }), 500))).toContain('ETA –');
    const changes = progressFigures(progress({ phase: 'changes', slicesDone: 24 }), 90_000);
    expect(changes).toMatchObject({ etaMs: null, percent: 100 });
    expect(progressMessage(changes)).toContain('slices done, reading late changes (events)');
    expect(progressFigures(progress({ slicesDone: 24 }), 90_000).etaMs).toBe(0);
    expect(progressFigures(progress({ slicesDone: 0, slicesTotal: 0 }), 90_000).percent).toBe(100);
  });

  it('names the account’s place when a run sweeps several', () => {
    expect(progressLine(progressFigures(progress(), 1000, '2/3'))).toMatch(/^backfill platform \(account 2\/3\) \[/);
  });

  it('clock times: seconds, then minutes and seconds, then hours and minutes', () => {
    expect([formatClock(0), formatClock(45_400), formatClock(185_000), formatClock(7_620_000)]).toEqual([
      '0s',
      '45s',
      '3m 05s',
      '2h 07m',
    ]);
  });
});

describe('the terminal line in a narrow terminal', () => {
  const cases: Array<[string, ReturnType<typeof progressFigures>]> = [
    ['the platform, an hour in', progressFigures(progress(), 3_600_000)],
    [
      'a connected account of many, millions of charges',
      progressFigures(
        progress({
          account: 'acct_1Nv0FGQ9RKHgCVdK',
          slicesDone: 1234,
          slicesTotal: 10_000,
          chargesScanned: 1_234_567,
        }),
        3_700_000,
        '12/40',
      ),
    ],
  ];

  it.each(cases)('keeps the rate and the ETA within 80 columns: %s', (_name, f) => {
    expect([...progressLine(f)].length).toBeGreaterThanOrEqual(80); // the whole line would be cut
    const line = progressLineWithin(f, 80);
    expect([...line].length).toBeLessThan(80); // one column short: the line never wraps
    expect(line).toContain(`${f.ratePerSecond?.toLocaleString('en-US')}/s`);
    expect(line).toContain(`ETA ${formatClock(f.etaMs ?? 0)}`);
    expect(line).toContain(`${f.percent}%`);
  });

  it('drops the elapsed time first, then the bar, then the words', () => {
    const f = progressFigures(progress(), 60_000);
    expect(progressLineWithin(f, 100)).toBe(
      'backfill platform [█████░░░░░░░░░░░░░░░]  25%  6/24 slices  12,000 charges  200/s  ETA 3m 00s',
    );
    expect(progressLineWithin(f, 80)).toBe('backfill platform  25%  6/24 slices  12,000 charges  200/s  ETA 3m 00s');
    expect(progressLineWithin(f, 60)).toBe('backfill platform  25%  6/24  12,000  200/s  ETA 3m 00s');
  });

  it('is the whole line when the terminal is wide enough, or its width unknown', () => {
    const f = progressFigures(progress(), 60_000);
    expect(progressLineWithin(f, 200)).toBe(progressLine(f));
    expect(progressLineWithin(f, undefined)).toBe(progressLine(f));
  });

  it('while the late changes are read, keeps the rate and says so in 80 columns', () => {
    const line = progressLineWithin(progressFigures(progress({ phase: 'changes', slicesDone: 24 }), 90_000), 80);
    expect([...line].length).toBeLessThan(80);
    expect(line).toMatch(/133\/s {2}late changes$/);
  });
});

describe('the progress log when stderr is not a terminal', () => {
  afterEach(() => vi.useRealTimers());

  it('is timer-driven: a line every interval while a slice takes long, with no new progress from the sweep', () => {
    vi.useFakeTimers();
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({
      destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
    });
    let now = 0;
    const reporter = createProgressReporter({
      terminal: false,
      logger,
      intervalMs: 10_000,
      accounts: ['platform'],
      now: () => now,
    });
    reporter.onProgress(progress({ slicesDone: 0, chargesScanned: 0 }));
    expect(lines).toHaveLength(0); // the first line comes after one interval, not at once

    now = 35_000;
    vi.advanceTimersByTime(35_000); // one slice taking 35 s: three lines anyway
    expect(lines.map((l) => [l.event, l.slices_done, l.elapsed_seconds])).toEqual([
      ['progress', 0, 35],
      ['progress', 0, 35],
      ['progress', 0, 35],
    ]);

    reporter.onProgress(progress({ slicesDone: 1, chargesScanned: 700 }));
    now = 45_000;
    vi.advanceTimersByTime(10_000);
    expect(lines.at(-1)).toMatchObject({
      slices_done: 1,
      charges_scanned: 700,
      percent: 4,
      eta_seconds: 1035,
      msg: expect.stringMatching(/^progress: backfill platform 4%/),
    });
    expect(reporter.last('platform')).toMatchObject({ slicesDone: 1 });

    reporter.stop();
    vi.advanceTimersByTime(60_000);
    expect(lines).toHaveLength(4);
  });

  it('the interval is SWEEPER_PROGRESS_INTERVAL: 10 s by default (under the 15 s a piped backfill must keep), bounded like the other durations', () => {
    expect(DURATION_BOUNDS.SWEEPER_PROGRESS_INTERVAL).toEqual({ fallback: '10s', min: 1_000, max: 15 * 60_000 });
    expect(loadConfig({}).progressIntervalMs).toBe(10_000);
    expect(loadConfig({ SWEEPER_PROGRESS_INTERVAL: '2s' }).progressIntervalMs).toBe(2_000);
    expect(() => loadConfig({ SWEEPER_PROGRESS_INTERVAL: '500ms' })).toThrow(
      /^SWEEPER_PROGRESS_INTERVAL must be between 1s and 15m/,
    );
    expect(() => loadConfig({ SWEEPER_PROGRESS_INTERVAL: 'often' })).toThrow(
      /^SWEEPER_PROGRESS_INTERVAL must be a duration/,
    );
  });

  it('SWEEPER_LOG_FORMAT is json or pretty; SWEEPER_MAX_LAG must exceed the lag a healthy run leaves', () => {
    expect(loadConfig({ SWEEPER_LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(loadConfig({}).logFormat).toBeUndefined();
    expect(() => loadConfig({ SWEEPER_LOG_FORMAT: 'xml' })).toThrow(/^SWEEPER_LOG_FORMAT must be json or pretty/);
    expect(() => loadConfig({ SWEEPER_MAX_LAG: '10m', SWEEPER_SETTLE: '10m' })).toThrow(
      /^SWEEPER_MAX_LAG \(10m\) must be longer than SWEEPER_SETTLE \(10m\) and SWEEPER_EVENTS_LAG/,
    );
    expect(loadConfig({ SWEEPER_MAX_LAG: '11m' }).maxLagMs).toBe(11 * 60_000);
  });
});
