import { randomBytes } from 'node:crypto';
import { checkout, inTransaction, type Pool, type PoolClient } from '../db/pool.js';
import { ensureDayPartitions, utcDay } from '../db/partitions.js';
import { LOCK_CLASS, LockObject } from '../db/locks.js';
import type { Logger } from '../log.js';
import type { MalformedCharge, NormalizedCharge } from '../stripe/types.js';
import { emptyCounts, type Category } from './categories.js';
import { judgeSlice, type Finding } from './classify.js';
import type { ChargeFact } from './facts.js';
import { loadSliceFacts } from './facts-sql.js';
import { closeHealedFindings, recordFindings } from './findings-store.js';
import { lockAccounts, type SweepLock } from './lock.js';
import { upsertCharges } from './mirror.js';
import { executeRepairs, isRefund, refundAfterCommit, type RefundFinding } from './repairs.js';
import {
  advanceWatermark,
  countOpenFindings,
  finishRun,
  findResumableBackfill,
  insertRun,
  markAbandonedRuns,
  readWatermark,
  recordSliceProgress,
  type RunMode,
} from './runs-store.js';
import { formatShard, scheduledWindow, slicesOf, widen, type Shard, type TimeWindow } from './window.js';

/** Pages of one account's charges created in `[from, to)`; throws if the window cannot be read completely. */
export type ChargeSource = (
  account: string,
  window: TimeWindow,
  signal?: AbortSignal,
) => AsyncIterable<{ charges: NormalizedCharge[]; malformed: MalformedCharge[] }>;

export interface SweepDeps {
  pool: Pool;
  listCharges: ChargeSource;
  clock: () => Date;
  logger: Logger;
  /** Needed only with `refundDuplicates`. */
  refund?: (charge: ChargeFact, idempotencyKey: string) => Promise<void>;
  /** Crash and race tests: called at named points (`slice:N:phase`); may kill the process. */
  faultPoint?: (name: string) => void | Promise<void>;
  onSlice?: (done: number, total: number) => void;
}

export interface SweepOptions {
  mode: RunMode;
  accounts: string[];
  shard?: Shard;
  /** Backfill only. */
  window?: TimeWindow;
  dryRun: boolean;
  settleMs: number;
  overlapMs: number;
  sliceMs: number;
  /** The longest claim lease: how far around a slice charges are read to judge it. */
  leaseMs: number;
  retentionMs: number;
  firstRunLookbackMs: number;
  refundDuplicates: boolean;
  /** Backfill: continue an unfinished backfill of the same range (default true). */
  resume: boolean;
  signal?: AbortSignal;
}

export interface SweepReport {
  run_id: string;
  mode: RunMode;
  account: string;
  window: { from: string; to: string } | null;
  dry_run: boolean;
  charges_scanned: number;
  malformed_charges: number;
  findings: Record<Category, number>;
  repaired: Record<Category, number>;
  unreconciled: number;
  duration_ms: number;
  status: 'succeeded' | 'interrupted' | 'failed';
  /** Why the account's sweep failed (status `failed`). */
  error?: string;
  resumed_from?: string;
}

/** The documented defaults (README "Configuration"), for callers that are not the CLI. */
export function sweepOptions(options: Partial<SweepOptions> & Pick<SweepOptions, 'mode' | 'accounts'>): SweepOptions {
  return {
    dryRun: false,
    settleMs: 10 * 60_000,
    overlapMs: 15 * 60_000,
    sliceMs: 3_600_000,
    leaseMs: 2 * 60_000,
    retentionMs: 7 * 86_400_000,
    firstRunLookbackMs: 86_400_000,
    refundDuplicates: false,
    resume: false,
    ...options,
  };
}

/** Each batch written to the mirror in one statement: a page or a few. */
const INGEST_BATCH = 500;

export function newRunId(now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `run_${stamp}_${randomBytes(3).toString('hex')}`;
}

/**
 * One sweep over the given accounts: lock, then per account window → slices →
 * (ingest, diff, repair, record, checkpoint) per slice, each slice one transaction.
 */
export async function sweep(deps: SweepDeps, options: SweepOptions): Promise<SweepReport[]> {
  const lock = await lockAccounts(deps.pool, options.accounts);
  try {
    const reports: SweepReport[] = [];
    const failures: Error[] = [];
    for (const account of options.accounts) {
      if (options.signal?.aborted) break;
      lock.assertHeld();
      try {
        reports.push(await sweepAccount(deps, options, account, lock));
      } catch (error) {
        lock.assertHeld(); // a lost lock stops everything, at once
        // One account failing (its Stripe key lacks access, say) must not hide the
        // others' committed results: record it and go on; the whole sweep fails at the end.
        const failure = error instanceof Error ? error : new Error(String(error));
        failures.push(failure);
        reports.push(failedReport(options, account, failure));
      }
    }
    if (failures.length > 0) throw new SweepFailedError(failures[0]!.message, reports);
    return reports;
  } finally {
    await lock.release();
  }
}

/** Some accounts failed; `reports` holds every account's report, the failed ones included. */
export class SweepFailedError extends Error {
  override readonly name = 'SweepFailedError';
  readonly exitCode = 1;
  constructor(
    message: string,
    readonly reports: SweepReport[],
  ) {
    super(message);
  }
}

function failedReport(options: SweepOptions, account: string, error: Error): SweepReport {
  return {
    run_id: (error as { runId?: string }).runId ?? '',
    mode: options.mode,
    account,
    window: null,
    dry_run: options.dryRun,
    charges_scanned: 0,
    malformed_charges: 0,
    findings: emptyCounts(),
    repaired: emptyCounts(),
    unreconciled: 0,
    duration_ms: 0,
    status: 'failed',
    error: error.message,
  };
}

async function sweepAccount(deps: SweepDeps, options: SweepOptions, account: string, lock: SweepLock): Promise<SweepReport> {
  const started = deps.clock();
  const t0 = Date.now();
  // Shards split the accounts, so each account's watermark is its own whatever the
  // shard count: re-sharding must not restart anyone from scratch. The shard is kept
  // on the run for the record.
  const shard = formatShard(options.shard);
  const watermarkShard = '';
  const runId = newRunId(started);
  const log = deps.logger.child({ run_id: runId, account, mode: options.mode, dry_run: options.dryRun });
  const report: SweepReport = {
    run_id: runId,
    mode: options.mode,
    account,
    window: null,
    dry_run: options.dryRun,
    charges_scanned: 0,
    malformed_charges: 0,
    findings: emptyCounts(),
    repaired: emptyCounts(),
    unreconciled: 0,
    duration_ms: 0,
    status: 'succeeded',
  };

  if (!options.dryRun) {
    const abandoned = await markAbandonedRuns(deps.pool, account, started);
    if (abandoned > 0) log.warn({ abandoned }, 'marked runs left behind by a dead process as interrupted');
  }

  const window = await windowFor(deps, options, account, watermarkShard, started);
  if (!window) {
    log.info('nothing settled to sweep yet');
    report.unreconciled = await countOpenFindings(deps.pool, account);
    report.duration_ms = Date.now() - t0;
    return report;
  }
  report.window = { from: window.full.from.toISOString(), to: window.full.to.toISOString() };
  if (window.resumedFrom) report.resumed_from = window.resumedFrom;

  const run = { id: runId, mode: options.mode, account, shard, watermarkShard, window: window.full, startedAt: started, checkpoint: window.start };
  const slices = slicesOf({ from: window.start, to: window.full.to }, options.sliceMs);
  const counted = new Set<string>();
  // A real run commits slice by slice. A dry run keeps one transaction that it rolls
  // back at the end, so later slices see the charges earlier ones ingested; each
  // slice's repairs and findings are undone at once (see sweepSlice).
  const dry = options.dryRun ? await checkout(deps.pool) : null;
  const inTx: SliceContext['inTransaction'] = dry ? (fn) => fn(dry) : (fn) => inTransaction(deps.pool, fn);
  try {
    if (dry) await dry.query('BEGIN');
    await insertRun(dry ?? deps.pool, run);
    log.info({ window: report.window, slices: slices.length, start: window.start.toISOString() }, 'sweep started');
    for (const [index, slice] of slices.entries()) {
      if (options.signal?.aborted) {
        report.status = 'interrupted';
        break;
      }
      lock.assertHeld();
      await sweepSlice(deps, options, { run, slice, index, report, log, readUntil: started, inTransaction: inTx, counted, lock });
      deps.onSlice?.(index + 1, slices.length);
    }
    // A dry run accumulated, slice by slice, how many open findings it would add.
    report.unreconciled += await countOpenFindings(dry ?? deps.pool, account);
    if (!dry) await finishRun(deps.pool, runId, { status: report.status, now: deps.clock(), unreconciled: report.unreconciled });
  } catch (error) {
    if (dry) throw error;
    if (options.signal?.aborted) {
      // Asked to stop mid-slice: that slice rolled back; the committed ones stand.
      report.status = 'interrupted';
      report.unreconciled = await countOpenFindings(deps.pool, account);
      await finishRun(deps.pool, runId, { status: 'interrupted', now: deps.clock(), unreconciled: report.unreconciled });
      report.duration_ms = Date.now() - t0;
      log.warn('sweep interrupted; the next run resumes from the last committed slice');
      return report;
    }
    log.error({ err: { message: (error as Error)?.message } }, 'sweep failed; the slice in progress was rolled back');
    await finishRun(deps.pool, runId, { status: 'failed', now: deps.clock(), error: (error as Error)?.message ?? String(error) }).catch(
      () => undefined,
    );
    if (error instanceof Error) Object.assign(error, { runId });
    throw error;
  } finally {
    if (dry) {
      await dry.query('ROLLBACK').catch(() => undefined);
      dry.release();
    }
  }
  report.duration_ms = Date.now() - t0;
  if (report.status === 'interrupted') log.warn('sweep interrupted between slices; the next run resumes from here');
  else log.info({ findings: report.findings, repaired: report.repaired, unreconciled: report.unreconciled }, 'sweep finished');
  return report;
}

async function windowFor(
  deps: SweepDeps,
  options: SweepOptions,
  account: string,
  shard: string,
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
    watermark: await readWatermark(deps.pool, account, shard),
    now,
    overlapMs: options.overlapMs,
    settleMs: options.settleMs,
    firstRunLookbackMs: options.firstRunLookbackMs,
  });
  return full ? { full, start: full.from } : null;
}

interface SliceContext {
  run: {
    id: string;
    mode: RunMode;
    account: string;
    shard: string;
    watermarkShard: string;
    window: TimeWindow;
    startedAt: Date;
    checkpoint: Date;
  };
  slice: TimeWindow;
  index: number;
  report: SweepReport;
  log: Logger;
  readUntil: Date;
  inTransaction: <T>(fn: (client: PoolClient) => Promise<T>) => Promise<T>;
  /** What this run has counted already, across slices. */
  counted: Set<string>;
  lock: SweepLock;
}

function once(seen: Set<string>, id: string): boolean {
  if (seen.has(id)) return false;
  seen.add(id);
  return true;
}

async function sweepSlice(deps: SweepDeps, options: SweepOptions, ctx: SliceContext): Promise<void> {
  const { run, slice, report } = ctx;
  const fault = async (phase: string) => deps.faultPoint?.(`slice:${ctx.index}:${phase}`);

  // Read Stripe before opening the transaction: no transaction waits on the network.
  const readWindow = widen(slice, options.leaseMs, ctx.readUntil);
  const fetchedAt = deps.clock();
  const charges: NormalizedCharge[] = [];
  const unreadable: MalformedCharge[] = [];
  let malformed = 0;
  let inSlice = 0;
  for await (const page of deps.listCharges(run.account, readWindow, options.signal)) {
    for (const charge of page.charges) {
      charges.push(charge);
      const at = charge.created * 1000;
      if (at >= slice.from.getTime() && at < slice.to.getTime()) inSlice += 1;
    }
    for (const bad of page.malformed) {
      malformed += 1;
      unreadable.push(bad);
      ctx.log.warn({ charge: bad.id, problem: bad.problem }, 'Stripe returned a charge the sweep cannot judge');
    }
  }
  await fault('listed');

  const refunds: RefundFinding[] = [];
  await ctx.inTransaction(async (client) => {
    // Keeps `expire` from detaching a mirror partition under this slice's inserts.
    await client.query('SELECT pg_advisory_xact_lock_shared($1, $2)', [LOCK_CLASS, LockObject.partitions]);
    // In the slice's transaction: `expire` may have dropped an old day since the run
    // began (a backfill of old ranges), and a dry run's partitions roll back with it.
    await ensureDayPartitions(client, { from: utcDay(readWindow.from), to: utcDay(readWindow.to) }, ['stripe_charges']);
    for (let i = 0; i < charges.length; i += INGEST_BATCH) {
      await upsertCharges(client, charges.slice(i, i + INGEST_BATCH), fetchedAt);
    }
    await fault('ingested');

    const now = deps.clock();
    const facts = await loadSliceFacts(client, run.account, slice);
    const judgement = judgeSlice(facts, {
      now,
      leaseMs: options.leaseMs,
      retentionStart: new Date(now.getTime() - options.retentionMs),
      refundDuplicates: options.refundDuplicates,
    });
    const findings = capClaimCreation(dedupe([...judgement.findings, ...unreadable.flatMap(unjudgeable)]));
    await fault('judged');
    // A dry run repairs and records inside a savepoint that it rolls back at once:
    // the row and advisory locks those writes took go with it, so live writers wait
    // milliseconds, not for the whole dry run; the mirror rows stay for later slices.
    const openBefore = options.dryRun ? await savepointAndCountOpen(client, run.account) : 0;
    const repairs = await executeRepairs(client, findings, { now });
    await fault('repaired');
    // A repair that lost its compare-and-swap to a live writer is no finding: the writer settles it.
    const recorded = findings.filter((f) => !f.repair || repairs.has(f) || isRefund(f));
    refunds.push(...recorded.filter(isRefund));
    await recordFindings(client, { account: run.account, runId: run.id, now, findings: recorded, repairs });
    await closeHealedFindings(client, { account: run.account, runId: run.id, now, judgedSubjects: judgement.judgedSubjects, findings: recorded });
    if (options.dryRun) {
      report.unreconciled += (await countOpenFindings(client, run.account)) - openBefore;
      await client.query('ROLLBACK TO SAVEPOINT dry_run_slice');
    }

    report.charges_scanned += inSlice;
    report.malformed_charges += malformed;
    // A key can be judged in two slices of one run (its charge in one, its claim's
    // last change in the next): count each subject once per run.
    for (const id of judgement.matched) if (once(ctx.counted, `matched\u001f${id}`)) report.findings.matched += 1;
    for (const f of recorded) if (once(ctx.counted, `${f.category}\u001f${f.subject}`)) report.findings[f.category] += 1;
    for (const f of repairs.keys()) report.repaired[f.category] += 1;
    await recordSliceProgress(client, run.id, {
      checkpoint: slice.to,
      chargesScanned: report.charges_scanned,
      findings: report.findings,
      repaired: report.repaired,
    });
    if (run.mode === 'run') await advanceWatermark(client, run.account, run.watermarkShard, slice.to, run.id, now);
    await ctx.lock.confirmHeld(client);
    await fault('before-commit');
    if (options.dryRun) {
      for (const [f, r] of repairs) ctx.log.info({ category: f.category, subject: f.subject, action: r.action }, 'dry run: would repair');
    }
  });
  await fault('committed');
  for (const finding of refunds) {
    if (options.dryRun) {
      report.repaired.duplicate_charge += 1; // would refund
      continue;
    }
    if (!deps.refund) throw new Error('--refund-duplicates needs a Stripe client that can create refunds');
    await refundAfterCommit(deps.pool, finding, { account: run.account, runId: run.id, now: deps.clock(), refund: deps.refund });
    report.repaired.duplicate_charge += 1;
  }
}

async function savepointAndCountOpen(client: PoolClient, account: string): Promise<number> {
  await client.query('SAVEPOINT dry_run_slice');
  return countOpenFindings(client, account);
}

/**
 * Every claim insert holds an advisory lock until its transaction commits (that is
 * what makes claims unique across partitions), and PostgreSQL's lock table is
 * bounded (max_locks_per_transaction × connections, about 6,400 by default). A slice
 * re-creates at most this many claims; the rest stay open findings that say why,
 * and a backfill of the range with a smaller SWEEPER_SLICE picks them up.
 */
export const MAX_CLAIMS_CREATED_PER_SLICE = 1_000;

function capClaimCreation(findings: Finding[]): Finding[] {
  let creations = 0;
  return findings.map((f) => {
    if (f.repair?.kind !== 'recreate_claim' || !f.repair.withClaim) return f;
    creations += 1;
    if (creations <= MAX_CLAIMS_CREATED_PER_SLICE) return f;
    return {
      ...f,
      repair: null,
      reason: `deferred: more than ${MAX_CLAIMS_CREATED_PER_SLICE} claims to re-create in one slice; backfill this range with a smaller SWEEPER_SLICE`,
    };
  });
}

/**
 * A charge Stripe returned without what reconciliation needs cannot be judged, but it
 * may be money: it stays an open finding until it reads well (then it is judged as
 * any other charge, and this finding heals). One with no id cannot even be named; it
 * is logged and counted in `malformed_charges`.
 */
function unjudgeable(bad: MalformedCharge): Finding[] {
  if (!bad.id) return [];
  return [
    {
      category: 'unattributed_charge',
      subject: bad.id,
      chargeId: bad.id,
      tenantId: null,
      idempotencyKey: null,
      repair: null,
      reason: `Stripe returned this charge without what the sweep needs (${bad.problem}); it cannot be judged`,
      details: { malformed: bad.problem },
    },
  ];
}

function dedupe(findings: Finding[]): Finding[] {
  const seen = new Set<string>();
  return findings.filter((f) => {
    const id = `${f.category}\u001f${f.subject}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}
