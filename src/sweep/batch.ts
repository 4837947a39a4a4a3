import type { PoolClient } from '../db/pool.js';
import { utcDay } from '../db/partitions.js';
import { LOCK_CLASS, LockObject } from '../db/locks.js';
import type { Logger } from '../log.js';
import type { MalformedCharge, NormalizedCharge } from './provider.js';
import { brakeTrip, MassRepairError, recordBatch, type BrakeState } from './brake.js';
import { MALFORMED_CHARGE_CATEGORY, type Category } from './categories.js';
import type { DryRunOverlay } from './dry-run-overlay.js';
import type { SliceFacts } from './facts.js';
import { closeHealedDuplicates, closeHealedFindings, recordFindings } from './findings-store.js';
import { judgeSlice, type Finding, type Judgement } from './judge/index.js';
import type { SweepLock } from './lock.js';
import { upsertCharges } from './mirror.js';
import { copyCharges, MirrorRefusedError } from './mirror-copy.js';
import { isRefund, recordRefundIntents } from './refunds.js';
import { executeRepairs } from './repairs.js';
import type { RunMode } from './runs-store.js';
import type { PlannedBatch, RunWrites } from './run-mode.js';
import type { SweepDeps, SweepOptions, SweepReport } from './types.js';
import { readStripesWord, type VerifiedSoFar } from './verify.js';
import type { TimeWindow } from './window.js';

/**
 * One judged batch: what a slice of the window is, and what the late-changes step is
 * for the charges Stripe's events point at. Land the charges in the mirror; gather and
 * judge; if the judgement needs Stripe's own word (before a critical finding or a
 * release), commit the ingest, read it, and judge again; then repair, record findings,
 * audit rows and refund intents, and checkpoint, in one transaction.
 */

/** Charges landed in the mirror per COPY (a large slice in a few). */
const INGEST_BATCH = 5_000;

/** What every batch of one account's run shares. */
export interface RunContext {
  run: {
    id: string;
    mode: RunMode;
    account: string;
    shard: string;
    window: TimeWindow;
    startedAt: Date;
    checkpoint: Date;
  };
  report: SweepReport;
  log: Logger;
  readUntil: Date;
  /** A real run: a fresh transaction each call. A dry run: its one long transaction. */
  inTransaction: <T>(fn: (client: PoolClient) => Promise<T>) => Promise<T>;
  /** Deferred keys already counted this run (few: only keys a live writer or a missing read held back). */
  countedDeferred: Set<string>;
  /** Unreadable charges already counted this run (few). */
  countedMalformed: Set<string>;
  /**
   * Charges a repair of this run covered: a neighbouring slice that judges the identity
   * again (its lease margin listed the charge) sees them agree, and must not count them
   * matched as well.
   */
  repairedCharges: Set<string>;
  lock: SweepLock;
  verified: VerifiedSoFar;
  /** Dry runs only. */
  overlay: DryRunOverlay | null;
  /** How the run writes, real or dry (run-mode.ts); `inTransaction` and `overlay` above are its. */
  writes: RunWrites;
  /** What the run judged and repaired so far, for the repair brake (brake.ts). */
  brake: BrakeState;
  /** False once the refunds step failed (a key without Refunds read): events' refunds are not read either. */
  refundsReadable: boolean;
}

export interface Batch {
  /** For fault points and logs: `slice:3`, `changes:0`. */
  name: string;
  /** Charges to land in the mirror first, read at `fetchedAt`. */
  charges: NormalizedCharge[];
  fetchedAt: Date;
  /** Charges the listing could not read. */
  unreadable: MalformedCharge[];
  /**
   * The run's lock connection holds the mirror's partitions for this batch (the parts of
   * a dense slice: SweepLock.holdPartitions), so its transaction takes no lock of its own.
   */
  partitionsHeld?: boolean;
  /** Gathers the facts to judge, inside the batch's transaction. */
  load: (client: PoolClient) => Promise<SliceFacts>;
  /** Whether a matched charge created at this instant is counted by this batch (each charge once per run). */
  countsMatched: (created: Date) => boolean;
  /**
   * Records progress in the batch's transaction; `deferred` says whether some key was
   * held back (a live writer, a lost compare-and-swap, Stripe's word still missing).
   */
  checkpoint: (client: PoolClient, deferred: string[], now: Date) => Promise<void>;
}

const ENSURE_DAYS = `SELECT sweeper_ensure_day_partitions('stripe_charges'::regclass, $1::date, $2::date)`;
const ENSURE_DAYS_UNDER_LOCK = `${ENSURE_DAYS} FROM (SELECT pg_advisory_xact_lock_shared($3, $4)) AS held`;

export async function judgeBatch(
  deps: SweepDeps,
  options: SweepOptions,
  ctx: RunContext,
  batch: Batch,
): Promise<{ refundIntents: number }> {
  const fault = async (phase: string) => deps.faultPoint?.(`${batch.name}:${phase}`);
  const days = spanOf(batch.charges);
  const prepare = async (client: PoolClient, span: TimeWindow | null) => {
    // The shared lock keeps `expire` from detaching a mirror partition under this batch's
    // inserts; taken first (the FROM), then the days ensured, in one statement. In the
    // batch's transaction: `expire` may have dropped an old day since the run began (old
    // charges), and a dry run's partitions roll back with it.
    // A part of a dense slice takes none: the lock connection holds it across the parts
    // (a second shared request could queue behind `expire` waiting for that one).
    const range = span ? [utcDay(span.from), utcDay(span.to)] : null;
    if (batch.partitionsHeld) {
      if (range) await client.query(ENSURE_DAYS, range);
      return;
    }
    const lock = [LOCK_CLASS, LockObject.partitions];
    if (range) await client.query(ENSURE_DAYS_UNDER_LOCK, [...range, ...lock]);
    else await client.query('SELECT pg_advisory_xact_lock_shared($1, $2)', lock);
  };
  const judge = async (client: PoolClient): Promise<{ facts: SliceFacts; judgement: Judgement }> => {
    const raw = await batch.load(client);
    const facts = ctx.overlay ? ctx.overlay.apply(raw) : raw;
    const judgement = judgeSlice(facts, {
      now: deps.clock(),
      retentionMs: options.retentionMs,
      refundDuplicates: options.refundDuplicates,
      providerIdempotencyWindowMs: deps.idempotencyWindowMs,
      verified: ctx.verified,
      outcomes: { duplicateLookbackMs: options.duplicateLookbackMs, suspectWindowMs: options.suspectWindowMs },
    });
    return { facts, judgement };
  };

  // First pass: ingest and judge. Most batches need nothing more and finish right here.
  let first: { facts: SliceFacts; judgement: Judgement } | null = null;
  let refundIntents = 0;
  // A real run lands the charges unguarded first (no savepoint); should the database
  // refuse one, the transaction rolls back and the batch lands again, guarded. A dry run's
  // one transaction cannot roll back a batch: it is always guarded.
  let guarded = ctx.overlay !== null;
  // A dry run lays a batch's would-be repairs over later batches only once the batch
  // stands (its savepoint released): a batch that fails leaves nothing, as a real run's
  // rolled-back transaction does.
  let overlay: LaidOver | null = null;
  const ingestAndJudge = async (client: PoolClient) => {
    overlay = null;
    await prepare(client, days);
    for (let i = 0; i < batch.charges.length; i += INGEST_BATCH) {
      // A charge the database refuses (one the normaliser did not know to refuse) becomes
      // an open finding naming it; the rest of the batch lands and is judged.
      const { refused } = await copyCharges(client, batch.charges.slice(i, i + INGEST_BATCH), batch.fetchedAt, {
        guarded,
      });
      for (const r of refused) {
        ctx.log.warn(
          { charge: r.charge.id, code: r.error.code, error: r.error.message },
          'the database refused a charge; it stays an open finding',
        );
        batch.unreadable.push({
          id: r.charge.id,
          account: r.charge.account,
          problem: `the database refused it: ${r.error.message}`,
        });
      }
    }
    await fault('ingested');
    first = await judge(client);
    if (!needsStripe(first.judgement))
      ({ intents: refundIntents, overlay } = await finish(deps, options, ctx, batch, client, first, []));
  };
  try {
    await ctx.inTransaction(ingestAndJudge);
  } catch (error) {
    if (guarded || !(error instanceof MirrorRefusedError)) throw error;
    ctx.log.info(
      { batch: batch.name },
      'the database refused a charge of this batch; landing it again, row by row where needed',
    );
    guarded = true; // the refusal came while landing, before anything was judged
    await ctx.inTransaction(ingestAndJudge);
  }
  layOver(ctx, overlay);
  const pending = first as { facts: SliceFacts; judgement: Judgement } | null;
  if (!pending || !needsStripe(pending.judgement)) {
    await fault('committed');
    return { refundIntents };
  }

  // Second pass: Stripe's own word for what the first asked, into the mirror, then judge again.
  const { found, unreadable } = await readStripesWord(
    deps.evidence,
    pending.judgement.needs,
    ctx.verified,
    ctx.log,
    options.signal,
  );
  // Unreadable answers are findings naming them, as in a listing; the rest of the batch stands.
  for (const bad of unreadable) if (!batch.unreadable.some((b) => b.id === bad.id)) batch.unreadable.push(bad);
  await fault('verified');
  await ctx.inTransaction(async (client) => {
    await prepare(client, spanOf(found));
    await upsertCharges(client, found, deps.clock());
    const second = await judge(client);
    ({ intents: refundIntents, overlay } = await finish(
      deps,
      options,
      ctx,
      batch,
      client,
      second,
      found.map((c) => c.id),
    ));
  });
  layOver(ctx, overlay);
  await fault('committed');
  return { refundIntents };
}

/**
 * What a dry run's batch would have written, for the overlay (dry-run-overlay.ts); and in
 * a plan run, what keeps its steps in the plan (src/plans).
 */
interface LaidOver {
  record: Parameters<DryRunOverlay['record']>;
  planned: (() => void) | null;
}

/**
 * A dry run's batch: its repairs undone, to be laid over instead (the savepoint released
 * too: ROLLBACK TO keeps it, and every batch of a long dry run would nest one
 * subtransaction deeper in its one transaction). A plan run reads here what its steps
 * read: the rows as judged.
 */
async function undoForOverlay(
  ctx: RunContext,
  client: PoolClient,
  b: Omit<PlannedBatch, 'account'> & { facts: SliceFacts; now: Date },
): Promise<LaidOver> {
  await client.query('ROLLBACK TO SAVEPOINT dry_run_batch; RELEASE SAVEPOINT dry_run_batch');
  const account = ctx.run.account;
  const planned = (await ctx.writes.planner?.read(client, { ...b, account })) ?? null;
  return { record: [b.repairs, b.refunds, b.now, account], planned };
}

function layOver(ctx: RunContext, laid: LaidOver | null): void {
  if (!laid) return;
  ctx.overlay?.record(...laid.record);
  laid.planned?.();
}

function needsStripe(judgement: Judgement): boolean {
  return judgement.needs.charges.length > 0 || judgement.needs.identities.length > 0;
}

function spanOf(charges: readonly NormalizedCharge[]): TimeWindow | null {
  if (charges.length === 0) return null;
  let min = Infinity;
  let max = -Infinity;
  for (const c of charges) {
    if (c.created < min) min = c.created;
    if (c.created > max) max = c.created;
  }
  return { from: new Date(min * 1000), to: new Date(max * 1000) };
}

async function finish(
  deps: SweepDeps,
  options: SweepOptions,
  ctx: RunContext,
  batch: Batch,
  client: PoolClient,
  { facts, judgement }: { facts: SliceFacts; judgement: Judgement },
  /** Charges Stripe's own word returned readable for this batch, besides the batch's own. */
  reread: readonly string[],
): Promise<{ intents: number; overlay: LaidOver | null }> {
  const { run, report } = ctx;
  const fault = async (phase: string) => deps.faultPoint?.(`${batch.name}:${phase}`);
  const now = deps.clock();
  deps.observeJudgement?.(judgement, batch.name);
  // A judgement that met an unreadable charge (a payment row's) already names it.
  const named = new Set(
    judgement.findings.filter((f) => f.category === MALFORMED_CHARGE_CATEGORY).map((f) => f.subject),
  );
  const findings = [
    ...judgement.findings,
    ...batch.unreadable.flatMap(unjudgeable).filter((f) => !named.has(f.subject)),
  ];
  await fault('judged');
  applyBrake(options, ctx, findings, facts);
  // A dry run repairs inside a savepoint that it rolls back at once: the row locks and
  // directory entries those writes took go with it, so live writers wait milliseconds, not
  // for the whole dry run. What the repairs did is kept in the overlay, so later
  // batches judge what a real run would see.
  if (options.dryRun) await client.query('SAVEPOINT dry_run_batch');
  const overlaid = ctx.overlay ? findings.filter((f) => ctx.overlay?.holdsTargetOf(f)) : [];
  const repairs = await executeRepairs(
    client,
    overlaid.length > 0 ? findings.filter((f) => !overlaid.includes(f)) : findings,
    { now },
  );
  for (const f of overlaid)
    repairs.set(f, {
      finding: f,
      action: `${f.repair?.kind ?? 'repair'} (on what an earlier repair of this dry run left)`,
      before: null,
      after: null,
    });
  await fault('repaired');
  // A repair that lost its compare-and-swap to a live writer is no finding: the writer
  // settles it, or, if it dies, a later run must judge the key again (deferred).
  const recorded = findings.filter((f) => !f.repair || repairs.has(f) || isRefund(f));
  const lostToWriter = findings.filter((f) => f.repair && !repairs.has(f) && !isRefund(f)).map((f) => f.subject);
  const refunds = recorded.filter(isRefund);
  const overlay = ctx.overlay
    ? await undoForOverlay(ctx, client, { name: batch.name, facts, repairs, refunds, now })
    : null;
  const rows = await recordFindings(client, { account: run.account, runId: run.id, now, findings: recorded, repairs });
  await closeHealedFindings(client, {
    account: run.account,
    runId: run.id,
    now,
    judgedSubjects: judgement.judgedSubjects,
    findings: recorded,
    freshlyRead: [...batch.charges.map((c) => c.id), ...reread],
  });
  await closeHealedDuplicates(client, {
    account: run.account,
    runId: run.id,
    now,
    judged: judgement.outcomesJudged,
    findings: recorded,
  });
  const intents = options.dryRun
    ? 0
    : await recordRefundIntents(client, {
        account: run.account,
        runId: run.id,
        now,
        findings: refunds,
        recorded: rows,
      });

  // Counting: each finding once per run (the first batch that records it in this run),
  // each matched charge once (the batch its own `created` belongs to, unless a repair of
  // this run made it agree), every repair made.
  // A charge the listing and a later re-read both found unreadable is one charge.
  for (const bad of batch.unreadable) {
    if (bad.id !== null && ctx.countedMalformed.has(bad.id)) continue;
    if (bad.id !== null) ctx.countedMalformed.add(bad.id);
    else report.unnamed_charges += 1;
    report.malformed_charges += 1;
  }
  const created = createdById(facts);
  for (const f of repairs.keys()) for (const id of f.covers.charges) ctx.repairedCharges.add(id);
  for (const id of judgement.matched) {
    const at = created.get(id);
    if (at !== undefined && batch.countsMatched(at) && !ctx.repairedCharges.has(id)) report.findings.matched += 1;
  }
  for (const row of rows) if (row.firstThisRun) report.findings[row.category as keyof SweepReport['findings']] += 1;
  for (const f of repairs.keys()) report.repaired[f.category] += 1;
  if (options.dryRun) report.repaired.duplicate_charge += refunds.length; // would refund
  const deferred = [...judgement.deferred, ...lostToWriter];
  for (const subject of deferred) {
    if (ctx.countedDeferred.has(subject)) continue;
    ctx.countedDeferred.add(subject);
    report.deferred_keys += 1;
  }
  await batch.checkpoint(client, deferred, now);
  await ctx.lock.confirmHeld(client);
  await fault('before-commit');
  if (options.dryRun) {
    for (const [f, r] of repairs)
      ctx.log.info({ category: f.category, subject: f.subject, action: r.action }, 'dry run: would repair');
  }
  return { intents, overlay };
}

/**
 * The repair brake, before anything of the batch is repaired: past the bound, a real run
 * stops here (the batch rolls back with the error); a dry run, or a run a person confirmed
 * with --allow-mass-repair, says so in its report and goes on.
 */
function applyBrake(options: SweepOptions, ctx: RunContext, findings: readonly Finding[], facts: SliceFacts): void {
  const judged = facts.identities.length + facts.looseCharges.length + facts.looseEffects.length;
  applyRepairBrake(options, ctx, findings, judged);
}

/** The brake over any batch's findings (a slice's, a refund day's), `judged` identities judged in it. */
export function applyRepairBrake(
  options: SweepOptions,
  ctx: RunContext,
  findings: readonly Finding[],
  judged: number,
): void {
  const planned: Partial<Record<Category, number>> = {};
  for (const f of findings) {
    if (!f.repair) continue;
    // A refund moves money once per extra charge: each counts.
    const n = f.repair.kind === 'refund_duplicates' ? f.repair.refund.length : 1;
    planned[f.category] = (planned[f.category] ?? 0) + n;
  }
  const trip = brakeTrip(ctx.brake, planned, judged, options.maxRepairShare);
  if (trip && !ctx.report.mass_repair) {
    const allowed = options.allowMassRepair;
    ctx.report.mass_repair = { ...trip, allowed };
    if (!options.dryRun && !allowed) throw new MassRepairError(trip, ctx.run.account);
    ctx.log.warn(
      { category: trip.category, repairs: trip.repairs, judged: trip.judged, share: trip.share },
      options.dryRun
        ? 'the repair brake would stop a real run here (SWEEPER_MAX_REPAIR_SHARE): look at these repairs before running for real'
        : 'the repair brake was passed: --allow-mass-repair',
    );
  }
  recordBatch(ctx.brake, planned, judged);
}

function createdById(facts: SliceFacts): Map<string, Date> {
  const created = new Map<string, Date>();
  for (const identity of facts.identities) for (const c of identity.charges) created.set(c.id, c.created);
  for (const loose of facts.looseCharges) created.set(loose.charge.id, loose.charge.created);
  for (const loose of facts.looseEffects) if (loose.charge) created.set(loose.charge.id, loose.charge.created);
  return created;
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
      category: MALFORMED_CHARGE_CATEGORY,
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
