import type { PoolClient } from '../db/pool.js';
import { ensureDayPartitions, utcDay } from '../db/partitions.js';
import { LOCK_CLASS, LockObject } from '../db/locks.js';
import type { Logger } from '../log.js';
import type { MalformedCharge, NormalizedCharge } from '../stripe/types.js';
import { judgeSlice, type Finding } from './classify.js';
import { loadSliceFacts } from './facts-sql.js';
import { closeHealedFindings, recordFindings } from './findings-store.js';
import type { SweepLock } from './lock.js';
import { upsertCharges } from './mirror.js';
import { executeRepairs, isRefund, refundAfterCommit, type RefundFinding } from './repairs.js';
import { advanceWatermark, countOpenFindings, recordSliceProgress, type RunMode } from './runs-store.js';
import type { SweepDeps, SweepOptions, SweepReport } from './types.js';
import { widen, type TimeWindow } from './window.js';

/**
 * One slice: read Stripe (outside any transaction), then in one transaction ingest,
 * judge, repair, record findings and audit, and checkpoint; refunds after commit.
 */

/** Each batch written to the mirror in one statement: a page or a few. */
const INGEST_BATCH = 500;

export interface SliceContext {
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
  /**
   * The start of the first slice that deferred a key (a live lease, or a repair lost
   * to a writer): the watermark or checkpoint goes no further this run, so a later
   * run judges that key again.
   */
  watermarkHold: { at: Date | null };
}

function once(seen: Set<string>, id: string): boolean {
  if (seen.has(id)) return false;
  seen.add(id);
  return true;
}

export async function sweepSlice(deps: SweepDeps, options: SweepOptions, ctx: SliceContext): Promise<void> {
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
    // A repair that lost its compare-and-swap to a live writer is no finding: the writer
    // settles it, or, if it dies, a later run must judge the key again (deferred).
    const recorded = findings.filter((f) => !f.repair || repairs.has(f) || isRefund(f));
    const lostToWriter = findings.filter((f) => f.repair && !repairs.has(f) && !isRefund(f)).map((f) => f.subject);
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
    const deferred = [...judgement.deferred, ...lostToWriter];
    for (const subject of deferred) if (once(ctx.counted, `deferred\u001f${subject}`)) report.deferred_keys += 1;
    if (deferred.length > 0) holdAt(ctx, slice, deferred);
    const reached = ctx.watermarkHold.at ?? slice.to;
    await recordSliceProgress(client, run.id, {
      checkpoint: reached,
      chargesScanned: report.charges_scanned,
      findings: report.findings,
      repaired: report.repaired,
    });
    if (run.mode === 'run') await advanceWatermark(client, run.account, run.watermarkShard, reached, run.id, now);
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

/**
 * Keys a live writer holds were not judged: this run goes no further than the start of
 * the first slice that deferred one (watermark, or a backfill's resume checkpoint), so
 * a later run judges them again. Settle is at least one lease, so with one lease
 * setting and agreeing clocks no settled key is in a live lease: it means they disagree.
 */
function holdAt(ctx: SliceContext, slice: TimeWindow, deferred: string[]): void {
  ctx.watermarkHold.at ??= slice.from;
  const then =
    ctx.run.mode === 'run'
      ? `this run's watermark goes no further than ${ctx.watermarkHold.at.toISOString()}, so the next run judges them again`
      : 'they are counted in deferred_keys: run this backfill again once their leases have ended';
  ctx.log.warn(
    { slice: { from: slice.from.toISOString(), to: slice.to.toISOString() }, deferred: deferred.length, example: deferred[0] },
    `keys held by a live writer inside the settled window were not judged; ${then}. If this repeats, check that the ` +
      "claim library's lease is SWEEPER_CLAIM_LEASE (claimSettingsFromEnv) and that app servers and this job agree on the time",
  );
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

