import { randomBytes } from 'node:crypto';
import { emptyCounts } from './categories.js';
import type { SweepOptions, SweepReport } from './types.js';

/** `run_20261201T041500Z_3fa9c2`: the start, to the second, and three random bytes. */
export function newRunId(now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `run_${stamp}_${randomBytes(3).toString('hex')}`;
}

/** An account's report before anything was judged: no window, nothing found. */
export function emptyReport(
  options: Pick<SweepOptions, 'mode' | 'dryRun'>,
  account: string,
  runId: string,
): SweepReport {
  return {
    run_id: runId,
    mode: options.mode,
    account,
    window: null,
    dry_run: options.dryRun,
    charges_scanned: 0,
    malformed_charges: 0,
    unnamed_charges: 0,
    deferred_keys: 0,
    findings: emptyCounts(),
    repaired: emptyCounts(),
    unreconciled: 0,
    duration_ms: 0,
    status: 'succeeded',
  };
}

/** An account whose sweep failed; the run id rides on the error when the run got that far. */
export function failedReport(
  options: Pick<SweepOptions, 'mode' | 'dryRun'>,
  account: string,
  error: Error,
): SweepReport {
  const runId = (error as { runId?: string }).runId ?? '';
  return { ...emptyReport(options, account, runId), status: 'failed', error: error.message };
}
