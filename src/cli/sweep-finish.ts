import { createAlerter, type AlertConfig, type LagStatus } from '../alerts/index.js';
import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../log.js';
import { listOpenFindings, type OpenFindingBrief } from '../report/open-list.js';
import { redact } from '../secrets.js';
import { readCompletenessOf, type AccountCompleteness } from '../sweep/completeness.js';
import type { SweepReport } from '../sweep/types.js';
import { terminalSafe } from '../terminal-text.js';
import { writeJson } from './context.js';
import { exitCodeFor, type FindingsExit } from './exit-decision.js';
import { exitReason } from './exit-reason.js';
import { writeErrorLine } from './exit.js';
import type { ProgressReporter } from './progress.js';
import { formatReport, OPEN_LISTED } from './run-output.js';
import { errorMessage } from '../errors.js';

/**
 * Everything after the sweep itself, in this order: print each account's result
 * (with its completeness, its open findings and the next commands), tell the alert
 * sinks, publish metrics, then exit with one `sweeper: …` line saying why whenever
 * the code is not 0. The results are committed and printed before anyone is told: a
 * sink that is down costs exit code 1, never the run's findings.
 */
export interface FinishInput {
  mode: 'run' | 'backfill';
  json: boolean;
  dryRun: boolean;
  pool: Pool;
  logger: Logger;
  config: Pick<Config, 'maxLagMs' | 'deepReadDays'>;
  alertConfig: AlertConfig;
  /** The accounts this command was asked to sweep (completeness is read for each). */
  accounts: readonly string[];
  reports: SweepReport[];
  skipped: readonly string[];
  /** Connected accounts that answered 403 (access revoked): marked inactive, not swept, not a failure. */
  revoked?: readonly string[];
  /** The sweep failed for an account (`SweepFailedError`). */
  failure?: Error;
  progress: ProgressReporter;
  signal?: AbortSignal;
  findingsExit: FindingsExit;
  /** Charges Stripe listed without a usable id. */
  unnamed: number;
  publish(reports: SweepReport[], completeness: readonly AccountCompleteness[]): Promise<void>;
}

export async function finishSweep(input: FinishInput): Promise<number> {
  const { reports } = input;
  const interruptedBy = input.signal?.aborted ? reasonOf(input.signal) : null;
  const completeness = input.dryRun ? new Map<string, AccountCompleteness>() : await readAllCompleteness(input);
  await printResults(input, completeness, interruptedBy);

  const alerts = input.dryRun ? { failed: 0, firstError: undefined } : await sendAlerts(input, completeness);
  if (!input.dryRun) await input.publish(reports, [...completeness.values()]);

  const code = exitCodeFor({
    accounts: reports,
    sweepFailed: input.failure !== undefined,
    unnamedCharges: input.unnamed,
    alertsFailed: alerts.failed,
    interrupted: interruptedBy !== null,
    findingsExit: input.findingsExit,
  });
  writeLastLine(input, code, interruptedBy, alerts);
  return code;
}

/** Each account's result on stdout (JSON, or the text summary with its open findings), then the skipped ones. */
async function printResults(
  input: FinishInput,
  completeness: ReadonlyMap<string, AccountCompleteness>,
  interruptedBy: string | null,
): Promise<void> {
  const { mode, logger } = input;
  for (const report of input.reports) {
    const c = completeness.get(report.account);
    if (input.json) {
      writeJson(c ? { ...report, completeness: c } : report);
      continue;
    }
    const progress = input.progress.last(report.account);
    const open =
      input.dryRun || report.status === 'failed' ? undefined : await openFindings(input.pool, report.account, logger);
    const text = formatReport(report, {
      ...(progress ? { progress } : {}),
      interruptedBy,
      ...(open ? { open } : {}),
      ...(c ? { completeness: c } : {}),
    });
    process.stdout.write(terminalSafe(redact(text)));
  }
  for (const account of input.skipped) {
    if (input.json) writeJson({ mode, account, status: 'skipped', reason: 'backfill_in_progress' });
    else process.stdout.write(`${mode}  account ${account}  skipped: backfill in progress; the next run sweeps it\n\n`);
  }
  for (const account of input.revoked ?? []) {
    if (input.json) writeJson({ mode, account, status: 'skipped', reason: 'account_revoked' });
    else
      process.stdout.write(
        `${mode}  account ${account}  skipped: Stripe refused access (403); marked inactive until Stripe lists it again\n\n`,
      );
  }
}

/** The one `sweeper: …` line saying why, whenever the code is not 0. */
function writeLastLine(
  input: FinishInput,
  code: number,
  interruptedBy: string | null,
  alerts: { failed: number; firstError?: string | undefined },
): void {
  if (input.failure === undefined && input.unnamed > 0) {
    // Money Stripe holds that no finding can name: a person must look, whatever else happened.
    writeErrorLine(
      `${input.unnamed} charge(s) from Stripe had no usable id and could not be judged or recorded ` +
        "(logged as 'Stripe returned a charge the sweep cannot judge'); exit 1 until Stripe lists them whole",
    );
    return;
  }
  const slices = Object.fromEntries(
    input.reports.flatMap((r) => {
      const p = input.progress.last(r.account);
      return p ? [[r.account, { done: p.slicesDone, total: p.slicesTotal }]] : [];
    }),
  );
  const reason = exitReason({
    code,
    mode: input.mode,
    accounts: input.reports,
    interruptedBy,
    slices,
    alertsFailed: alerts.failed,
    ...(alerts.firstError ? { firstAlertError: alerts.firstError } : {}),
    dryRun: input.dryRun,
  });
  if (reason) writeErrorLine(reason);
}

function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'stopped';
}

/** Read after the run, every account in one statement; a failure to read it is logged and leaves it out, never hides the run's results. */
async function readAllCompleteness(input: FinishInput): Promise<Map<string, AccountCompleteness>> {
  const options = { now: new Date(), days: input.config.deepReadDays, maxLagMs: input.config.maxLagMs };
  try {
    const all = await readCompletenessOf(input.pool, input.accounts, options);
    return new Map(all.map((c) => [c.account, c]));
  } catch (error) {
    input.logger.warn(
      { accounts: input.accounts.length, error: errorMessage(error) },
      'could not read how complete reconciliation is; left out of the output',
    );
    return new Map();
  }
}

async function openFindings(
  pool: Pool,
  account: string,
  logger: Logger,
): Promise<{ total: number; first: OpenFindingBrief[] } | undefined> {
  try {
    return await listOpenFindings(pool, account, OPEN_LISTED);
  } catch (error) {
    logger.warn({ account, error: errorMessage(error) }, 'could not list the open findings');
    return undefined;
  }
}

/**
 * One alert per account. The lag alert is judged after scheduled runs only (a
 * backfill does not move the watermark, and a long one would page for its own
 * length); an account whose run failed gets only that one, since its findings were
 * not brought up to date, but a stalled account must still page.
 */
async function sendAlerts(
  input: FinishInput,
  completeness: ReadonlyMap<string, AccountCompleteness>,
): Promise<{ failed: number; firstError?: string }> {
  const alerter = createAlerter({
    pool: input.pool,
    config: input.alertConfig,
    clock: () => new Date(),
    logger: input.logger,
  });
  if (alerter.sinks.length === 0) return { failed: 0 };
  let failed = 0;
  let firstError: string | undefined;
  for (const report of input.reports) {
    const c = completeness.get(report.account);
    const lag = input.mode === 'run' && c ? lagStatusOf(c) : undefined;
    if (report.status === 'failed' && !lag) continue;
    const result = await alerter.notifyAccount({
      runId: report.run_id,
      account: report.account,
      ...(lag ? { lag } : {}),
      ...(report.status === 'failed' ? { lagOnly: true } : {}),
    });
    failed += result.failed;
    firstError ??= result.errors[0];
    for (const error of result.errors) input.logger.error({ account: report.account, error }, 'alert not delivered');
  }
  return firstError === undefined ? { failed } : { failed, firstError };
}

export function lagStatusOf(c: AccountCompleteness): LagStatus {
  return {
    lagging: c.lagging,
    watermarkLagSeconds: c.watermark_lag_seconds,
    eventsLagSeconds: c.events_lag_seconds,
    maxLagSeconds: c.max_lag_seconds,
  };
}
