import type { Logger } from '../log.js';
import type { SweepProgress } from '../sweep/types.js';
import { progressFields, progressFigures, progressLineWithin, progressMessage } from './progress-format.js';
import { clearStatusLine, showStatusLine, terminalColumns } from './stderr.js';

/**
 * A sweep's progress, for a person or a log collector:
 * - stderr a terminal: one line redrawn in place (bar, slices, charges, rate, ETA),
 *   refreshed every second and at each slice; log lines are written around it.
 * - otherwise: a structured log line every `intervalMs` (SWEEPER_PROGRESS_INTERVAL),
 *   from a timer, so a slice that takes minutes still shows the run is alive.
 */
export interface ProgressReporter {
  /** Give this to the sweep (`SweepDeps.onProgress`). */
  onProgress(progress: SweepProgress): void;
  /** The last progress of each account swept so far (for the summary of an interrupted run). */
  last(account: string): SweepProgress | undefined;
  /** Stops the timers and removes the terminal line. */
  stop(): void;
}

export interface ProgressOptions {
  terminal: boolean;
  logger: Logger;
  intervalMs: number;
  /** Accounts of the run, in order: "account 2/3" when there are several. */
  accounts: readonly string[];
  now?: () => number;
}

const REDRAW_MS = 1_000;

export function createProgressReporter(options: ProgressOptions): ProgressReporter {
  const now = options.now ?? Date.now;
  const latest = new Map<string, SweepProgress>();
  const startedAt = new Map<string, number>();
  let current: SweepProgress | null = null;
  let timer: NodeJS.Timeout | null = null;

  const figures = () => {
    if (!current) return null;
    const index = options.accounts.indexOf(current.account);
    const accountOf = options.accounts.length > 1 && index >= 0 ? `${index + 1}/${options.accounts.length}` : null;
    return progressFigures(current, now() - (startedAt.get(current.account) ?? now()), accountOf);
  };
  const draw = () => {
    const f = figures();
    if (f) showStatusLine(progressLineWithin(f, terminalColumns()));
  };
  const log = () => {
    const f = figures();
    if (f) options.logger.info(progressFields(f), progressMessage(f));
  };
  const tick = options.terminal ? draw : log;

  return {
    onProgress(progress) {
      if (!startedAt.has(progress.account)) startedAt.set(progress.account, now());
      latest.set(progress.account, progress);
      current = progress;
      if (options.terminal) draw();
      // Started with the first account: it ticks whatever the slices do, until stop().
      if (!timer) {
        timer = setInterval(tick, options.terminal ? REDRAW_MS : options.intervalMs);
        timer.unref();
      }
    },
    last: (account) => latest.get(account),
    stop() {
      if (timer) clearInterval(timer);
      timer = null;
      current = null;
      if (options.terminal) clearStatusLine();
    },
  };
}
