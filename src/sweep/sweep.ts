import type { RunContext } from './batch.js';
import type { SweepLock } from './lock.js';
import { countOpenFindings, findResumableBackfill, insertRun, readWatermark } from './runs-store.js';
import { sweepChanges } from './changes.js';
import type { RunWrites } from './run-mode.js';
import { sweepAccounts } from './runner.js';
import type { Prepared, PrelistedPayouts } from './quiet.js';
import { sweepSlice, type SliceContext } from './slice.js';
import { nothingVerifiedYet } from './verify.js';
import { newBrakeState } from './brake.js';
import { judgeUnstableKeys } from './unstable-keys.js';
import { emptyPayoutsReport, sweepPayouts } from './payout-step.js';
import { emptyRefundsReport, sweepRefundWindow } from './refund-step.js';
import { SlicePrefetcher } from './prefetch.js';
import type { SweepDeps, SweepOptions, SweepReport } from './types.js';
import { formatShard, scheduledWindow, type TimeWindow } from './window.js';
import { listingPlan } from './peek.js';
import { emptyReport, newRunId } from './reports.js';
import { errorMessage } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { forOperator } from '../log.js';

/**
 * One sweep over the given accounts (runner.ts: the most lagging first, a group at a
 * time, the idle ones settled together, the others concurrently); per account: lock,
 * window → slices → (ingest, diff, repair, record, checkpoint) per slice, each slice one
 * transaction, or one per part of a dense slice (slice.ts).
 */
export async function sweep(deps: SweepDeps, options: SweepOptions): Promise<SweepReport[]> {
  const { reports, failures } = await sweepAccounts(deps, options, sweepAccount);
  if (failures.length > 0) throw new SweepFailedError(failures[0]!.message, reports);
  return reports;
}

/** Some accounts failed; `reports` holds every account's report, the failed ones included. */
export class SweepFailedError extends Error {
  override readonly name = 'SweepFailedError';
  readonly exitCode = ExitCode.failed;
  constructor(
    message: string,
    readonly reports: SweepReport[],
  ) {
    super(message);
  }
}

/** One account's sweep as it goes: what every step below shares. */
interface AccountSweep {
  deps: SweepDeps;
  options: SweepOptions;
  account: string;
  writes: RunWrites;
  /** What every batch of the run shares, with the slices' watermark hold. */
  ctx: RunContext & Pick<SliceContext, 'watermarkHold'>;
  window: AccountWindow;
  slices: TimeWindow[];
  /** Set once the window's listing is planned (listWindow). */
  prefetcher: SlicePrefetcher | null;
  /** Date.now() when the account's sweep began, for duration_ms. */
  t0: number;
  /** The payouts listing the runner's group already made (quiet.ts). */
  prelisted?: PrelistedPayouts;
}

async function sweepAccount(
  deps: SweepDeps,
  options: SweepOptions,
  account: string,
  lock: SweepLock,
  writes: RunWrites,
  /** What the runner's group already read for a scheduled run (quiet.ts). */
  prepared?: Prepared,
): Promise<SweepReport> {
  const started = prepared?.started ?? deps.clock();
  const t0 = Date.now();
  // Shards split the accounts, so each account's watermark is its own whatever the
  // shard count: re-sharding must not restart anyone from scratch. The shard is kept
  // on the run for the record (recon_watermarks.shard is always '': runs-store.ts).
  const shard = formatShard(options.shard);
  const runId = newRunId(started);
  const log = deps.logger.child({ run_id: runId, account, mode: options.mode, dry_run: options.dryRun });
  const report = emptyReport(options, account, runId);

  const abandoned = await writes.markAbandonedRuns(account, started);
  if (abandoned > 0) log.warn({ abandoned }, 'marked runs left behind by a dead process as interrupted');

  const window = prepared
    ? { full: prepared.window, start: prepared.window.from }
    : await windowFor(deps, options, account, started);
  if (!window) {
    log.info('nothing settled to sweep yet');
    report.unreconciled = await countOpenFindings(deps.pool, account);
    report.duration_ms = Date.now() - t0;
    return report;
  }
  report.window = { from: window.full.from.toISOString(), to: window.full.to.toISOString() };
  if (window.resumedFrom) report.resumed_from = window.resumedFrom;

  const run = {
    id: runId,
    mode: options.mode,
    account,
    shard,
    window: window.full,
    startedAt: started,
    checkpoint: window.start,
  };
  const ctx = runContext(writes, { run, report, log, lock, readUntil: started });
  const a: AccountSweep = {
    ...{ deps, options, account, writes, ctx, window, slices: [], prefetcher: null, t0 },
    ...(prepared?.payouts ? { prelisted: prepared.payouts } : {}),
  };
  try {
    await a.writes.onRun((db) => insertRun(db, run));
    await listWindow(a, prepared?.peek);
    await startRun(a);
    await sweepSlices(a);
    const going = () => report.status !== 'interrupted' && !options.signal?.aborted;
    const refundsFailure = going() ? await sweepAppRefunds(a) : undefined;
    if (going()) await sweepLateChanges(a);
    if (going()) await judgeTenantKeys(a);
    const payoutsFailure = going() ? await sweepAccountPayouts(a) : undefined;
    // The rest of the run stands; the account fails for its refunds or payouts step (a missing permission, Stripe down).
    if (refundsFailure ?? payoutsFailure) throw refundsFailure ?? payoutsFailure;
    await finishAccountRun(a);
  } catch (error) {
    return await stoppedOrFailed(a, error);
  } finally {
    a.prefetcher?.close();
  }
  report.duration_ms = Date.now() - t0;
  if (report.status === 'interrupted')
    log.warn('sweep interrupted between slices (or parts of one); the next run resumes from here');
  else
    log.info(
      { findings: report.findings, repaired: report.repaired, unreconciled: report.unreconciled },
      'sweep finished',
    );
  return report;
}

/**
 * What every batch of the account's run shares. A real run commits slice by slice. A dry
 * run keeps one transaction (for all its accounts) that it rolls back at the end, so later
 * slices see the charges and findings earlier ones wrote; each slice's repairs are undone
 * at once and laid over later slices by the overlay (see judgeBatch).
 */
function runContext(
  writes: RunWrites,
  base: Pick<RunContext, 'run' | 'report' | 'log' | 'lock' | 'readUntil'>,
): AccountSweep['ctx'] {
  return {
    ...base,
    inTransaction: (fn) => writes.inTransaction(fn),
    countedDeferred: new Set<string>(),
    countedMalformed: new Set<string>(),
    repairedCharges: new Set<string>(),
    watermarkHold: { at: null as Date | null },
    verified: nothingVerifiedYet(),
    overlay: writes.overlay,
    writes,
    brake: newBrakeState(),
    refundsReadable: true,
  };
}

/**
 * The window's slices and their listing, ahead of the judgement (a dry run's too: it must
 * see what a real run sees): a scheduled run's window whose charges fit in one page is
 * one slice served from that page (peek.ts).
 */
async function listWindow(a: AccountSweep, peeked: Prepared['peek']): Promise<void> {
  const { deps, options, account } = a;
  const { readUntil, log } = a.ctx;
  const plan = await listingPlan(
    deps,
    options,
    account,
    { from: a.window.start, to: a.window.full.to },
    readUntil,
    peeked,
  );
  a.slices = plan.slices;
  a.prefetcher = new SlicePrefetcher(
    { listCharges: plan.listCharges, clock: deps.clock, log, ...(deps.pace ? { pace: deps.pace } : {}) },
    account,
    a.slices,
    { leaseMs: options.leaseMs, readUntil },
    options.signal,
  );
}

/** The run's first progress, and the refunds an earlier run recorded but did not finish (a crash, Stripe down). */
async function startRun(a: AccountSweep): Promise<void> {
  const { report, log } = a.ctx;
  log.info(
    forOperator({ window: report.window, slices: a.slices.length, start: a.window.start.toISOString() }),
    'sweep started',
  );
  reportProgress(a, 'slices', 0);
  await settleRefunds(a);
}

function reportProgress(a: AccountSweep, phase: 'slices' | 'changes', slicesDone: number): void {
  a.deps.onProgress?.({
    runId: a.ctx.run.id,
    mode: a.options.mode,
    account: a.account,
    window: a.window.full,
    start: a.window.start,
    resumedFrom: a.window.resumedFrom,
    phase,
    slicesDone,
    slicesTotal: a.slices.length,
    chargesScanned: a.ctx.report.charges_scanned,
  });
}

async function settleRefunds(a: AccountSweep): Promise<void> {
  const { deps, ctx } = a;
  a.ctx.report.repaired.duplicate_charge += await a.writes.settleRefunds({
    evidence: deps.evidence,
    account: a.account,
    runId: ctx.run.id,
    clock: deps.clock,
    log: ctx.log,
    signal: a.options.signal,
    faultPoint: deps.faultPoint,
  });
}

/** Slice by slice, in order; a stop asked for ends the run at the last commit. */
async function sweepSlices(a: AccountSweep): Promise<void> {
  const { deps, options, ctx, slices } = a;
  const { report, lock } = ctx;
  for (const [index, slice] of slices.entries()) {
    if (options.signal?.aborted) {
      report.status = 'interrupted';
      break;
    }
    lock.assertHeld();
    const listed = await (a.prefetcher as SlicePrefetcher).take(index);
    const { refundIntents, complete } = await sweepSlice(deps, options, { ...ctx, slice, index }, listed);
    if (refundIntents > 0) await settleRefunds(a);
    if (!complete) {
      // Stopped between two parts of a dense slice: its committed parts stand.
      report.status = 'interrupted';
      break;
    }
    deps.onSlice?.(index + 1, slices.length);
    reportProgress(a, 'slices', index + 1);
  }
}

/** Changes to charges whatever their age: events since the cursor, and the periodic deep re-read. */
async function sweepLateChanges(a: AccountSweep): Promise<void> {
  const { report } = a.ctx;
  if (a.options.mode === 'run') reportProgress(a, 'changes', a.slices.length);
  const changes = await sweepChanges(a.deps, a.options, a.ctx);
  if (changes) {
    report.changes = changes;
    await a.writes.recordChanges(a.ctx.run.id, changes);
    await settleRefunds(a);
  }
}

/**
 * Refunds the application made, over the run's window (refund-step.ts). A failure here
 * (a key without Refunds read, Stripe down) is logged and held: the rest of the run goes
 * on, and the account fails at the end with it.
 */
async function sweepAppRefunds(a: AccountSweep): Promise<Error | undefined> {
  const { ctx } = a;
  try {
    // The whole window, a resumed backfill's too: the refunds step ran after the slices, so the run that stopped did not judge them.
    await sweepRefundWindow(a.deps, a.options, ctx, a.window.full);
    return undefined;
  } catch (error) {
    if (a.options.signal?.aborted || a.writes.broken) throw error;
    const failure = error instanceof Error ? error : new Error(String(error));
    ctx.refundsReadable = false;
    (ctx.report.refunds ??= emptyRefundsReport()).error = failure.message;
    ctx.log.error({ err: { message: failure.message } }, 'the refunds step failed; the rest of the run goes on');
    return failure;
  }
}

/**
 * Payouts and fees (payout-step.ts), after everything else wrote the account's payment rows.
 * A failure here (a key without Payouts read or Balance read, Stripe down) is logged and
 * held, as the refunds step's: the account fails at the end with it.
 */
async function sweepAccountPayouts(a: AccountSweep): Promise<Error | undefined> {
  const { ctx } = a;
  try {
    await sweepPayouts(a.deps, a.options, ctx, a.prelisted);
    return undefined;
  } catch (error) {
    if (a.options.signal?.aborted || a.writes.broken) throw error;
    const failure = error instanceof Error ? error : new Error(String(error));
    (ctx.report.payouts ??= emptyPayoutsReport()).error = failure.message;
    ctx.log.error({ err: { message: failure.message } }, 'the payouts step failed; the rest of the run goes on');
    return failure;
  }
}

/** From symptom to cause: tenants whose orders were paid twice and whose keys are never retried. */
async function judgeTenantKeys(a: AccountSweep): Promise<void> {
  const { run, report } = a.ctx;
  const { recorded } = await a.writes.onRun((db) =>
    judgeUnstableKeys(db, {
      account: a.account,
      runId: run.id,
      now: a.deps.clock(),
      lookbackMs: a.options.duplicateLookbackMs,
    }),
  );
  report.findings.unstable_keys += recorded.filter((r) => r.firstThisRun).length;
}

async function finishAccountRun(a: AccountSweep): Promise<void> {
  const { report, run } = a.ctx;
  report.unreconciled = await a.writes.onRun((db) => countOpenFindings(db, a.account));
  await a.writes.finishRun(run.id, { status: report.status, now: a.deps.clock(), unreconciled: report.unreconciled });
}

/**
 * The account's sweep threw. Asked to stop mid-slice: that slice rolled back, the
 * committed ones stand, and the run is recorded interrupted. Anything else fails the
 * account (recorded failed, the run id on the error). A dry run records neither.
 */
async function stoppedOrFailed(a: AccountSweep, error: unknown): Promise<SweepReport> {
  const { deps, options, account, ctx } = a;
  const { report, log, run } = ctx;
  if (!a.writes.recordsOutcome) throw error;
  if (options.signal?.aborted) {
    report.status = 'interrupted';
    report.unreconciled = await countOpenFindings(deps.pool, account);
    await a.writes.finishRun(run.id, { status: 'interrupted', now: deps.clock(), unreconciled: report.unreconciled });
    report.duration_ms = Date.now() - a.t0;
    log.warn('sweep interrupted; the next run resumes from the last committed slice');
    return report;
  }
  log.error({ err: { message: errorMessage(error) } }, 'sweep failed; the slice in progress was rolled back');
  await a.writes
    .finishRun(run.id, { status: 'failed', now: deps.clock(), error: errorMessage(error) })
    .catch(() => undefined);
  if (error instanceof Error) Object.assign(error, { runId: run.id });
  throw error;
}

interface AccountWindow {
  full: TimeWindow;
  start: Date;
  resumedFrom?: string;
}

async function windowFor(
  deps: SweepDeps,
  options: SweepOptions,
  account: string,
  now: Date,
): Promise<AccountWindow | null> {
  if (options.mode === 'backfill') {
    const full = options.window as TimeWindow;
    if (options.resume) {
      const previous = await findResumableBackfill(deps.pool, account, full);
      if (previous && previous.checkpoint < full.to) {
        return { full, start: previous.checkpoint, resumedFrom: previous.id };
      }
    }
    return { full, start: full.from };
  }
  const full = scheduledWindow({
    watermark: await readWatermark(deps.pool, account),
    now,
    overlapMs: options.overlapMs,
    settleMs: options.settleMs,
    firstRunLookbackMs: options.firstRunLookbackMs,
  });
  return full ? { full, start: full.from } : null;
}

export * from './types.js';
