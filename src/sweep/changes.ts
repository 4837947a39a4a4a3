import type { MalformedCharge, NormalizedCharge } from './provider.js';
import { judgeBatch, type RunContext } from './batch.js';
import { isCovered, readCoverage } from './coverage.js';
import { advanceEventCursor, readDeepRead, readEventCursor, recordDeepRead } from './changes-store.js';
import { deepRead, stepCounter } from './deep-read.js';
import { judgeRefundsById } from './refund-step.js';
import { recordDisputes } from './disputes.js';
import { loadChangedFacts } from './facts-sql.js';
import type { ChangesReport, SweepDeps, SweepOptions } from './types.js';
import { DAY_MS } from '../time/units.js';
import { forOperator } from '../log.js';

/**
 * Late changes (docs/judgement.md "Late changes"): after its window, a scheduled run reads the
 * account's change events from its cursor to now − SWEEPER_EVENTS_LAG (re-reading an
 * overlap), re-reads from Stripe every charge they point at, lands it in the mirror
 * and judges each affected identity with all its evidence, exactly as a slice would.
 * Events are only pointers, so a repeated or out-of-order event changes nothing.
 * Read a day at a time; each day's judgement and cursor advance commit together.
 */

/** Stripe keeps events 30 days; past 25 the cursor is too close to losing some. */
export const EVENTS_KEPT_MS = 30 * DAY_MS;
export const EVENTS_SAFE_MS = 25 * DAY_MS;
/** One read and one transaction per day of events at most. */
const CHUNK_MS = DAY_MS;

export async function sweepChanges(
  deps: SweepDeps,
  options: SweepOptions,
  ctx: RunContext,
): Promise<ChangesReport | undefined> {
  const listChanges = deps.listChanges;
  if (ctx.run.mode !== 'run' || !listChanges) return undefined;
  const { account } = ctx.run;
  const now = deps.clock();
  // Events of work still in flight are left for a later run, like the window's: a key in
  // a live lease would otherwise be deferred and hold the whole day's cursor.
  const before = new Date(Math.floor((now.getTime() - Math.max(options.eventsLagMs, options.settleMs)) / 1000) * 1000);
  const stored = await ctx.inTransaction((client) => readEventCursor(client, account));
  let cursor = stored ?? new Date(now.getTime() - options.firstRunLookbackMs);
  const step: ChangesStep = { deps, options, ctx, listChanges, report: emptyChangesReport(), ...readSoFar() };

  if (now.getTime() - cursor.getTime() > EVENTS_SAFE_MS) cursor = await relistLostEvents(step, cursor, now);

  const eventsStep = stepCounter(ctx.report);
  for (let n = 0; cursor < before; n += 1) {
    options.signal?.throwIfAborted();
    const chunkEnd = new Date(Math.min(before.getTime(), cursor.getTime() + CHUNK_MS));
    const { held } = await judgeEventsChunk(step, n, cursor, chunkEnd);
    if (held) break;
    cursor = chunkEnd;
  }
  const { report } = step;
  Object.assign(report, eventsStep());
  report.cursor = cursor.toISOString();
  report.cursor_lag_seconds = Math.round((now.getTime() - cursor.getTime()) / 1000);

  if (options.deepReadEveryMs > 0 && options.deepReadDays > 0 && !report.fallback) await deepReadIfDue(step, now);
  return report;
}

/** The late-changes step of one run, as it goes. */
interface ChangesStep {
  deps: SweepDeps;
  options: SweepOptions;
  ctx: RunContext;
  listChanges: NonNullable<SweepDeps['listChanges']>;
  report: ChangesReport;
  notSwept: Set<string>;
  /**
   * Each counted once per run: every day's read re-reads the overlap below its start, so
   * a day hands back events (and charges) the day before already had.
   */
  eventsRead: Set<string>;
  chargesRead: Set<string>;
  malformedRead: Set<string>;
}

function emptyChangesReport(): ChangesReport {
  return {
    events: 0,
    charges: 0,
    not_swept: 0,
    malformed_events: 0,
    cursor: null,
    cursor_lag_seconds: null,
    found: {},
    repaired: {},
  };
}

function readSoFar(): Pick<ChangesStep, 'notSwept' | 'eventsRead' | 'chargesRead' | 'malformedRead'> {
  return { notSwept: new Set(), eventsRead: new Set(), chargesRead: new Set(), malformedRead: new Set() };
}

/**
 * Events older than 30 days are gone: what changed in the gap can only be found by
 * listing the charges created since, and comparing them with the mirror. Returns the
 * cursor the events read goes on from.
 */
async function relistLostEvents(step: ChangesStep, cursor: Date, now: Date): Promise<Date> {
  const { deps, options, ctx, report } = step;
  const relist = { from: new Date(cursor.getTime() - options.eventsOverlapMs), to: ctx.run.window.to };
  ctx.log.warn(
    { cursor: cursor.toISOString(), from: relist.from.toISOString(), to: relist.to.toISOString() },
    'the events cursor is more than 25 days behind (Stripe keeps events 30 days): re-listing the charges created since it instead; ' +
      'changes to charges created before it in that gap cannot be seen',
  );
  report.fallback = await deepRead(deps, options, ctx, relist, 'fallback');
  return new Date(now.getTime() - EVENTS_KEPT_MS + CHUNK_MS);
}

/**
 * One day of events: read, re-read from Stripe every charge they point at, and judge
 * each affected identity, committed with the cursor's advance. `held`: a key was held
 * back, so the cursor stays and the next run reads these events again.
 */
async function judgeEventsChunk(
  step: ChangesStep,
  n: number,
  cursor: Date,
  chunkEnd: Date,
): Promise<{ held: boolean }> {
  const { deps, options, ctx, report } = step;
  const { account } = ctx.run;
  const pointers = await step.listChanges(
    account,
    {
      after: Math.floor(cursor.getTime() / 1000),
      overlapSeconds: Math.round(options.eventsOverlapMs / 1000),
      before: Math.floor(chunkEnd.getTime() / 1000),
    },
    options.signal,
  );
  const ids = [...new Set(pointers.flatMap((p) => (p.chargeId ? [p.chargeId] : [])))];
  for (const bad of pointers.filter((p) => p.problem && !step.malformedRead.has(p.id))) {
    step.malformedRead.add(bad.id);
    report.malformed_events += 1;
    ctx.log.warn(
      { event: bad.id, problem: bad.problem },
      'an event names no charge the sweep can re-read; the deep re-read is the second line',
    );
  }
  await deps.faultPoint?.(`changes:${n}:listed`);
  // Refunds first, in their own transaction: judged again harmlessly if this day is read again.
  if (ctx.refundsReadable) {
    const refunds = pointers.filter((p) => p.refundId);
    const since = new Date(Math.min(...refunds.map((p) => p.created * 1000)));
    await judgeRefundsById(deps, options, ctx, [...new Set(refunds.map((p) => p.refundId as string))], since);
  }
  // Disputes as their events tell (disputes.ts): recorded before the charges are judged with them.
  const disputes = await ctx.inTransaction((client) => recordDisputes(client, account, pointers));
  if (disputes > 0) report.disputes = (report.disputes ?? 0) + disputes;
  const fetchedAt = deps.clock();
  const { answered, read } = await rereadCharges(step, ids);
  // Only charges created where some run has judged (a first run: its lookback); older ones wait for a backfill.
  const { charges, unreadable, left } = await sweptOnly(ctx, answered, read);
  for (const id of left) step.notSwept.add(id);
  if (left.length > 0)
    ctx.log.info(
      forOperator({ charges: left.length, example: left[0] }),
      'events point at charges created before anything was swept; they are left for a backfill',
    );
  const judgedIds = [...charges.map((c) => c.id), ...unreadable.flatMap((b) => (b.id ? [b.id] : []))];
  for (const p of pointers) if (!p.problem) step.eventsRead.add(p.id);
  for (const c of charges) step.chargesRead.add(c.id);
  report.events = step.eventsRead.size;
  report.charges = step.chargesRead.size;
  report.not_swept = step.notSwept.size;
  // An object, not a local: the checkpoint callback sets it (a local's narrowing would not see that).
  const chunk = { held: false };
  await judgeBatch(deps, options, ctx, {
    name: `changes:${n}`,
    charges,
    fetchedAt,
    unreadable,
    load: (client) => loadChangedFacts(client, account, judgedIds, options),
    countsMatched: () => false,
    async checkpoint(client, deferred, at) {
      // A key held back keeps the cursor here: the next run reads these events again.
      if (deferred.length > 0) chunk.held = true;
      else await advanceEventCursor(client, account, chunkEnd, ctx.run.id, at);
    },
  });
  return chunk;
}

/** The charges the events point at, read from Stripe by id; one Stripe answers but that cannot be read becomes a finding, as in a listing. */
async function rereadCharges(
  step: ChangesStep,
  ids: string[],
): Promise<{ answered: NormalizedCharge[]; read: MalformedCharge[] }> {
  const { deps, options, ctx } = step;
  const read: MalformedCharge[] = [];
  const answered =
    ids.length > 0
      ? await deps.evidence.chargesById(ctx.run.account, ids, options.signal, (bad) => read.push(bad))
      : [];
  if (answered.length + read.length < ids.length) {
    const found = new Set([...answered.map((c) => c.id), ...read.map((c) => c.id)]);
    ctx.log.warn(
      { missing: ids.filter((id) => !found.has(id)).slice(0, 5) },
      'events point at charges Stripe does not return by id; they are left out',
    );
  }
  return { answered, read };
}

/** The periodic deep re-read (SWEEPER_DEEP_READ_EVERY), when the last one is that old, recorded with its result. */
async function deepReadIfDue(step: ChangesStep, now: Date): Promise<void> {
  const { deps, options, ctx, report } = step;
  const { account } = ctx.run;
  const last = await ctx.inTransaction((client) => readDeepRead(client, account));
  if (!last || now.getTime() - last.lastAt.getTime() >= options.deepReadEveryMs) {
    const window = { from: new Date(now.getTime() - options.deepReadDays * DAY_MS), to: ctx.run.window.to };
    const read = await deepRead(deps, options, ctx, window, 'deep-read');
    report.deep_read = read;
    await ctx.inTransaction((client) =>
      recordDeepRead(client, account, ctx.run.id, {
        lastAt: now,
        from: new Date(read.from),
        to: new Date(read.to),
        hours: read.hours,
        differing: read.differing,
      }),
    );
  }
}

/**
 * The re-read charges (and unreadable answers whose creation is known) created inside what
 * some run has judged; the ids of the others, which are not judged here.
 */
async function sweptOnly(
  ctx: RunContext,
  charges: NormalizedCharge[],
  unreadable: MalformedCharge[],
): Promise<{ charges: NormalizedCharge[]; unreadable: MalformedCharge[]; left: string[] }> {
  const times = [...charges.map((c) => c.created), ...unreadable.flatMap((b) => (b.created ? [b.created] : []))];
  if (times.length === 0) return { charges, unreadable, left: [] };
  const first = times.reduce((a, b) => Math.min(a, b));
  const last = times.reduce((a, b) => Math.max(a, b));
  const range = { from: new Date(first * 1000), to: new Date(last * 1000 + 1000) };
  const coverage = await ctx.inTransaction((client) => readCoverage(client, ctx.run.account, range));
  const swept = (created: number) => isCovered(coverage, new Date(created * 1000));
  return {
    charges: charges.filter((c) => swept(c.created)),
    unreadable: unreadable.filter((b) => b.created === undefined || swept(b.created)),
    left: [
      ...charges.filter((c) => !swept(c.created)).map((c) => c.id),
      ...unreadable.flatMap((b) => (b.created !== undefined && b.id !== null && !swept(b.created) ? [b.id] : [])),
    ],
  };
}
