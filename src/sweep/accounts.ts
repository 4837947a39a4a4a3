import type { Queryable } from '../db/pool.js';
import { forOperator, type Logger } from '../log.js';

/**
 * A platform's connected accounts (SWEEPER_ACCOUNTS=connected, docs/platforms.md): listed
 * by Stripe each run and remembered in `recon_accounts` with when each was first and last
 * seen. One Stripe no longer lists, or that refuses the platform (403), is inactive until
 * listed again; its watermark and events cursor stay where they were.
 */

/** What one complete listing changed. */
export interface Discovery {
  /** The accounts to sweep: listed now (the remembered ones that are still listed, and the new ones), sorted. */
  active: string[];
  /** Listed for the first time. */
  added: string[];
  /** Listed again after being inactive. */
  returned: string[];
  /** Remembered as active, no longer listed: inactive from now on. */
  unlisted: string[];
}

export type InactiveReason = 'unlisted' | 'revoked';

/**
 * Compares one complete listing with what is remembered, for the accounts `owns` says
 * are this process's (a shard's own), and, unless `dryRun`, records it in one statement:
 * new accounts added, listed ones seen (and made active again), remembered active ones
 * no longer listed made inactive. A listing must be complete: a partial one would read
 * as accounts that left.
 */
export async function recordDiscovery(
  db: Queryable,
  listed: readonly string[],
  options: { now: Date; owns?: (account: string) => boolean; dryRun?: boolean },
): Promise<Discovery> {
  const owns = options.owns ?? (() => true);
  const mine = [...new Set(listed.filter(owns))].sort();
  const { rows } = await db.query<{ account: string; active: boolean }>('SELECT account, active FROM recon_accounts');
  const known = new Map(rows.filter((r) => owns(r.account)).map((r) => [r.account, r.active]));
  const listedSet = new Set(mine);
  const discovery: Discovery = {
    active: mine,
    added: mine.filter((a) => !known.has(a)),
    returned: mine.filter((a) => known.get(a) === false),
    unlisted: [...known].filter(([a, active]) => active && !listedSet.has(a)).map(([a]) => a),
  };
  if (!options.dryRun && (mine.length > 0 || discovery.unlisted.length > 0)) {
    await db.query(
      `WITH seen AS (
         INSERT INTO recon_accounts AS r (account, first_seen_at, last_seen_at, active, updated_at)
         SELECT a, $3, $3, true, $3 FROM unnest($1::text[]) AS a
         ON CONFLICT (account) DO UPDATE SET last_seen_at = $3, active = true, inactive_since = NULL,
                inactive_reason = NULL, updated_at = $3
       )
       UPDATE recon_accounts SET active = false, inactive_since = $3, inactive_reason = 'unlisted', updated_at = $3
        WHERE account = ANY($2::text[]) AND active`,
      [mine, discovery.unlisted, options.now],
    );
  }
  return discovery;
}

/**
 * Connected accounts that answered 403 (access revoked): inactive until Stripe lists them
 * again. One not discovered before (named in SWEEPER_ACCOUNTS) is remembered as inactive too.
 */
export async function markRevoked(db: Queryable, accounts: readonly string[], now: Date): Promise<void> {
  if (accounts.length === 0) return;
  await db.query(
    `INSERT INTO recon_accounts AS r (account, first_seen_at, last_seen_at, active, inactive_since, inactive_reason, updated_at)
     SELECT a, $2, $2, false, $2, 'revoked', $2 FROM unnest($1::text[]) AS a
     ON CONFLICT (account) DO UPDATE SET active = false, inactive_since = $2, inactive_reason = 'revoked', updated_at = $2
      WHERE r.active OR r.inactive_reason IS DISTINCT FROM 'revoked'`,
    [[...new Set(accounts)], now],
  );
}

/** The remembered active accounts: what a run sweeps when Stripe's listing could not be read. */
export async function rememberedActive(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ account: string }>(
    'SELECT account FROM recon_accounts WHERE active ORDER BY account',
  );
  return rows.map((r) => r.account);
}

/** Whether `account` is a connected account discovered before (a `--account` for `connected`). */
export async function isDiscovered(db: Queryable, account: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM recon_accounts WHERE account = $1', [account]);
  return rows.length > 0;
}

/** The accounts a run sweeps, and what discovering them found. */
export interface AccountSelection {
  accounts: string[];
  /** The listing and what it changed; null: no `connected` in SWEEPER_ACCOUNTS, or the listing failed. */
  discovery: Discovery | null;
  /** `GET /v1/accounts` could not be read whole: the remembered active accounts are swept, and the run fails at the end. */
  listingError?: Error;
}

export interface SelectionDeps {
  pool: Queryable;
  logger: Logger;
  /** The provider's listing of connected accounts (`GET /v1/accounts`, every page). */
  listAccounts?: (signal?: AbortSignal) => Promise<string[]>;
}

/**
 * The named accounts this process owns (`owns`: its shard's), and with `connected` every
 * connected account Stripe lists now that it owns, the listing recorded (recordDiscovery)
 * with one log line per account that left or came back, one for the new ones. A listing
 * that fails sweeps the remembered active accounts instead: a platform's sweep does not
 * stop because one listing did not come through.
 */
export async function selectAccounts(
  deps: SelectionDeps,
  options: {
    named: readonly string[];
    connected: boolean;
    owns: (account: string) => boolean;
    now: Date;
    dryRun: boolean;
    signal?: AbortSignal;
  },
): Promise<AccountSelection> {
  const named = [...new Set(options.named)].filter(options.owns);
  if (!options.connected) return { accounts: named, discovery: null };
  if (!deps.listAccounts) throw new Error('SWEEPER_ACCOUNTS=connected needs a provider that lists connected accounts');
  let listed: string[];
  try {
    listed = await deps.listAccounts(options.signal);
  } catch (error) {
    const listingError = error instanceof Error ? error : new Error(String(error));
    const remembered = (await rememberedActive(deps.pool)).filter(options.owns);
    deps.logger.error(
      forOperator({ error: listingError.message, remembered: remembered.length }),
      'could not list the connected accounts (GET /v1/accounts); sweeping the ones remembered as active, and this run fails',
    );
    return { accounts: union(named, remembered), discovery: null, listingError };
  }
  const discovery = await recordDiscovery(deps.pool, listed, {
    now: options.now,
    owns: options.owns,
    dryRun: options.dryRun,
  });
  logDiscovery(deps.logger, discovery);
  return { accounts: union(named, discovery.active), discovery };
}

function union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}

function logDiscovery(logger: Logger, d: Discovery): void {
  if (d.added.length > 0)
    logger.info(
      forOperator({ accounts: d.added.length, first: d.added.slice(0, 5) }),
      'new connected accounts: swept from SWEEPER_FIRST_RUN_LOOKBACK back',
    );
  for (const account of d.returned)
    logger.info(forOperator({ account }), 'connected account listed again: active, resumes from its watermark');
  for (const account of d.unlisted)
    logger.warn(
      forOperator({ account, reason: 'unlisted' }),
      'connected account no longer listed by Stripe; marked inactive, not swept until Stripe lists it again',
    );
}

/** The connected accounts remembered: how many are active, and the inactive ones, the most recent first. */
export interface AccountsStatus {
  active: number;
  inactive: number;
  /** At most `limit` of them. */
  recently_inactive: Array<{ account: string; reason: InactiveReason; since: string; first_seen_at: string }>;
}

export async function readAccountsStatus(db: Queryable, limit = 20): Promise<AccountsStatus> {
  const counts = await db.query<{ active: number; inactive: number }>(
    `SELECT count(*) FILTER (WHERE active)::int AS active, count(*) FILTER (WHERE NOT active)::int AS inactive FROM recon_accounts`,
  );
  const { rows } = await db.query<{ account: string; reason: InactiveReason; since: Date; first_seen_at: Date }>(
    `SELECT account, inactive_reason AS reason, inactive_since AS since, first_seen_at FROM recon_accounts
      WHERE NOT active ORDER BY inactive_since DESC, account LIMIT $1`,
    [limit],
  );
  return {
    active: counts.rows[0]?.active ?? 0,
    inactive: counts.rows[0]?.inactive ?? 0,
    recently_inactive: rows.map((r) => ({
      account: r.account,
      reason: r.reason,
      since: r.since.toISOString(),
      first_seen_at: r.first_seen_at.toISOString(),
    })),
  };
}

/** Every inactive account and why: the metric's series (one per inactive account). */
export async function readInactiveAccounts(db: Queryable): Promise<Array<{ account: string; reason: InactiveReason }>> {
  const { rows } = await db.query<{ account: string; reason: InactiveReason }>(
    'SELECT account, inactive_reason AS reason FROM recon_accounts WHERE NOT active ORDER BY account',
  );
  return rows;
}
