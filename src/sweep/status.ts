import type { Queryable } from '../db/pool.js';
import { LOCK_CLASS } from '../db/locks.js';
import { readCompletenessAll, type AccountCompleteness, type CompletenessOptions } from './completeness.js';
import { slicesOf } from './window.js';
import { readAccountsStatus, type AccountsStatus } from './accounts.js';
import { ExitCode } from '../exit-codes.js';

export interface SweepStatus {
  watermarks: Array<{ account: string; shard: string; watermark: string; lag_seconds: number }>;
  last_runs: Array<{
    id: string;
    mode: string;
    account: string;
    status: string;
    started_at: string;
    finished_at: string | null;
    unreconciled: number | null;
    error: string | null;
  }>;
  open_findings: Record<string, Record<string, number>>;
  unreconciled: number;
  claims: { count: number; in_flight: number; oldest_created_at: string | null; oldest_age_seconds: number | null };
  /**
   * How the claim library's takes ended, per tenant, summed over the days kept
   * (claim_outcomes): `created`, `replayed`, `in_progress`, `fingerprint_mismatch`, `stolen`,
   * `quota_exceeded`; `since` is the oldest day counted.
   */
  claim_outcomes: { since: string | null; tenants: Record<string, Record<string, number>> };
  /** Runs in state `running`: where each one is now. */
  live_runs: LiveRun[];
  /** Per account, when asked for (docs/judgement.md "Completeness"). */
  completeness?: AccountCompleteness[];
  /** Connected accounts discovered (SWEEPER_ACCOUNTS=connected): active, inactive, the latest to leave. */
  accounts: AccountsStatus;
  /** The accounts whose scheduled watermark is furthest behind, the most lagging first (at most 10). */
  most_lagging: Array<{ account: string; watermark: string; lag_seconds: number }>;
}

/** How many accounts `most_lagging` lists. */
export const MOST_LAGGING = 10;

/**
 * A run in progress, from what its committed slices wrote (`recon_runs.checkpoint`,
 * `charges_scanned`), so it is as fresh as its last slice. `lock_held` says whether a
 * process still holds the account's sweep lock: a `running` row without it was left by
 * a process that died, and the next run of the account marks it interrupted.
 */
export interface LiveRun {
  id: string;
  mode: string;
  account: string;
  window: { from: string; to: string };
  checkpoint: string;
  /** Whole slices of the window up to the checkpoint, of all its slices (SWEEPER_SLICE), when the slice length is known. */
  slices_done: number | null;
  slices_total: number | null;
  /** How far the checkpoint is through the window, 0..100. */
  percent: number;
  charges_scanned: number;
  started_at: string;
  age_seconds: number;
  lock_held: boolean;
}

export interface StatusOptions {
  /** SWEEPER_SLICE: live runs are shown in slices. */
  sliceMs?: number;
  /** Read each account's completeness too: the configured accounts and the options. */
  completeness?: CompletenessOptions & { accounts: readonly string[] };
}

/** The claim library's outcomes per tenant over the days kept, and the first of those days. */
async function readClaimOutcomes(db: Queryable): Promise<SweepStatus['claim_outcomes']> {
  const outcomes = await db.query<{ tenant_id: string; outcome: string; n: string; since: Date }>(
    `SELECT tenant_id, outcome, sum(count)::text AS n, min(day) AS since FROM claim_outcomes GROUP BY 1, 2 ORDER BY 1, 2`,
  );
  const claimOutcomes: SweepStatus['claim_outcomes'] = { since: null, tenants: {} };
  for (const r of outcomes.rows) {
    (claimOutcomes.tenants[r.tenant_id] ??= {})[r.outcome] = Number(r.n);
    const day = new Date(r.since).toISOString().slice(0, 10);
    if (claimOutcomes.since === null || day < claimOutcomes.since) claimOutcomes.since = day;
  }
  return claimOutcomes;
}

function claimStoreOf(c: Awaited<ReturnType<typeof readClaimStore>> | undefined, now: Date): SweepStatus['claims'] {
  return {
    count: c?.count ?? 0,
    in_flight: c?.in_flight ?? 0,
    oldest_created_at: c?.oldest ? c.oldest.toISOString() : null,
    oldest_age_seconds: c?.oldest ? Math.round((now.getTime() - c.oldest.getTime()) / 1000) : null,
  };
}

/** What an operator asks first: how far behind, what ran, what is open, how big the claim store is. */
export async function readStatus(db: Queryable, now: Date, options: StatusOptions = {}): Promise<SweepStatus> {
  const watermarks = await db.query<{ account: string; shard: string; watermark: Date }>(
    'SELECT account, shard, watermark FROM recon_watermarks ORDER BY account, shard',
  );
  const runs = await db.query(
    `SELECT DISTINCT ON (account, mode) id, mode, account, status, started_at, finished_at, unreconciled, error
       FROM recon_runs ORDER BY account, mode, started_at DESC, id DESC`,
  );
  const open = await db.query<{ account: string; category: string; n: number }>(
    `SELECT account, category, count(*)::int AS n FROM recon_findings WHERE state = 'open' GROUP BY account, category ORDER BY 1, 2`,
  );
  const claims = { rows: [await readClaimStore(db)] };
  const claimOutcomes = await readClaimOutcomes(db);
  const live = await readLiveRuns(db, now, options.sliceMs);
  const completeness = options.completeness
    ? await readCompletenessAll(db, options.completeness.accounts, options.completeness)
    : undefined;
  const accounts = await readAccountsStatus(db);
  const openByAccount: Record<string, Record<string, number>> = {};
  for (const row of open.rows) (openByAccount[row.account] ??= {})[row.category] = row.n;
  const c = claims.rows[0];
  const marks = watermarks.rows.map((w) => ({
    account: w.account,
    shard: w.shard,
    watermark: w.watermark.toISOString(),
    lag_seconds: Math.round((now.getTime() - w.watermark.getTime()) / 1000),
  }));
  return {
    watermarks: marks,
    most_lagging: [...marks]
      .sort((a, b) => b.lag_seconds - a.lag_seconds || a.account.localeCompare(b.account))
      .slice(0, MOST_LAGGING)
      .map(({ account, watermark, lag_seconds }) => ({ account, watermark, lag_seconds })),
    accounts,
    last_runs: runs.rows.map((r) => ({
      id: r.id,
      mode: r.mode,
      account: r.account,
      status: r.status,
      started_at: (r.started_at as Date).toISOString(),
      finished_at: r.finished_at ? (r.finished_at as Date).toISOString() : null,
      unreconciled: r.unreconciled,
      error: r.error,
    })),
    open_findings: openByAccount,
    claim_outcomes: claimOutcomes,
    unreconciled: open.rows.reduce((sum, r) => sum + r.n, 0),
    claims: claimStoreOf(c, now),
    live_runs: live,
    ...(completeness ? { completeness } : {}),
  };
}

async function readLiveRuns(db: Queryable, now: Date, sliceMs: number | undefined): Promise<LiveRun[]> {
  // The sweep lock of lock.ts: pg_advisory_lock(LOCK_CLASS, hashtext('sweep:' || account)),
  // which pg_locks shows as classid = key 1, objid = key 2 as an unsigned 32-bit number.
  const { rows } = await db.query<{
    id: string;
    mode: string;
    account: string;
    window_from: Date;
    window_to: Date;
    checkpoint: Date;
    charges_scanned: string;
    started_at: Date;
    lock_held: boolean;
  }>(
    `SELECT r.id, r.mode, r.account, r.window_from, r.window_to, r.checkpoint, r.charges_scanned, r.started_at,
            EXISTS (SELECT 1 FROM pg_locks l
                     WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                       AND l.classid::bigint = $1 AND l.objid::bigint = (hashtext('sweep:' || r.account)::bigint & 4294967295)) AS lock_held
       FROM recon_runs r WHERE r.status = 'running' ORDER BY r.started_at, r.id`,
    [LOCK_CLASS],
  );
  return rows.map((r) => {
    const span = r.window_to.getTime() - r.window_from.getTime();
    const done = Math.max(0, r.checkpoint.getTime() - r.window_from.getTime());
    const all = sliceMs ? slicesOf({ from: r.window_from, to: r.window_to }, sliceMs) : null;
    // Whole slices only: a dense slice checkpoints after each of its parts.
    const slices = all ? { done: all.filter((s) => s.to <= r.checkpoint).length, total: all.length } : null;
    return {
      id: r.id,
      mode: r.mode,
      account: r.account,
      window: { from: r.window_from.toISOString(), to: r.window_to.toISOString() },
      checkpoint: r.checkpoint.toISOString(),
      slices_done: slices?.done ?? null,
      slices_total: slices?.total ?? null,
      percent: span > 0 ? Math.floor((100 * done) / span) : 100,
      charges_scanned: Number(r.charges_scanned),
      started_at: r.started_at.toISOString(),
      age_seconds: Math.max(0, Math.round((now.getTime() - r.started_at.getTime()) / 1000)),
      lock_held: r.lock_held,
    };
  });
}

export class FindingNotFoundError extends Error {
  override readonly name = 'FindingNotFoundError';
  readonly exitCode = ExitCode.usage;
}

/** `--not-duplicate` on a finding that is not about a set of charges: bad usage. */
export class NotADuplicateError extends Error {
  override readonly name = 'NotADuplicateError';
  readonly exitCode = ExitCode.usage;
}

/** The findings about a set of charges that a person may close as not a duplicate (`--not-duplicate`). */
export const DUPLICATE_SET_CATEGORIES = ['duplicate_effect', 'suspected_duplicate'] as const;

/** How a person closes findings: resolved or ignored, or (duplicates only) not a duplicate. */
export interface CloseFindings {
  note: string;
  actor: string;
  now: Date;
  state?: 'resolved' | 'ignored';
  /** The person says these charges are not a duplicate: that set (or any part of it) is never raised again. */
  notDuplicate?: boolean;
}

/** What closing several findings did: the ones closed, and why each other one was not. */
export interface ClosedFindings {
  closed: number[];
  refused: Array<{ id: number; reason: string }>;
}

/**
 * People close open findings, one or many, in one statement: each finding closed gets
 * its own audit row with the actor. A finding someone else closed meanwhile is left as
 * they left it (the row is rechecked under its lock) and reported with who closed it.
 */
export async function resolveFindings(
  db: Queryable,
  args: CloseFindings & { ids: readonly number[] },
): Promise<ClosedFindings> {
  const state = args.state ?? 'resolved';
  const action = args.notDuplicate ? 'not_duplicate' : state;
  const ids = [...new Set(args.ids)];
  const { rows } = await db.query<{ id: string }>(
    `WITH updated AS (
       UPDATE recon_findings
          SET state = $2, closed_at = $3, closed_by = $4, note = $5,
              details = CASE WHEN $6 THEN details || '{"verdict": "not_duplicate"}'::jsonb ELSE details END
        WHERE id = ANY($1::bigint[]) AND state = 'open' AND (NOT $6 OR category = ANY($8::text[])) RETURNING id
     ), audit AS (
       INSERT INTO recon_repairs (finding_id, run_id, action, before, after, actor, at)
       SELECT id, NULL, $7, jsonb_build_object('state', 'open'), jsonb_build_object('state', $2::text, 'note', $5::text), $4, $3
         FROM updated
     )
     SELECT id FROM updated ORDER BY id`,
    [ids, state, args.now, args.actor, args.note, Boolean(args.notDuplicate), action, DUPLICATE_SET_CATEGORIES],
  );
  const closed = rows.map((r) => Number(r.id));
  const rest = ids.filter((id) => !closed.includes(id));
  if (rest.length === 0) return { closed, refused: [] };
  const found = await db.query<{ id: string; state: string; closed_by: string | null; category: string }>(
    'SELECT id, state, closed_by, category FROM recon_findings WHERE id = ANY($1::bigint[])',
    [rest],
  );
  const byId = new Map(found.rows.map((r) => [Number(r.id), r]));
  const refused = rest.map((id) => {
    const finding = byId.get(id);
    if (!finding) return { id, reason: `no finding with id ${id}` };
    if (args.notDuplicate && !(DUPLICATE_SET_CATEGORIES as readonly string[]).includes(finding.category))
      return {
        id,
        reason: `finding ${id} is ${finding.category}: not-a-duplicate is for ${DUPLICATE_SET_CATEGORIES.join(' and ')} findings`,
      };
    return {
      id,
      reason: `finding ${id} is already ${finding.state}${finding.closed_by ? ` (by ${finding.closed_by})` : ''}`,
    };
  });
  return { closed, refused };
}

/** A person closes an open finding; the audit keeps who, when and why. */
export async function resolveFinding(
  db: Queryable,
  args: CloseFindings & { id: number },
): Promise<{ previous: string }> {
  const { refused } = await resolveFindings(db, { ...args, ids: [args.id] });
  const problem = refused[0];
  if (!problem) return { previous: 'open' };
  if (problem.reason.startsWith('no finding'))
    throw new FindingNotFoundError(`no finding with id ${args.id}: see \`sweeper status\` or \`sweeper report\``);
  if (problem.reason.includes('not-a-duplicate'))
    throw new NotADuplicateError(
      `${problem.reason.replace('not-a-duplicate', '--not-duplicate')}; close it without --not-duplicate`,
    );
  throw new FindingNotFoundError(`${problem.reason}: only open findings are resolved`);
}

/** Below this estimate the claim store is counted exactly; above it, the planner's estimate is the count. */
const EXACT_COUNT_BELOW = 100_000;

/**
 * The claim store's size without scanning it (every run publishes this): PostgreSQL's
 * row estimate of the day partitions (exact while small), in-flight claims through
 * their partial index, and the oldest claim from the oldest day partition holding one.
 */
async function readClaimStore(db: Queryable): Promise<{ count: number; in_flight: number; oldest: Date | null }> {
  const { rows: parts } = await db.query<{ name: string; estimate: number }>(
    `SELECT c.relname AS name, greatest(c.reltuples, 0)::bigint AS estimate
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'idempotency_keys'::regclass ORDER BY c.relname`,
  );
  const estimate = parts.reduce((n, p) => n + Number(p.estimate), 0);
  const { rows: counts } = await db.query<{ count: number; in_flight: number }>(
    `SELECT CASE WHEN $1::bigint < $2 THEN (SELECT count(*) FROM idempotency_keys) ELSE $1::bigint END AS count,
            (SELECT count(*) FROM idempotency_keys WHERE status = 'in_flight') AS in_flight`,
    [estimate, EXACT_COUNT_BELOW],
  );
  let oldest: Date | null = null;
  // Partitions are named by day (idempotency_keys_pYYYYMMDD): the first one with a row holds the oldest claim.
  for (const part of parts) {
    const { rows } = await db.query<{ oldest: Date | null }>(
      `SELECT min(created_at) AS oldest FROM ${quoteIdent(part.name)}`,
    );
    if (rows[0]?.oldest) {
      oldest = rows[0].oldest;
      break;
    }
  }
  return { count: Number(counts[0]?.count ?? 0), in_flight: Number(counts[0]?.in_flight ?? 0), oldest };
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
