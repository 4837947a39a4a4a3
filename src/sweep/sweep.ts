import { randomBytes } from 'node:crypto';
import { checkout, inTransaction, type PoolClient, type Queryable } from '../db/pool.js';
import { emptyCounts } from './categories.js';
import { lockAccounts, type SweepLock } from './lock.js';
import {
  countOpenFindings,
  finishRun,
  findResumableBackfill,
  insertRun,
  markAbandonedRuns,
  readWatermark,
} from './runs-store.js';
import { sweepChanges } from './changes.js';
import { recordRunChanges } from './changes-store.js';
import { DryRunOverlay } from './dry-run-overlay.js';
import { settleRefundIntents } from './refunds.js';
import { sweepSlice, type SliceContext } from './slice.js';
import { nothingVerifiedYet } from './verify.js';
import { newBrakeState } from './brake.js';
import { SlicePrefetcher } from './prefetch.js';
import type { SweepDeps, SweepOptions, SweepReport } from './types.js';
import { formatShard, scheduledWindow, slicesOf, type TimeWindow } from './window.js';
import { errorMessage } from '../errors.js';
import { ExitCode } from '../exit-codes.js';

export function newRunId(now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `run_${stamp}_${randomBytes(3).toString('hex')}`;
}

/**
 * One sweep over the given accounts: lock, then per account window → slices →
 * (ingest, diff, repair, record, checkpoint) per slice, each slice one transaction, or
 * one per part of a dense slice (slice.ts).
 */
export async function sweep(deps: SweepDeps, options: SweepOptions): Promise<SweepReport[]> {
  const lock = await lockAccounts(deps.pool, options.accounts, {
    mode: options.mode,
    waitMs: options.lockWaitMs,
    signal: options.signal,
    onWait: (account) =>
      deps.logger.info(
        { account, wait_ms: options.lockWaitMs },
        'another sweep holds the account; waiting for it (--wait)',
      ),
  });
  // A dry run of several accounts is one transaction, rolled back at the end, with one
  // overlay: each account is judged on what the accounts before it would have written,
  // as the real run (accounts one after another, in this order) would judge it.
  let dry: DryRun | null = null;
  try {
    if (options.dryRun) dry = await beginDryRun(deps);
    const reports: SweepReport[] = [];
    const failures: Error[] = [];
    for (const account of lock.skipped) {
      deps.logger.info(
        { account, mode: options.mode },
        'skipped: backfill in progress (it holds or waits for the account); the next run sweeps it',
      );
      deps.onSkipped?.(account);
    }
    for (const [i, account] of lock.accounts.entries()) {
      if (options.signal?.aborted) break;
      lock.assertHeld();
      try {
        reports.push(await sweepAccount(deps, options, account, lock, dry));
      } catch (error) {
        lock.assertHeld(); // a lost lock stops everything, at once
        // One account failing (its Stripe key lacks access, say) must not hide the
        // others' committed results: record it and go on; the whole sweep fails at the end.
        const failure = error instanceof Error ? error : new Error(String(error));
        failures.push(failure);
        reports.push(failedReport(options, account, failure));
        if (dry?.broken) {
          // The dry run's one transaction (or its connection) is gone: the accounts after
          // this one cannot be judged on what it would have written. Say so for each.
          const lost = new Error(
            `not judged: the dry run's database transaction broke while judging ${account} (${failure.message}); dry-run it again`,
          );
          for (const rest of lock.accounts.slice(i + 1)) reports.push(failedReport(options, rest, lost));
          break;
        }
      }
    }
    if (failures.length > 0) throw new SweepFailedError(failures[0]!.message, reports);
    return reports;
  } finally {
    if (dry) {
      const rolledBack = await dry.client.query('ROLLBACK').then(
        () => true,
        () => false,
      );
      dry.client.release(!rolledBack); // a connection that cannot roll back is not given to anyone else
    }
    await lock.release();
  }
}

/** A dry run's one connection, in its one transaction, and what its repairs would have written. */
interface DryRun {
  client: PoolClient;
  overlay: DryRunOverlay;
  /** A savepoint could not be taken or rolled back to: the transaction (or its connection) is gone. */
  broken: boolean;
}

async function beginDryRun(deps: SweepDeps): Promise<DryRun> {
  const client = await checkout(deps.pool);
  try {
    await client.query('BEGIN');
    // The dry run's one transaction stays open while each slice lists Stripe: the
    // session's idle-in-transaction limit (SWEEPER_DB_*) must not end it midway.
    await client.query('SET LOCAL idle_in_transaction_session_timeout = 0');
  } catch (error) {
    client.release(true);
    throw error;
  }
  return { client, overlay: new DryRunOverlay(), broken: false };
}

/**
 * A dry run's batch: in a savepoint, so a batch that fails leaves what the batches before
 * it wrote, as a real run's failed transaction leaves the committed ones, and the
 * transaction goes on for the next account.
 */
async function inDrySavepoint<T>(dry: DryRun, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const { client } = dry;
  await client.query('SAVEPOINT dry_run_transaction').catch((error: unknown) => {
    dry.broken = true;
    throw error;
  });
  try {
    const result = await fn(client);
    await client.query('RELEASE SAVEPOINT dry_run_transaction');
    return result;
  } catch (error) {
    // The batch's own error is the one to report; one that cannot be rolled back to
    // leaves the transaction broken for the accounts after this one (sweep()).
    await client.query('ROLLBACK TO SAVEPOINT dry_run_transaction; RELEASE SAVEPOINT dry_run_transaction').catch(() => {
      dry.broken = true;
    });
    throw error;
  }
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

function failedReport(options: SweepOptions, account: string, error: Error): SweepReport {
  const runId = (error as { runId?: string }).runId ?? '';
  return { ...emptyReport(options, account, runId), status: 'failed', error: error.message };
}

function emptyReport(options: SweepOptions, account: string, runId: string): SweepReport {
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

async function sweepAccount(
  deps: SweepDeps,
  options: SweepOptions,
  account: string,
  lock: SweepLock,
  dryRun: DryRun | null,
): Promise<SweepReport> {
  const started = deps.clock();
  const t0 = Date.now();
  // Shards split the accounts, so each account's watermark is its own whatever the
  // shard count: re-sharding must not restart anyone from scratch. The shard is kept
  // on the run for the record (recon_watermarks.shard is always '': runs-store.ts).
  const shard = formatShard(options.shard);
  const runId = newRunId(started);
  const log = deps.logger.child({ run_id: runId, account, mode: options.mode, dry_run: options.dryRun });
  const report = emptyReport(options, account, runId);

  if (!options.dryRun) {
    const abandoned = await markAbandonedRuns(deps.pool, account, started);
    if (abandoned > 0) log.warn({ abandoned }, 'marked runs left behind by a dead process as interrupted');
  }

  const window = await windowFor(deps, options, account, started);
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
  const slices = slicesOf({ from: window.start, to: window.full.to }, options.sliceMs);
  const watermarkHold = { at: null as Date | null };
  // A real run commits slice by slice. A dry run keeps one transaction (for all its
  // accounts) that it rolls back at the end, so later slices see the charges and findings
  // earlier ones wrote; each slice's repairs are undone at once and laid over later
  // slices by the overlay (see judgeBatch).
  const inTx: SliceContext['inTransaction'] = dryRun
    ? (fn) => inDrySavepoint(dryRun, fn)
    : (fn) => inTransaction(deps.pool, fn);
  // The run's own statements: a dry run's in a savepoint too (one failing must not abort
  // the transaction the accounts after this one are judged in), a real run's on the pool.
  const onRun = <T>(fn: (db: Queryable) => Promise<T>): Promise<T> => (dryRun ? inTx(fn) : fn(deps.pool));
  const shared = {
    run,
    report,
    log,
    readUntil: started,
    inTransaction: inTx,
    countedDeferred: new Set<string>(),
    countedMalformed: new Set<string>(),
    repairedCharges: new Set<string>(),
    lock,
    watermarkHold,
    verified: nothingVerifiedYet(),
    overlay: dryRun?.overlay ?? null,
    brake: newBrakeState(),
  };
  const settleRefunds = async () => {
    if (dryRun) return;
    const settled = await settleRefundIntents({
      pool: deps.pool,
      evidence: deps.evidence,
      account,
      runId,
      clock: deps.clock,
      log,
      signal: options.signal,
      faultPoint: deps.faultPoint,
    });
    report.repaired.duplicate_charge += settled.repairedFindings;
  };
  // Slices are listed ahead of the judgement (a dry run's too: it must see what a real run sees).
  const prefetcher = new SlicePrefetcher(
    { listCharges: deps.listCharges, clock: deps.clock, log, ...(deps.pace ? { pace: deps.pace } : {}) },
    account,
    slices,
    { leaseMs: options.leaseMs, readUntil: started },
    options.signal,
  );
  try {
    await onRun((db) => insertRun(db, run));
    log.info({ window: report.window, slices: slices.length, start: window.start.toISOString() }, 'sweep started');
    const progress = (phase: 'slices' | 'changes', slicesDone: number) =>
      deps.onProgress?.({
        runId,
        mode: options.mode,
        account,
        window: window.full,
        start: window.start,
        resumedFrom: window.resumedFrom,
        phase,
        slicesDone,
        slicesTotal: slices.length,
        chargesScanned: report.charges_scanned,
      });
    progress('slices', 0);
    // Refunds an earlier run recorded but did not finish (a crash, Stripe down): settled first.
    await settleRefunds();
    for (const [index, slice] of slices.entries()) {
      if (options.signal?.aborted) {
        report.status = 'interrupted';
        break;
      }
      lock.assertHeld();
      const listed = await prefetcher.take(index);
      const { refundIntents, complete } = await sweepSlice(deps, options, { ...shared, slice, index }, listed);
      if (refundIntents > 0) await settleRefunds();
      if (!complete) {
        // Stopped between two parts of a dense slice: its committed parts stand.
        report.status = 'interrupted';
        break;
      }
      deps.onSlice?.(index + 1, slices.length);
      progress('slices', index + 1);
    }
    if (report.status !== 'interrupted' && !options.signal?.aborted) {
      // Changes to charges whatever their age: events since the cursor, and the periodic deep re-read.
      if (options.mode === 'run') progress('changes', slices.length);
      const changes = await sweepChanges(deps, options, shared);
      if (changes) {
        report.changes = changes;
        if (!dryRun) await recordRunChanges(deps.pool, runId, changes);
        await settleRefunds();
      }
    }
    report.unreconciled = await onRun((db) => countOpenFindings(db, account));
    if (!dryRun)
      await finishRun(deps.pool, runId, {
        status: report.status,
        now: deps.clock(),
        unreconciled: report.unreconciled,
      });
  } catch (error) {
    if (dryRun) throw error;
    if (options.signal?.aborted) {
      // Asked to stop mid-slice: that slice rolled back; the committed ones stand.
      report.status = 'interrupted';
      report.unreconciled = await countOpenFindings(deps.pool, account);
      await finishRun(deps.pool, runId, {
        status: 'interrupted',
        now: deps.clock(),
        unreconciled: report.unreconciled,
      });
      report.duration_ms = Date.now() - t0;
      log.warn('sweep interrupted; the next run resumes from the last committed slice');
      return report;
    }
    log.error({ err: { message: errorMessage(error) } }, 'sweep failed; the slice in progress was rolled back');
    await finishRun(deps.pool, runId, { status: 'failed', now: deps.clock(), error: errorMessage(error) }).catch(
      () => undefined,
    );
    if (error instanceof Error) Object.assign(error, { runId });
    throw error;
  } finally {
    prefetcher.close();
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

async function windowFor(
  deps: SweepDeps,
  options: SweepOptions,
  account: string,
  now: Date,
): Promise<{ full: TimeWindow; start: Date; resumedFrom?: string } | null> {
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
