import { ExitCode } from './exit.js';

/**
 * What a run ends with when findings stay open. 3 (the default) tells cron and scripts
 * that a person has work; 0 suits schedulers that treat every non-zero exit as a
 * failed job (Kubernetes): there the alert sinks page for findings, and only a run
 * that failed fails the Job.
 */
export type FindingsExit = 0 | 3;

export const FINDINGS_EXIT_VARIABLE = 'SWEEPER_FINDINGS_EXIT';

export class FindingsExitError extends Error {
  override readonly name = 'FindingsExitError';
  readonly exitCode = ExitCode.usage;
}

/** `--findings-exit` wins over SWEEPER_FINDINGS_EXIT; neither set means 3. */
export function findingsExitFrom(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): FindingsExit {
  if (flag !== undefined) return parseFindingsExit(flag, '--findings-exit');
  const fromEnv = env[FINDINGS_EXIT_VARIABLE];
  if (fromEnv !== undefined && fromEnv.trim() !== '') return parseFindingsExit(fromEnv, FINDINGS_EXIT_VARIABLE);
  return ExitCode.unreconciled;
}

function parseFindingsExit(text: string, name: string): FindingsExit {
  const value = text.trim();
  if (value === '0') return ExitCode.reconciled;
  if (value === '3') return ExitCode.unreconciled;
  throw new FindingsExitError(
    `${name} must be 0 or 3 (got "${text}"): 3 exits 3 while findings are open, 0 leaves them to the alerts`,
  );
}

/** The parts of each account's result that decide the exit code. */
export interface AccountOutcome {
  status: 'succeeded' | 'interrupted' | 'failed';
  unreconciled: number;
}

export interface RunOutcome {
  accounts: readonly AccountOutcome[];
  /** The sweep failed for an account (`SweepFailedError`): its report says why. */
  sweepFailed: boolean;
  /** Charges Stripe listed without a usable id: money no finding can name. */
  unnamedCharges: number;
  /** Alert deliveries that failed: nobody may have been told, so the run failed. */
  alertsFailed: number;
  /** A signal stopped the run. */
  interrupted: boolean;
  findingsExit: FindingsExit;
}

/**
 * The exit code of `run` and `backfill` once they have results (docs/cli.md "Exit codes").
 * A failure of any kind (the sweep of an account failed or was interrupted, a charge
 * could not be named, an alert was not delivered) is 1 whatever `findingsExit` says:
 * a deployment that leaves findings to the alerts still sees failed runs fail. Open
 * findings exit with `findingsExit` (3 by default, or 0); anything else, and no account
 * to sweep at all, is 0. The other codes never reach here: bad usage or configuration
 * (64) and a lock held elsewhere (75) are errors thrown before there are results, and
 * `reportFatal` (exit.ts) turns them into their codes.
 */
export function exitCodeFor(outcome: RunOutcome): number {
  if (outcome.sweepFailed || outcome.unnamedCharges > 0) return ExitCode.failed;
  if (outcome.alertsFailed > 0 || outcome.interrupted || outcome.accounts.some((a) => a.status !== 'succeeded')) {
    return ExitCode.failed;
  }
  if (outcome.accounts.some((a) => a.unreconciled > 0)) return outcome.findingsExit;
  return ExitCode.reconciled;
}
