import type { PoolClient } from '../db/pool.js';
import { ensureDayPartitions, utcDay } from '../db/partitions.js';
import { LOCK_CLASS, LockObject } from '../db/locks.js';
import type { Logger } from '../log.js';
import { STRIPE_IDEMPOTENCY_WINDOW_MS } from '../stripe/limits.js';
import type { MalformedCharge, NormalizedCharge } from '../stripe/types.js';
import type { DryRunOverlay } from './dry-run-overlay.js';
import { loadSliceFacts } from './facts-sql.js';
import type { SliceFacts } from './facts.js';
import { closeHealedFindings, recordFindings } from './findings-store.js';
import { judgeSlice, type Finding, type Judgement } from './judge/index.js';
import type { SweepLock } from './lock.js';
import { upsertCharges } from './mirror.js';
import { isRefund, recordRefundIntents } from './refunds.js';
import { executeRepairs } from './repairs.js';
import { advanceWatermark, recordSliceProgress, type RunMode } from './runs-store.js';
import type { SweepDeps, SweepOptions, SweepReport } from './types.js';
import { readStripesWord, type VerifiedSoFar } from './verify.js';
import { widen, type TimeWindow } from './window.js';

/**
 * One slice: read Stripe (outside any transaction); ingest, gather and judge; if the
 * judgement needs Stripe's own word (before a critical finding or a release), commit
 * the ingest, read it, and judge again; then repair, record findings, audit rows and
 * refund intents, and checkpoint, in one transaction.
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
  /** A real run: a fresh transaction each call. A dry run: its one long transaction. */
  inTransaction: <T>(fn: (client: PoolClient) => Promise<T>) => Promise<T>;
  /** Deferred keys already counted this run (few: only keys a live writer or a missing read held back). */
  countedDeferred: Set<string>;
  lock: SweepLock;
  /**
   * The start of the first slice that deferred a key (a live lease, a repair lost to
   * a writer, Stripe's word still missing): the watermark or checkpoint goes no
   * further this run, so a later run judges that key again.
   */
  watermarkHold: { at: Date | null };
  verified: VerifiedSoFar;
  /** Dry runs only. */
  overlay: DryRunOverlay | null;
}

export async function sweepSlice(deps: SweepDeps, options: SweepOptions, ctx: SliceContext): Promise<{ refundIntents: number }> {
  const { run, slice } = ctx;
  const fault = async (phase: string) => deps.faultPoint?.(`slice:${ctx.index}:${phase}`);

  // Read Stripe before opening the transaction: no transaction waits on the network.
  const readWindow = widen(slice, options.leaseMs, ctx.readUntil);
  const fetchedAt = deps.clock();
  const { charges, unreadable, malformed, inSlice } = await readSlice(deps, options, ctx, readWindow);
  await fault('listed');

  const prepare = async (client: PoolClient, days: TimeWindow) => {
    // Keeps `expire` from detaching a mirror partition under this slice's inserts.
    await client.query('SELECT pg_advisory_xact_lock_shared($1, $2)', [LOCK_CLASS, LockObject.partitions]);
    // In the slice's transaction: `expire` may have dropped an old day since the run
    // began (a backfill of old ranges), and a dry run's partitions roll back with it.
    await ensureDayPartitions(client, { from: utcDay(days.from), to: utcDay(days.to) }, ['stripe_charges']);
  };
  const judge = async (client: PoolClient): Promise<{ facts: SliceFacts; judgement: Judgement }> => {
    const raw = await loadSliceFacts(client, run.account, slice);
    const facts = ctx.overlay ? ctx.overlay.apply(raw) : raw;
    const judgement = judgeSlice(facts, {
      now: deps.clock(),
      retentionMs: options.retentionMs,
      refundDuplicates: options.refundDuplicates,
      providerIdempotencyWindowMs: STRIPE_IDEMPOTENCY_WINDOW_MS,
      verified: ctx.verified,
    });
    return { facts, judgement };
  };

  // First pass: ingest and judge. Most slices need nothing more and finish right here.
  let first: { facts: SliceFacts; judgement: Judgement } | null = null;
  let refundIntents = 0;
  await ctx.inTransaction(async (client) => {
    await prepare(client, readWindow);
    for (let i = 0; i < charges.length; i += INGEST_BATCH) {
      await upsertCharges(client, charges.slice(i, i + INGEST_BATCH), fetchedAt);
    }
    await fault('ingested');
    first = await judge(client);
    if (!needsStripe(first.judgement)) refundIntents = await finish(deps, options, ctx, client, first, { unreadable, malformed, inSlice });
  });
  const pending = first as { facts: SliceFacts; judgement: Judgement } | null;
  if (!pending || !needsStripe(pending.judgement)) {
    await fault('committed');
    return { refundIntents };
  }

  // Second pass: Stripe's own word for what the first asked, into the mirror, then judge again.
  const found = await readStripesWord(deps.evidence, pending.judgement.needs, ctx.verified, ctx.log, options.signal);
  await fault('verified');
  await ctx.inTransaction(async (client) => {
    const days = found.map((c) => new Date(c.created * 1000));
    await prepare(client, { from: new Date(Math.min(readWindow.from.getTime(), ...days.map(Number))), to: new Date(Math.max(readWindow.to.getTime(), ...days.map(Number))) });
    await upsertCharges(client, found, deps.clock());
    const second = await judge(client);
    refundIntents = await finish(deps, options, ctx, client, second, { unreadable, malformed, inSlice });
  });
  await fault('committed');
  return { refundIntents };
}

function needsStripe(judgement: Judgement): boolean {
  return judgement.needs.charges.length > 0 || judgement.needs.identities.length > 0;
}

async function readSlice(deps: SweepDeps, options: SweepOptions, ctx: SliceContext, readWindow: TimeWindow) {
  const { slice } = ctx;
  const seen = new Map<string, NormalizedCharge>();
  const unreadable: MalformedCharge[] = [];
  let malformed = 0;
  let inSlice = 0;
  for await (const page of deps.listCharges(ctx.run.account, readWindow, options.signal)) {
    for (const charge of page.charges) {
      const before = seen.get(charge.id);
      if (before) {
        // One listing naming one charge twice: identical is harmless; different is a broken listing.
        if (JSON.stringify(before) !== JSON.stringify(charge)) {
          throw new BrokenListingError(
            `Stripe listed charge ${charge.id} twice with different content in ${readWindow.from.toISOString()} – ${readWindow.to.toISOString()}; ` +
              'the window is not judged (watermark kept); the next run reads it again',
          );
        }
        continue;
      }
      seen.set(charge.id, charge);
      const at = charge.created * 1000;
      if (at >= slice.from.getTime() && at < slice.to.getTime()) inSlice += 1;
    }
    for (const bad of page.malformed) {
      malformed += 1;
      unreadable.push(bad);
      ctx.log.warn({ charge: bad.id, problem: bad.problem }, 'Stripe returned a charge the sweep cannot judge');
    }
  }
  return { charges: [...seen.values()], unreadable, malformed, inSlice };
}

/** The same charge id twice with different content in one listing. Exit 1: the run failed, nothing of the slice was judged. */
export class BrokenListingError extends Error {
  override readonly name = 'BrokenListingError';
  readonly exitCode = 1;
}

async function finish(
  deps: SweepDeps,
  options: SweepOptions,
  ctx: SliceContext,
  client: PoolClient,
  { facts, judgement }: { facts: SliceFacts; judgement: Judgement },
  listing: { unreadable: MalformedCharge[]; malformed: number; inSlice: number },
): Promise<number> {
  const { run, slice, report } = ctx;
  const fault = async (phase: string) => deps.faultPoint?.(`slice:${ctx.index}:${phase}`);
  const now = deps.clock();
  deps.observeJudgement?.(judgement, slice);
  const findings = capClaimCreation([...judgement.findings, ...listing.unreadable.flatMap(unjudgeable)]);
  await fault('judged');
  // A dry run repairs inside a savepoint that it rolls back at once: the row and
  // advisory locks those writes took go with it, so live writers wait milliseconds, not
  // for the whole dry run. What the repairs did is kept in the overlay, so later slices
  // judge what a real run would see.
  if (options.dryRun) await client.query('SAVEPOINT dry_run_slice');
  const repairs = await executeRepairs(client, findings, { now });
  await fault('repaired');
  // A repair that lost its compare-and-swap to a live writer is no finding: the writer
  // settles it, or, if it dies, a later run must judge the key again (deferred).
  const recorded = findings.filter((f) => !f.repair || repairs.has(f) || isRefund(f));
  const lostToWriter = findings.filter((f) => f.repair && !repairs.has(f) && !isRefund(f)).map((f) => f.subject);
  const refunds = recorded.filter(isRefund);
  if (ctx.overlay) {
    await client.query('ROLLBACK TO SAVEPOINT dry_run_slice');
    ctx.overlay.record(repairs, refunds, now);
  }
  const rows = await recordFindings(client, { account: run.account, runId: run.id, now, findings: recorded, repairs });
  await closeHealedFindings(client, { account: run.account, runId: run.id, now, judgedSubjects: judgement.judgedSubjects, findings: recorded });
  const intents = options.dryRun ? 0 : await recordRefundIntents(client, { account: run.account, runId: run.id, now, findings: refunds, recorded: rows });

  count(ctx, facts, judgement, rows, repairs.keys(), listing);
  if (options.dryRun) report.repaired.duplicate_charge += refunds.length; // would refund
  const deferred = [...judgement.deferred, ...lostToWriter];
  for (const subject of deferred) {
    if (ctx.countedDeferred.has(subject)) continue;
    ctx.countedDeferred.add(subject);
    report.deferred_keys += 1;
  }
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
  return intents;
}

/**
 * A run counts each finding once (the first slice that records it in this run), and
 * each matched charge once: in the slice its own `created` falls in. Nothing is held
 * in memory per charge, and a dry run counts exactly as a real run.
 */
function count(
  ctx: SliceContext,
  facts: SliceFacts,
  judgement: Judgement,
  rows: Array<{ category: string; firstThisRun: boolean }>,
  repaired: Iterable<Finding>,
  listing: { malformed: number; inSlice: number },
): void {
  const { report, slice } = ctx;
  report.charges_scanned += listing.inSlice;
  report.malformed_charges += listing.malformed;
  const created = new Map<string, number>();
  for (const identity of facts.identities) for (const c of identity.charges) created.set(c.id, c.created.getTime());
  for (const loose of facts.looseCharges) created.set(loose.charge.id, loose.charge.created.getTime());
  for (const loose of facts.looseEffects) if (loose.charge) created.set(loose.charge.id, loose.charge.created.getTime());
  for (const id of judgement.matched) {
    const at = created.get(id);
    if (at !== undefined && at >= slice.from.getTime() && at < slice.to.getTime()) report.findings.matched += 1;
  }
  for (const row of rows) if (row.firstThisRun) report.findings[row.category as keyof SweepReport['findings']] += 1;
  for (const f of repaired) report.repaired[f.category] += 1;
}

/**
 * Keys held back were not judged: this run goes no further than the start of the
 * first slice that deferred one (watermark, or a backfill's resume checkpoint), so a
 * later run judges them again. Settle is at least one lease, so with one lease
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
    `keys held by a live writer inside the settled window were not judged (or Stripe's own word on them was still missing); ${then}. ` +
      "If this repeats, check that the claim library's lease is SWEEPER_CLAIM_LEASE (claimSettingsFromEnv) and that app servers " +
      'and this job agree on the time',
  );
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
      covers: { claims: [], charges: [bad.id], effects: [] },
    },
  ];
}
