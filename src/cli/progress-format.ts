import type { SweepProgress } from '../sweep/types.js';

/**
 * What the progress display and the progress log line say, computed from the sweep's
 * last report of progress and the time since the account's sweep started. Pure, so
 * the wording and the arithmetic are tested without a terminal or a clock.
 */
export interface ProgressFigures {
  account: string;
  mode: string;
  runId: string;
  phase: SweepProgress['phase'];
  slicesDone: number;
  slicesTotal: number;
  /** 0..100, whole slices committed of this run's slices. */
  percent: number;
  charges: number;
  /** Charges per second since the account's sweep started; null before a second has passed. */
  ratePerSecond: number | null;
  /** From the time per committed slice; null before the first slice, and once slices are done. */
  etaMs: number | null;
  elapsedMs: number;
  /** "2/3" when the run sweeps several accounts. */
  accountOf: string | null;
}

export function progressFigures(
  progress: SweepProgress,
  elapsedMs: number,
  accountOf: string | null = null,
): ProgressFigures {
  const { slicesDone, slicesTotal } = progress;
  const percent = slicesTotal === 0 ? 100 : Math.floor((100 * slicesDone) / slicesTotal);
  return {
    account: progress.account,
    mode: progress.mode,
    runId: progress.runId,
    phase: progress.phase,
    slicesDone,
    slicesTotal,
    percent,
    charges: progress.chargesScanned,
    ratePerSecond: elapsedMs >= 1_000 ? Math.round((progress.chargesScanned * 1_000) / elapsedMs) : null,
    etaMs: etaOf(progress.phase, slicesDone, slicesTotal - slicesDone, elapsedMs),
    elapsedMs,
    accountOf,
  };
}

/** Time per committed slice so far, times the slices left; unknown before the first one. */
function etaOf(phase: SweepProgress['phase'], done: number, remaining: number, elapsedMs: number): number | null {
  if (phase !== 'slices') return null;
  if (remaining <= 0) return 0;
  return done === 0 ? null : Math.round((elapsedMs / done) * remaining);
}

/** "45s", "3m 05s", "2h 07m": an ETA is read at a glance, so two units at most. */
export function formatClock(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 3_600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  return `${Math.floor(s / 3_600)}h ${pad(Math.floor((s % 3_600) / 60))}m`;
}

const number = (n: number) => n.toLocaleString('en-US');

/** The facts after the bar, shared by the terminal line and the log message. */
function facts(f: ProgressFigures): string {
  const parts = [`${f.slicesDone}/${f.slicesTotal} slices`, `${number(f.charges)} charges`];
  if (f.ratePerSecond !== null) parts.push(`${number(f.ratePerSecond)}/s`);
  if (f.phase === 'changes') parts.push('slices done, reading late changes (events)');
  else parts.push(f.etaMs === null ? 'ETA –' : `ETA ${formatClock(f.etaMs)}`);
  parts.push(`elapsed ${formatClock(f.elapsedMs)}`);
  return parts.join('  ');
}

function who(f: ProgressFigures): string {
  return `${f.mode} ${f.account}${f.accountOf ? ` (account ${f.accountOf})` : ''}`;
}

/** The one redrawn line on a terminal: `backfill platform [██████░░░░] 60%  6/10 slices  …`. */
export function progressLine(f: ProgressFigures, barWidth = 20): string {
  const filled = Math.round((f.percent / 100) * barWidth);
  const bar = `[${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)}]`;
  return `${who(f)} ${bar} ${String(f.percent).padStart(3)}%  ${facts(f)}`;
}

/** The message of the progress log line (its fields carry the same figures). */
export function progressMessage(f: ProgressFigures): string {
  return `progress: ${who(f)} ${f.percent}%  ${facts(f)}`;
}

/** The progress log line's fields: stable names a log query can use (`event = "progress"`). */
export function progressFields(f: ProgressFigures): Record<string, unknown> {
  return {
    event: 'progress',
    account: f.account,
    mode: f.mode,
    run_id: f.runId,
    phase: f.phase,
    slices_done: f.slicesDone,
    slices_total: f.slicesTotal,
    percent: f.percent,
    charges_scanned: f.charges,
    rate_per_second: f.ratePerSecond,
    eta_seconds: f.etaMs === null ? null : Math.round(f.etaMs / 1000),
    elapsed_seconds: Math.round(f.elapsedMs / 1000),
  };
}
