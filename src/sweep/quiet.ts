import { inTransaction, type Queryable } from '../db/pool.js';
import { emptyCounts } from './categories.js';
import { EVENTS_SAFE_MS } from './changes.js';
import type { SweepLock } from './lock.js';
import { notePayoutAccounts } from './payout-facts.js';
import { emptyPayoutsReport } from './payout-step.js';
import { AccountUnavailableError, type ChargePeek, type NormalizedPayout, type PayoutSource } from './provider.js';
import { emptyReport, newRunId } from './reports.js';
import type { ChangesReport, SweepDeps, SweepOptions, SweepReport } from './types.js';
import { formatShard, scheduledWindow, widen, type TimeWindow } from './window.js';
import { DAY_MS, HOUR_MS } from '../time/units.js';

/**
 * Idle accounts, settled a group at a time (docs/platforms.md "Idle accounts"). Most of a
 * platform's accounts have nothing new on a given run. For each, one request lists its
 * whole window (peekCharges) and, only when that is empty, one more reads its events;
 * one statement then asks whether anything local (a mirrored charge, a claim that
 * changed, a payment or refund row) lies in its window. An account with nothing
 * anywhere is settled with the others in one transaction: its run row, watermark, events
 * cursor (and a first run's deep-read record) written exactly as its own sweep would
 * have written them, in a handful of statements for the whole group. Every other account
 * goes to its own sweep, with the window and the page already read for it, so nothing
 * is listed twice.
 */

/** What the group read for an account its own sweep goes on from. */
export interface Prepared {
  /** When the account's run began: its window's end and the mirror's read time follow from it. */
  started: Date;
  /** The scheduled window (null: nothing settled to sweep yet). */
  window: TimeWindow;
  /** The one request for the whole window, when it was made. */
  peek?: ChargePeek;
  /** The account's payouts, when the group listed them (payout-step.ts lists them again only for another window). */
  payouts?: PrelistedPayouts;
}

/** A payouts listing the group made: the window it covered and every payout in it. */
export interface PrelistedPayouts {
  window: TimeWindow;
  listed: NormalizedPayout[];
}

export interface QuietOutcome {
  /** Settled here: nothing new, or nothing settled yet. */
  reports: SweepReport[];
  /** Connected accounts that refused the platform (403). */
  revoked: string[];
  /** For their own sweep. */
  busy: Array<{ account: string; prepared?: Prepared }>;
}

/** One account's state before its run, read for the whole group in one statement. */
interface AccountState {
  watermark: Date | null;
  cursor: Date | null;
  deepReadAt: Date | null;
  /** Where the refunds step last listed to (refund-step.ts); null before its first. */
  refundCursor: Date | null;
  /** When the payouts step last listed the account's payouts (payout-step.ts); null before its first. */
  payoutsListedAt: Date | null;
  /** From when its payouts were first listed (recon_payout_accounts.since); null before its first listing. */
  payoutSince: Date | null;
  /** Some run judged part of the deep re-read's range: its re-read would list Stripe. */
  sweptRecently: boolean;
  /** Refund intents to settle, or duplicates whose tenants' keys are judged: work beyond the window. */
  pending: boolean;
  /** An automatic payout mirrored and not reconciled yet: the payouts step has one to reconcile. */
  payoutsAwaited: boolean;
  /** An open unpaid_effect finding, or succeeded payments that grew older than the grace on an account with automatic payouts. */
  unpaidWork: boolean;
}

interface Plan {
  account: string;
  state: AccountState;
  window: TimeWindow;
  /** The slice with its lease margins: what the peek lists and the local check reads. */
  read: TimeWindow;
  /** Events up to here are read (now − the events lag); null: no events step. */
  before: Date | null;
  /** Where the events read starts (the stored cursor, or a first run's lookback); null: no events step. */
  cursor: Date | null;
  /** A first deep re-read with nothing swept before to compare: recorded, nothing listed. */
  recordDeepRead: boolean;
  /** The payouts listing due (payout-step.ts listingWindow); null: listed recently, or no payouts step. */
  payouts: TimeWindow | null;
}

const STATES = `
SELECT a AS account,
       (SELECT watermark FROM recon_watermarks w WHERE w.account = a AND w.shard = '') AS watermark,
       (SELECT cursor FROM recon_event_cursors c WHERE c.account = a) AS cursor,
       (SELECT last_at FROM recon_deep_reads d WHERE d.account = a) AS deep_read_at,
       (SELECT cursor FROM recon_refund_cursors rc WHERE rc.account = a) AS refund_cursor,
       (SELECT listed_at FROM recon_payout_accounts pa WHERE pa.account = a) AS payouts_listed_at,
       (SELECT since FROM recon_payout_accounts pa WHERE pa.account = a) AS payout_since,
       EXISTS (SELECT 1 FROM recon_runs r WHERE r.account = a AND r.checkpoint > r.window_from AND r.checkpoint > $2) AS swept_recently,
       EXISTS (SELECT 1 FROM recon_refunds x WHERE x.account = a AND x.state = 'intent')
         OR EXISTS (SELECT 1 FROM recon_findings f WHERE f.category = 'duplicate_effect' AND f.account = a AND f.first_seen_at >= $3)
         OR EXISTS (SELECT 1 FROM recon_findings f WHERE f.account = a AND f.category = 'unstable_keys' AND f.state = 'open') AS pending,
       EXISTS (SELECT 1 FROM stripe_payouts p WHERE p.account = a AND p.automatic AND p.status NOT IN ('failed', 'canceled')
                  AND NOT EXISTS (SELECT 1 FROM recon_payouts r WHERE r.payout_id = p.payout_id)) AS payouts_awaited,
       EXISTS (SELECT 1 FROM recon_findings f WHERE f.account = a AND f.category = 'unpaid_effect' AND f.state = 'open')
         OR (EXISTS (SELECT 1 FROM stripe_payouts o WHERE o.account = a AND o.automatic)
             AND EXISTS (SELECT 1 FROM payments p WHERE p.account = a AND p.status = 'succeeded' AND p.amount > 0 AND p.created_at < $4
                            AND p.created_at >= coalesce((SELECT pa.unpaid_judged_to FROM recon_payout_accounts pa WHERE pa.account = a), $4))) AS unpaid_work
  FROM unnest($1::text[]) AS a`;

/**
 * The accounts with anything local in their window: a mirrored charge in what the slice
 * reads, a claim that changed, a payment or a refund row created in the slice. Their
 * sweep judges those, as a slice would.
 */
const LOCAL_EVIDENCE = `
SELECT t.account
  FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[], $5::timestamptz[])
       AS t(account, slice_from, slice_to, read_from, read_to)
 WHERE EXISTS (SELECT 1 FROM stripe_charges c WHERE c.account = t.account AND c.created >= t.read_from AND c.created < t.read_to)
    OR EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.account = t.account AND k.updated_at >= t.slice_from AND k.updated_at < t.slice_to)
    OR EXISTS (SELECT 1 FROM payments p WHERE p.account = t.account AND p.created_at >= t.slice_from AND p.created_at < t.slice_to)
    OR EXISTS (SELECT 1 FROM payment_refunds r WHERE r.account = t.account AND r.created_at >= t.slice_from AND r.created_at < t.read_to)
    -- What makes the refunds step list (refund-facts.ts hasRefundActivity): a refund claim
    -- active in the window or within Stripe's idempotency window before it.
    OR EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.account = t.account AND k.updated_at >= t.slice_from - interval '24 hours'
                  AND k.updated_at < t.read_to AND sweeper_claim_is_refund(k.operation, k.response_body))`;

export async function settleQuietAccounts(
  deps: SweepDeps,
  options: SweepOptions,
  accounts: readonly string[],
  lock: SweepLock,
): Promise<QuietOutcome> {
  const started = deps.clock();
  const t0 = Date.now();
  const states = await readStates(deps.pool, accounts, started, options);
  await markAbandoned(deps, accounts, started);
  const outcome: QuietOutcome = { reports: [], revoked: [], busy: [] };
  const plans: Plan[] = [];
  const unsettled: string[] = [];
  for (const account of accounts) {
    const state = states.get(account) as AccountState;
    const plan = planOf(account, state, options, started, {
      events: Boolean(deps.listChanges),
      refunds: Boolean(deps.listRefunds),
      payouts: Boolean(deps.payouts),
    });
    if (plan === 'unsettled') unsettled.push(account);
    else if (plan === 'own-sweep') outcome.busy.push({ account });
    else plans.push(plan);
  }
  const probed = await probe(deps, options, plans);
  outcome.revoked.push(...probed.revoked);
  outcome.reports.push(...(await recordInterrupted(deps, options, probed.interrupted, started)));
  const local = await withLocalEvidence(deps.pool, probed.candidates);
  for (const { plan, peek, payouts } of probed.busy)
    outcome.busy.push({ account: plan.account, prepared: preparedOf(plan, started, peek, payouts) });
  const quiet = probed.candidates.filter((c) => {
    if (!local.has(c.plan.account)) return true;
    outcome.busy.push({ account: c.plan.account, prepared: preparedOf(c.plan, started, c.peek) });
    return false;
  });
  const now = deps.clock();
  const runs: QuietRun[] = quiet.map(({ plan }) => ({
    plan,
    id: newRunId(started),
    changes: plan.before ? changesOf(plan, options, now) : null,
  }));
  const unreconciled = await recordQuiet(deps, options, lock, { started, now, runs });
  const counts = await openCounts(deps.pool, unsettled);
  const ms = Date.now() - t0;
  for (const run of runs)
    outcome.reports.push(quietReport(options, run, unreconciled.get(run.plan.account), ms, Boolean(deps.payouts)));
  for (const account of unsettled)
    outcome.reports.push({
      ...emptyReport(options, account, ''),
      unreconciled: counts.get(account) ?? 0,
      duration_ms: ms,
    });
  if (quiet.length > 0)
    deps.logger.info({ accounts: quiet.length, of: accounts.length }, 'accounts with nothing new settled together');
  return outcome;
}

async function readStates(
  db: Queryable,
  accounts: readonly string[],
  now: Date,
  options: SweepOptions,
): Promise<Map<string, AccountState>> {
  const { rows } = await db.query<{
    account: string;
    watermark: Date | null;
    cursor: Date | null;
    deep_read_at: Date | null;
    refund_cursor: Date | null;
    payouts_listed_at: Date | null;
    payout_since: Date | null;
    swept_recently: boolean;
    pending: boolean;
    payouts_awaited: boolean;
    unpaid_work: boolean;
  }>(STATES, [
    accounts,
    new Date(now.getTime() - options.deepReadDays * DAY_MS),
    new Date(now.getTime() - options.duplicateLookbackMs),
    new Date(now.getTime() - options.payoutGraceMs),
  ]);
  return new Map(
    rows.map((r) => [
      r.account,
      {
        watermark: r.watermark,
        cursor: r.cursor,
        deepReadAt: r.deep_read_at,
        refundCursor: r.refund_cursor,
        payoutsListedAt: r.payouts_listed_at,
        payoutSince: r.payout_since,
        sweptRecently: r.swept_recently,
        pending: r.pending,
        payoutsAwaited: r.payouts_awaited,
        unpaidWork: r.unpaid_work,
      },
    ]),
  );
}

/** Runs left `running` by a dead process: this run holds the locks now. */
async function markAbandoned(deps: SweepDeps, accounts: readonly string[], now: Date): Promise<void> {
  const { rows } = await deps.pool.query<{ account: string; n: number }>(
    `WITH marked AS (
       UPDATE recon_runs SET status = 'interrupted', finished_at = $2,
              error = coalesce(error, 'the process ended without finishing; a later run took over')
        WHERE account = ANY($1::text[]) AND status = 'running' RETURNING account)
     SELECT account, count(*)::int AS n FROM marked GROUP BY account`,
    [accounts, now],
  );
  for (const r of rows)
    deps.logger.warn(
      { account: r.account, abandoned: r.n },
      'marked runs left behind by a dead process as interrupted',
    );
}

/**
 * What an account's run would do, and whether the group can settle it: a window, an
 * events read of at most one day (one request), no deep re-read that would list Stripe,
 * nothing pending beyond the window.
 */
function planOf(
  account: string,
  state: AccountState,
  options: SweepOptions,
  started: Date,
  steps: { events: boolean; refunds: boolean; payouts: boolean },
): Plan | 'unsettled' | 'own-sweep' {
  const { events } = steps;
  const window = scheduledWindow({
    watermark: state.watermark,
    now: started,
    overlapMs: options.overlapMs,
    settleMs: options.settleMs,
    firstRunLookbackMs: options.firstRunLookbackMs,
  });
  if (!window) return 'unsettled';
  if (state.pending) return 'own-sweep';
  const payouts = payoutsPlan(state, options, started, steps.payouts);
  if (payouts === 'own-sweep') return 'own-sweep';
  // The refunds step goes on from its cursor: one behind this window has days to judge first.
  if (steps.refunds && state.refundCursor && state.refundCursor.getTime() < window.from.getTime()) return 'own-sweep';
  const read = widen(window, options.leaseMs, started);
  if (!events) return { account, state, window, read, before: null, cursor: null, recordDeepRead: false, payouts };
  const lag = Math.max(options.eventsLagMs, options.settleMs);
  const before = new Date(Math.floor((started.getTime() - lag) / 1000) * 1000);
  const cursor = state.cursor ?? new Date(started.getTime() - options.firstRunLookbackMs);
  const deepDue = deepReadDue(state, options, started);
  const oneDay =
    before.getTime() - cursor.getTime() <= DAY_MS && started.getTime() - cursor.getTime() <= EVENTS_SAFE_MS;
  if (!oneDay || (deepDue && state.sweptRecently)) return 'own-sweep';
  return { account, state, window, read, before, cursor, recordDeepRead: deepDue, payouts };
}

function deepReadDue(state: AccountState, options: SweepOptions, started: Date): boolean {
  if (options.deepReadEveryMs <= 0 || options.deepReadDays <= 0) return false;
  return !state.deepReadAt || started.getTime() - state.deepReadAt.getTime() >= options.deepReadEveryMs;
}

/**
 * The payouts step (payout-step.ts) lists an account's payouts once SWEEPER_PAYOUT_EVERY has
 * passed since its last listing. The group lists them too; an account with a payout to
 * reconcile or payments to judge unpaid takes its own sweep. Null: nothing to list.
 */
function payoutsPlan(
  state: AccountState,
  options: SweepOptions,
  started: Date,
  step: boolean,
): TimeWindow | null | 'own-sweep' {
  if (!step || payoutsListedRecently(state, options, started)) return null;
  if (state.payoutsAwaited || state.unpaidWork) return 'own-sweep';
  return payoutListing(state, options, started);
}

/** payout-step.ts listingWindow with no payout awaited: the grace, back to the end of the last listing. */
function payoutListing(state: AccountState, options: SweepOptions, started: Date): TimeWindow {
  const from = started.getTime() - options.payoutGraceMs;
  const listed = state.payoutsListedAt?.getTime() ?? from;
  return { from: new Date(Math.min(from, listed)), to: started };
}

/** What the account's own sweep starts from. */
function preparedOf(plan: Plan, started: Date, peek: ChargePeek | undefined, payouts?: NormalizedPayout[]): Prepared {
  return {
    started,
    window: plan.window,
    ...(peek ? { peek } : {}),
    ...(payouts && plan.payouts ? { payouts: { window: plan.payouts, listed: payouts } } : {}),
  };
}

/** Where the events cursor is after this run: read up to `before`, or left where it was. */
function cursorAfter(plan: Plan): Date | null {
  if (!plan.before || !plan.cursor) return null;
  return plan.cursor < plan.before ? plan.before : plan.cursor;
}

type Probed = { plan: Plan; peek: ChargePeek };

interface ProbeOutcome {
  /** Nothing new at Stripe: settled here unless something local lies in the window. */
  candidates: Probed[];
  busy: Array<{ plan: Plan; peek?: ChargePeek; payouts?: NormalizedPayout[] }>;
  revoked: string[];
  /** Stopped (SIGTERM, the run deadline) while their requests were out. */
  interrupted: Plan[];
}

/** A quiet account's run: its id, and its late-changes report (null: no events step). */
interface QuietRun {
  plan: Plan;
  id: string;
  changes: ChangesReport | null;
}

/**
 * The group's Stripe requests, all at once (the budgets pace them): each account's
 * window in one request, then its events only when the window is empty, then its payouts
 * when their listing is due.
 */
async function probe(deps: SweepDeps, options: SweepOptions, plans: readonly Plan[]): Promise<ProbeOutcome> {
  const out: ProbeOutcome = { candidates: [], busy: [], revoked: [], interrupted: [] };
  await Promise.all(plans.map((plan) => probeOne(deps, options, plan, out)));
  return out;
}

/** One account of the group: busy at the first sign of anything, a candidate when nothing is new. */
async function probeOne(deps: SweepDeps, options: SweepOptions, plan: Plan, out: ProbeOutcome): Promise<void> {
  const peekCharges = deps.peekCharges as NonNullable<SweepDeps['peekCharges']>;
  let peek: ChargePeek | undefined;
  try {
    peek = await peekCharges(plan.account, plan.read, options.signal);
    if (!peek.complete || peek.charges.length > 0 || peek.malformed.length > 0) {
      out.busy.push({ plan, peek });
      return;
    }
    // Any event at all: its own sweep reads them again and judges what they point at.
    if (await anyEvent(deps, options, plan)) {
      out.busy.push({ plan, peek });
      return;
    }
    if (plan.payouts && deps.payouts) {
      const payouts = await listedPayouts(deps.payouts, plan.account, plan.payouts, options.signal);
      // Any payout: its own sweep mirrors and judges them, from this listing.
      if (payouts.length > 0) {
        out.busy.push({ plan, peek, payouts });
        return;
      }
    }
    out.candidates.push({ plan, peek });
  } catch (error) {
    if (options.signal?.aborted) out.interrupted.push(plan);
    else if (error instanceof AccountUnavailableError) out.revoked.push(plan.account);
    // Its own sweep meets the error again, and reports and records it as any failure.
    else out.busy.push({ plan, ...(peek ? { peek } : {}) });
  }
}

async function anyEvent(deps: SweepDeps, options: SweepOptions, plan: Plan): Promise<boolean> {
  if (!plan.before || !plan.cursor || !deps.listChanges || plan.cursor >= plan.before) return false;
  const window = {
    after: Math.floor(plan.cursor.getTime() / 1000),
    overlapSeconds: Math.round(options.eventsOverlapMs / 1000),
    before: Math.floor(plan.before.getTime() / 1000),
  };
  return (await deps.listChanges(plan.account, window, options.signal)).length > 0;
}

async function listedPayouts(
  source: PayoutSource,
  account: string,
  window: TimeWindow,
  signal: AbortSignal | undefined,
): Promise<NormalizedPayout[]> {
  const listed: NormalizedPayout[] = [];
  for await (const page of source.listPayouts(account, window, signal)) listed.push(...page);
  return listed;
}

async function withLocalEvidence(db: Queryable, candidates: readonly Probed[]): Promise<Set<string>> {
  if (candidates.length === 0) return new Set();
  const plans = candidates.map((c) => c.plan);
  const { rows } = await db.query<{ account: string }>(LOCAL_EVIDENCE, [
    plans.map((p) => p.account),
    plans.map((p) => p.window.from),
    plans.map((p) => p.window.to),
    plans.map((p) => p.read.from),
    plans.map((p) => p.read.to),
  ]);
  return new Set(rows.map((r) => r.account));
}

/**
 * The quiet accounts' runs, in one transaction: each a succeeded run row over its window
 * (its coverage, for later events and deep re-reads), its watermark at the window's end,
 * its events cursor at `before`, a first run's deep-read record; as their own sweeps would
 * have written them. Returns each account's open findings.
 */
async function recordQuiet(
  deps: SweepDeps,
  options: SweepOptions,
  lock: SweepLock,
  batch: { started: Date; now: Date; runs: readonly QuietRun[] },
): Promise<Map<string, number>> {
  const { started, now, runs } = batch;
  if (runs.length === 0) return new Map();
  const plans = runs.map((r) => r.plan);
  const ids = runs.map((r) => r.id);
  const counts = JSON.stringify(emptyCounts());
  return inTransaction(deps.pool, async (client) => {
    const { rows } = await client.query<{ account: string; unreconciled: number }>(
      `INSERT INTO recon_runs (id, mode, account, shard, window_from, window_to, status, checkpoint, findings, repaired,
                               unreconciled, started_at, finished_at, changes)
       SELECT t.id, 'run', t.account, $6, t.window_from, t.window_to, 'succeeded', t.window_to, $7::jsonb, $7::jsonb,
              (SELECT count(*)::int FROM recon_findings f WHERE f.account = t.account AND f.state = 'open'), $8, $9, t.changes::jsonb
         FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[])
              AS t(id, account, window_from, window_to, changes)
       RETURNING account, unreconciled`,
      [
        ids,
        plans.map((p) => p.account),
        plans.map((p) => p.window.from),
        plans.map((p) => p.window.to),
        runs.map((r) => (r.changes ? JSON.stringify(r.changes) : null)),
        formatShard(options.shard),
        counts,
        started,
        now,
      ],
    );
    await advanceAll(client, plans, ids, now, options);
    if (deps.listRefunds) await advanceRefundCursors(client, plans, ids, now);
    await notePayoutsListed(client, plans, ids, { started, now, graceMs: options.payoutGraceMs });
    await lock.confirmHeld(client);
    return new Map(rows.map((r) => [r.account, r.unreconciled]));
  });
}

/** Watermarks, events cursors (forwards only) and first deep-read records of the quiet accounts. */
async function advanceAll(
  db: Queryable,
  plans: readonly Plan[],
  ids: readonly string[],
  now: Date,
  options: SweepOptions,
): Promise<void> {
  await db.query(
    `INSERT INTO recon_watermarks AS w (account, shard, watermark, run_id, updated_at)
     SELECT t.account, '', t.watermark, t.run_id, $4 FROM unnest($1::text[], $2::timestamptz[], $3::text[]) AS t(account, watermark, run_id)
     ON CONFLICT (account, shard) DO UPDATE SET watermark = EXCLUDED.watermark, run_id = EXCLUDED.run_id, updated_at = EXCLUDED.updated_at
      WHERE w.watermark < EXCLUDED.watermark`,
    [plans.map((p) => p.account), plans.map((p) => p.window.to), ids, now],
  );
  const read = plans.flatMap((p, i) => {
    const cursor = cursorAfter(p);
    return cursor && p.cursor && cursor > p.cursor ? [{ account: p.account, cursor, id: ids[i] as string }] : [];
  });
  if (read.length > 0) {
    await db.query(
      `INSERT INTO recon_event_cursors AS c (account, cursor, run_id, updated_at)
       SELECT t.account, t.cursor, t.run_id, $4 FROM unnest($1::text[], $2::timestamptz[], $3::text[]) AS t(account, cursor, run_id)
       ON CONFLICT (account) DO UPDATE SET cursor = EXCLUDED.cursor, run_id = EXCLUDED.run_id, updated_at = EXCLUDED.updated_at
        WHERE c.cursor < EXCLUDED.cursor`,
      [read.map((r) => r.account), read.map((r) => r.cursor), read.map((r) => r.id), now],
    );
  }
  const deep = plans.flatMap((p, i) => (p.recordDeepRead ? [{ plan: p, id: ids[i] as string }] : []));
  if (deep.length > 0) {
    const range = deepReadRange(now, options);
    await db.query(
      `INSERT INTO recon_deep_reads (account, last_at, window_from, window_to, hours, differing, run_id)
       SELECT t.account, $3, $4, t.window_to, 0, 0, t.run_id FROM unnest($1::text[], $2::text[], $5::timestamptz[]) AS t(account, run_id, window_to)
       ON CONFLICT (account) DO UPDATE SET last_at = EXCLUDED.last_at, window_from = EXCLUDED.window_from,
              window_to = EXCLUDED.window_to, hours = 0, differing = 0, run_id = EXCLUDED.run_id`,
      [deep.map((d) => d.plan.account), deep.map((d) => d.id), now, range.from, deep.map((d) => d.plan.window.to)],
    );
  }
}

/**
 * The payout accounts whose listing the group made and found empty, noted as payout-step.ts
 * notes such a listing: listed to the run's start, payments judged unpaid up to the grace before it.
 */
async function notePayoutsListed(
  db: Queryable,
  plans: readonly Plan[],
  ids: readonly string[],
  at: { started: Date; now: Date; graceMs: number },
): Promise<void> {
  const unpaidJudgedTo = new Date(at.started.getTime() - at.graceMs);
  const notes = plans.flatMap((p, i) =>
    p.payouts
      ? [
          {
            account: p.account,
            since: p.state.payoutSince ?? p.payouts.from,
            unpaidJudgedTo,
            listedAt: at.started,
            runId: ids[i] as string,
          },
        ]
      : [],
  );
  await notePayoutAccounts(db, notes, at.now);
}

/** The refunds cursors of the quiet accounts: their windows had no refund activity, as a quiet day of refund-step.ts. */
async function advanceRefundCursors(
  db: Queryable,
  plans: readonly Plan[],
  ids: readonly string[],
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO recon_refund_cursors AS c (account, cursor, run_id, updated_at)
     SELECT t.account, t.cursor, t.run_id, $4 FROM unnest($1::text[], $2::timestamptz[], $3::text[]) AS t(account, cursor, run_id)
     ON CONFLICT (account) DO UPDATE SET cursor = GREATEST(c.cursor, EXCLUDED.cursor), run_id = EXCLUDED.run_id,
            updated_at = EXCLUDED.updated_at`,
    [plans.map((p) => p.account), plans.map((p) => p.window.to), ids, now],
  );
}

/** The deep re-read's range from its whole first hour, as deep-read.ts aligns it. */
function deepReadRange(now: Date, options: SweepOptions): { from: Date } {
  const from = now.getTime() - options.deepReadDays * DAY_MS;
  return { from: new Date(Math.floor(from / HOUR_MS) * HOUR_MS) };
}

/** The late-changes part of a quiet account's report: no event, the cursor moved on, a first deep re-read with nothing to compare. */
function changesOf(plan: Plan, options: SweepOptions, now: Date): ChangesReport {
  const cursor = cursorAfter(plan);
  const changes: ChangesReport = {
    events: 0,
    charges: 0,
    not_swept: 0,
    found: {},
    repaired: {},
    malformed_events: 0,
    cursor: cursor?.toISOString() ?? null,
    cursor_lag_seconds: cursor ? Math.round((now.getTime() - cursor.getTime()) / 1000) : null,
  };
  if (plan.recordDeepRead) {
    const from = deepReadRange(now, options).from;
    const hours = Math.max(0, Math.ceil((plan.window.to.getTime() - from.getTime()) / HOUR_MS));
    changes.deep_read = {
      from: from.toISOString(),
      to: plan.window.to.toISOString(),
      hours: 0,
      differing: 0,
      not_swept_hours: hours,
      charges: 0,
      found: {},
      repaired: {},
    };
  }
  return changes;
}

function quietReport(
  options: SweepOptions,
  run: QuietRun,
  unreconciled: number | undefined,
  durationMs: number,
  payoutsStep: boolean,
): SweepReport {
  const { plan } = run;
  return {
    ...emptyReport(options, plan.account, run.id),
    window: { from: plan.window.from.toISOString(), to: plan.window.to.toISOString() },
    unreconciled: unreconciled ?? 0,
    duration_ms: durationMs,
    ...(run.changes ? { changes: run.changes } : {}),
    // As before the payouts step: a quiet account's report names the step only when the group listed its payouts.
    ...(payoutsStep && plan.payouts ? { payouts: emptyPayoutsReport() } : {}),
  };
}

/**
 * Accounts whose run was stopped (SIGTERM, SWEEPER_RUN_DEADLINE) while its window was
 * being read: recorded `interrupted` with nothing committed, as their own sweep would
 * have been; the next run starts from the same watermark.
 */
async function recordInterrupted(
  deps: SweepDeps,
  options: SweepOptions,
  plans: readonly Plan[],
  started: Date,
): Promise<SweepReport[]> {
  if (plans.length === 0) return [];
  const ids = plans.map(() => newRunId(started));
  const { rows } = await deps.pool.query<{ account: string; unreconciled: number }>(
    `INSERT INTO recon_runs (id, mode, account, shard, window_from, window_to, status, checkpoint, unreconciled, started_at, finished_at)
     SELECT t.id, 'run', t.account, $5, t.window_from, t.window_to, 'interrupted', t.window_from,
            (SELECT count(*)::int FROM recon_findings f WHERE f.account = t.account AND f.state = 'open'), $6, $7
       FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[]) AS t(id, account, window_from, window_to)
     RETURNING account, unreconciled`,
    [
      ids,
      plans.map((p) => p.account),
      plans.map((p) => p.window.from),
      plans.map((p) => p.window.to),
      formatShard(options.shard),
      started,
      deps.clock(),
    ],
  );
  const open = new Map(rows.map((r) => [r.account, r.unreconciled]));
  deps.logger.warn({ accounts: plans.length }, 'sweep interrupted; the next run resumes from the last committed slice');
  return plans.map((plan, i) => ({
    ...emptyReport(options, plan.account, ids[i] as string),
    window: { from: plan.window.from.toISOString(), to: plan.window.to.toISOString() },
    unreconciled: open.get(plan.account) ?? 0,
    status: 'interrupted' as const,
  }));
}

/** Open findings of some accounts, in one statement. */
async function openCounts(db: Queryable, accounts: readonly string[]): Promise<Map<string, number>> {
  if (accounts.length === 0) return new Map();
  const { rows } = await db.query<{ account: string; n: number }>(
    `SELECT account, count(*)::int AS n FROM recon_findings WHERE account = ANY($1::text[]) AND state = 'open' GROUP BY account`,
    [accounts],
  );
  return new Map(rows.map((r) => [r.account, r.n]));
}

function payoutsListedRecently(state: AccountState, options: SweepOptions, started: Date): boolean {
  const listed = state.payoutsListedAt;
  return listed !== null && started.getTime() - listed.getTime() < options.payoutEveryMs;
}
