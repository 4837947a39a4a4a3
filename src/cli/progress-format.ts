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

/** How much of the line to show: everything, or less so that the rate and the ETA still fit. */
interface Detail {
  elapsed: boolean;
  /** `6/24 slices  12,000 charges`, or `6/24  12,000` once the words do not fit. */
  words: boolean;
}

const FULL: Detail = { elapsed: true, words: true };

/** The facts after the bar, shared by the terminal line and the log message. */
function facts(f: ProgressFigures, detail: Detail = FULL): string {
  const parts = detail.words
    ? [`${f.slicesDone}/${f.slicesTotal} slices`, `${number(f.charges)} charges`]
    : [`${f.slicesDone}/${f.slicesTotal}`, number(f.charges)];
  if (f.ratePerSecond !== null) parts.push(`${number(f.ratePerSecond)}/s`);
  if (f.phase === 'changes') parts.push(detail.words ? 'slices done, reading late changes (events)' : 'late changes');
  else parts.push(f.etaMs === null ? 'ETA –' : `ETA ${formatClock(f.etaMs)}`);
  if (detail.elapsed) parts.push(`elapsed ${formatClock(f.elapsedMs)}`);
  return parts.join('  ');
}

function who(f: ProgressFigures): string {
  return `${f.mode} ${f.account}${f.accountOf ? ` (account ${f.accountOf})` : ''}`;
}

/** The one redrawn line on a terminal: `backfill platform [██████░░░░] 60%  6/10 slices  …`. */
export function progressLine(f: ProgressFigures, barWidth = 20, detail: Detail = FULL): string {
  const filled = Math.round((f.percent / 100) * barWidth);
  const bar = barWidth > 0 ? ` [${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)}]` : '';
  return `${who(f)}${bar} ${String(f.percent).padStart(3)}%  ${facts(f, detail)}`;
}

/**
 * The terminal line for a terminal `columns` wide (unknown: the whole line). A line as
 * wide as the terminal wraps and the redraw stacks up (stderr.ts `fitWidth` cuts it), so
 * the details go first, in this order: the elapsed time, half the bar, the bar, the
 * words; the rate and the ETA, what a person waits for, stay to the last.
 */
export function progressLineWithin(f: ProgressFigures, columns: number | undefined): string {
  if (!columns) return progressLine(f);
  const short = { elapsed: false, words: true };
  const candidates = [
    progressLine(f),
    progressLine(f, 20, short),
    progressLine(f, 10, short),
    progressLine(f, 0, short),
    progressLine(f, 0, { elapsed: false, words: false }),
  ];
  const figures = `${String(f.percent).padStart(3)}%  ${facts(f, { elapsed: false, words: false })}`;
  // Narrower still: the account alone (no mode, no "account 2/3"), then the figures alone.
  candidates.push(`${f.account} ${figures}`);
  return candidates.find((line) => [...line].length < columns) ?? figures;
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
