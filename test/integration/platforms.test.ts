import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger, silentLogger } from '../../src/log.js';
import { createStripeProvider, type StripeProvider } from '../../src/providers/stripe/provider.js';
import { readAccountsStatus, selectAccounts } from '../../src/sweep/accounts.js';
import { providerSweepDeps } from '../../src/sweep/provider.js';
import { sweep, sweepOptions, type SweepDeps, type SweepOptions } from '../../src/sweep/sweep.js';
import { readStatus } from '../../src/sweep/status.js';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { partitionedDatabase, type TestDatabase } from '../support/db.js';
import { emptySweepTables } from '../support/scenario.js';

/**
 * A Connect platform (docs/platforms.md) against the Stripe double and a real database:
 * connected accounts discovered through GET /v1/accounts (paged), remembered with when
 * each was first seen; one Stripe stops listing or that answers 403 is marked inactive
 * and never fails the others; it comes back when listed again. Idle accounts cost at most
 * two requests a run, and a strict double (25 a second per account and endpoint, 100 a
 * second per key) never sees a 429 the sweep did not retry.
 */
const HOUR = 3_600_000;
const MIN = 60_000;
const NOW = new Date('2026-11-20T12:00:00Z');

let double: StripeDouble;
let db: TestDatabase;
beforeAll(async () => {
  double = await startStripeDouble({ now: NOW });
  db = await partitionedDatabase(new Date(NOW.getTime() - 3 * 24 * HOUR), new Date(NOW.getTime() + 24 * HOUR));
});
afterAll(async () => {
  await db.drop();
  await double.close();
});
beforeEach(async () => {
  double.reset();
  double.clock.set(NOW.getTime());
  await emptySweepTables(db.pool);
  await db.pool.query('DELETE FROM recon_accounts; DELETE FROM recon_refund_cursors');
});

function providerOf(rate = 1_000, global = 10_000): StripeProvider {
  return createStripeProvider({
    apiKey: 'sk_test_platforms',
    apiBase: double.url,
    ratePerSecond: rate,
    globalRatePerSecond: global,
  });
}

const options = (accounts: string[], over: Partial<SweepOptions> = {}): SweepOptions =>
  sweepOptions({
    mode: 'run',
    accounts,
    firstRunLookbackMs: 6 * HOUR,
    accountConcurrency: 4,
    ...over,
  });

function depsOf(provider: StripeProvider, clock = () => NOW, withPayouts = false): SweepDeps {
  // Without the payouts step unless asked: it lists each account's payouts once an hour, and
  // most tests here count the requests of one run (the last test counts them with it).
  const deps = { pool: db.pool, clock, logger: silentLogger(), ...providerSweepDeps(provider) };
  return withPayouts ? deps : { ...deps, payouts: undefined };
}

/** What a run sweeps: the platform and every connected account Stripe lists now. */
async function discover(provider: StripeProvider, now = NOW, owns: (a: string) => boolean = () => true) {
  return selectAccounts(
    { pool: db.pool, logger: silentLogger(), listAccounts: provider.listAccounts },
    { named: ['platform'], connected: true, owns, now, dryRun: false },
  );
}

/** Charges of `account` a little before NOW (inside a first run's lookback, settled). */
function chargesOf(account: string, n: number): void {
  for (let i = 0; i < n; i += 1)
    double.createCharge(account, { amount: 1000 + i, created: new Date(NOW.getTime() - 2 * HOUR + i * MIN) });
}

describe('discovering connected accounts', () => {
  it('lists every page, remembers each with when it was first seen, and tells new from known', async () => {
    const ids = double.seedAccounts(230);
    const provider = providerOf();
    const first = await discover(provider);
    expect(double.counters.get('GET /v1/accounts')).toBe(3); // 100 + 100 + 30
    expect(first.accounts.filter((a) => a !== 'platform').sort()).toEqual([...ids].sort());
    expect(first.discovery?.added).toHaveLength(230);
    const { rows } = await db.pool.query<{ n: number; first: Date }>(
      'SELECT count(*)::int AS n, min(first_seen_at) AS first FROM recon_accounts WHERE active',
    );
    expect(rows[0]).toEqual({ n: 230, first: NOW });

    const later = new Date(NOW.getTime() + HOUR);
    const added = double.addAccount().id;
    const second = await discover(provider, later);
    expect(second.discovery?.added).toEqual([added]);
    const seen = await db.pool.query<{ account: string; first_seen_at: Date; last_seen_at: Date }>(
      'SELECT account, first_seen_at, last_seen_at FROM recon_accounts WHERE account = ANY($1::text[])',
      [[added, ids[0]]],
    );
    const byId = new Map(seen.rows.map((r) => [r.account, r]));
    expect(byId.get(added)).toMatchObject({ first_seen_at: later, last_seen_at: later });
    expect(byId.get(ids[0] as string)).toMatchObject({ first_seen_at: NOW, last_seen_at: later });
  });

  it('a new account starts at SWEEPER_FIRST_RUN_LOOKBACK; an unlisted or revoked one is inactive without failing the others, and returns', async () => {
    const [busy, quiet, leaving, revoked] = double.seedAccounts(4);
    const accounts = { busy: busy!, quiet: quiet!, leaving: leaving!, revoked: revoked! };
    chargesOf(accounts.busy, 3);
    const provider = providerOf();
    const first = await discover(provider);
    const reports = await sweep(depsOf(provider), options(first.accounts));
    expect(reports.map((r) => [r.account, r.status]).sort()).toEqual(
      ['platform', ...Object.values(accounts)].map((a) => [a, 'succeeded']).sort(),
    );
    const busyReport = reports.find((r) => r.account === accounts.busy);
    expect(busyReport?.charges_scanned).toBe(3);
    // The first window of a new account goes back SWEEPER_FIRST_RUN_LOOKBACK (6 h here).
    expect(busyReport?.window?.from).toBe(new Date(NOW.getTime() - 6 * HOUR).toISOString());

    // Stripe stops listing one; the platform loses access to another between the listing and its sweep.
    double.removeAccount(accounts.leaving);
    const t2 = new Date(NOW.getTime() + HOUR);
    double.clock.set(t2.getTime());
    const second = await discover(provider, t2);
    expect(second.discovery?.unlisted).toEqual([accounts.leaving]);
    expect(second.accounts).not.toContain(accounts.leaving);
    expect(second.accounts).toContain(accounts.revoked);
    double.revokeAccount(accounts.revoked);
    const skipped: Array<[string, string]> = [];
    const again = await sweep(
      { ...depsOf(provider, () => t2), onSkipped: (a, reason) => skipped.push([a, reason]) },
      options(second.accounts),
    );
    // The revoked account is not a failure: the others are swept, and it is reported as skipped.
    expect(again.every((r) => r.status === 'succeeded')).toBe(true);
    expect(again.map((r) => r.account)).not.toContain(accounts.revoked);
    expect(skipped).toEqual([[accounts.revoked, 'account_revoked']]);
    const status = await readAccountsStatus(db.pool);
    expect(status).toMatchObject({ active: 2, inactive: 2 });
    expect(status.recently_inactive.map((r) => [r.account, r.reason]).sort()).toEqual(
      [
        [accounts.leaving, 'unlisted'],
        [accounts.revoked, 'revoked'],
      ].sort(),
    );

    // Both come back: listed and served again, each resumes from its own watermark.
    double.restoreAccount(accounts.leaving);
    double.restoreAccount(accounts.revoked);
    const t3 = new Date(NOW.getTime() + 2 * HOUR);
    double.clock.set(t3.getTime());
    const third = await discover(provider, t3);
    expect(third.discovery?.returned.sort()).toEqual([accounts.leaving, accounts.revoked].sort());
    const back = await sweep(
      depsOf(provider, () => t3),
      options(third.accounts),
    );
    expect(back.every((r) => r.status === 'succeeded')).toBe(true);
    const leavingReport = back.find((r) => r.account === accounts.leaving);
    // Its watermark from the first run (NOW − settle): not from the lookback again.
    const { rows } = await db.pool.query<{ watermark: Date }>(
      `SELECT watermark FROM recon_watermarks WHERE account = $1`,
      [accounts.leaving],
    );
    expect(new Date(leavingReport?.window?.to ?? 0).getTime()).toBe(rows[0]?.watermark.getTime());
    expect(new Date(leavingReport?.window?.from ?? 0).getTime()).toBeGreaterThan(NOW.getTime() - 2 * HOUR);
    expect(await readAccountsStatus(db.pool)).toMatchObject({ active: 4, inactive: 0 });
  });

  it('a shard records and sweeps only its own accounts; together the shards cover each once', async () => {
    const ids = double.seedAccounts(40);
    const provider = providerOf();
    const { shardOf } = await import('../../src/sweep/window.js');
    const seen: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const selection = await discover(provider, NOW, (a) => shardOf(a, 3) === index);
      seen.push(...selection.accounts.filter((a) => a !== 'platform'));
    }
    expect(seen.sort()).toEqual([...ids].sort());
    const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM recon_accounts WHERE active');
    expect(rows[0]?.n).toBe(40);
  });
});

describe('idle accounts', () => {
  it('cost at most two requests each on a second run (the window and the events), and status names the most lagging', async () => {
    const ids = double.seedAccounts(60);
    const busy = ids.slice(0, 3);
    for (const account of busy) chargesOf(account, 5);
    const provider = providerOf();
    const selection = await discover(provider);
    await sweep(depsOf(provider), options(selection.accounts));
    const t2 = new Date(NOW.getTime() + HOUR);
    double.clock.set(t2.getTime());
    double.counters.reset();
    const reports = await sweep(
      depsOf(provider, () => t2),
      options(selection.accounts),
    );
    expect(reports.every((r) => r.status === 'succeeded')).toBe(true);
    for (const account of ids) expect(double.counters.account(account), account).toBeLessThanOrEqual(2);
    // Settled together as their own sweeps would have: the refunds step's cursor moved on with the watermark.
    const { rows: behind } = await db.pool.query(
      `SELECT w.account FROM recon_watermarks w LEFT JOIN recon_refund_cursors c USING (account)
        WHERE w.account = ANY($1::text[]) AND c.cursor IS DISTINCT FROM w.watermark`,
      [ids],
    );
    expect(behind).toEqual([]);

    const status = await readStatus(db.pool, t2);
    expect(status.most_lagging).toHaveLength(10);
    const lags = status.most_lagging.map((w) => w.lag_seconds);
    expect(lags).toEqual([...lags].sort((a, b) => b - a));
    expect(status.accounts).toMatchObject({ active: 60, inactive: 0 });
  });
});

describe('idle accounts with the payouts step', () => {
  it('settle together between payout listings: at most two requests each half an hour later', async () => {
    const ids = double.seedAccounts(30);
    const provider = providerOf();
    const selection = await discover(provider);
    await sweep(
      depsOf(provider, () => NOW, true),
      options(selection.accounts),
    );
    const t2 = new Date(NOW.getTime() + HOUR / 2);
    double.clock.set(t2.getTime());
    double.counters.reset();
    const reports = await sweep(
      depsOf(provider, () => t2, true),
      options(selection.accounts),
    );
    expect(reports.every((r) => r.status === 'succeeded')).toBe(true);
    for (const account of ids) expect(double.counters.account(account), account).toBeLessThanOrEqual(2);
    expect(double.counters.get('GET /v1/payouts')).toBe(0);
    // Settled together, not each in its own sweep (whose payouts step would report itself skipped).
    const connected = reports.filter((r) => ids.includes(r.account));
    expect(connected).toHaveLength(ids.length);
    expect(connected.filter((r) => r.payouts !== undefined)).toEqual([]);
  });
});

describe('a first run with the payouts step', () => {
  it('lists idle accounts’ payouts with their group and records each listing as its own sweep would', async () => {
    const ids = double.seedAccounts(30);
    const [busy, paid] = ids as [string, string];
    chargesOf(busy, 3);
    // Charges long before the window, paid out yesterday: the listing finds a payout to reconcile.
    for (let i = 0; i < 2; i += 1)
      double.createCharge(paid, { amount: 5000 + i, created: new Date(NOW.getTime() - 4 * 24 * HOUR) });
    double.clock.set(NOW.getTime() - 24 * HOUR);
    const payout = double.runPayout(paid);
    double.clock.set(NOW.getTime());
    double.counters.reset();
    const provider = providerOf();
    const selection = await discover(provider);
    const lines: string[] = [];
    const logger = createLogger({ destination: { write: (line: string) => lines.push(line) } });
    const reports = await sweep({ ...depsOf(provider, () => NOW, true), logger }, options(selection.accounts));
    expect(reports.every((r) => r.status === 'succeeded')).toBe(true);
    const idle = ids.filter((a) => a !== busy && a !== paid);
    // Settled together, the platform too (nothing of its own): not each in its own sweep.
    const together = lines
      .map((l) => JSON.parse(l) as { msg: string; accounts?: number })
      .filter((l) => l.msg === 'accounts with nothing new settled together');
    expect(together.reduce((n, l) => n + (l.accounts ?? 0), 0)).toBe(idle.length + 1);
    // The window, the events and the payouts: one request each, and the group settled them.
    for (const account of idle) expect(double.counters.account(account), account).toBe(3);
    for (const r of reports.filter((x) => idle.includes(x.account)))
      expect(r.payouts, r.account).toEqual(expect.objectContaining({ listed: 0, skipped: false, reconciled: 0 }));
    // The account with a payout went to its own sweep with the group's listing: listed once, reconciled.
    expect(double.counters.account(paid, 'GET /v1/payouts')).toBe(1);
    expect(reports.find((r) => r.account === paid)?.payouts).toMatchObject({ listed: 1, reconciled: 1 });
    const { rows: reconciled } = await db.pool.query(`SELECT payout_id FROM recon_payouts`);
    expect(reconciled).toEqual([{ payout_id: payout.id }]);
    // What the group recorded equals what an own sweep (the busy account's) recorded.
    const { rows } = await db.pool.query<{ account: string; since: Date; unpaid_judged_to: Date; listed_at: Date }>(
      `SELECT account, since, unpaid_judged_to, listed_at FROM recon_payout_accounts WHERE account = ANY($1::text[])`,
      [ids],
    );
    expect(rows).toHaveLength(ids.length);
    const shape = (r: (typeof rows)[number]) => [
      r.since.getTime(),
      r.unpaid_judged_to.getTime(),
      r.listed_at.getTime(),
    ];
    const own = rows.find((r) => r.account === busy) as (typeof rows)[number];
    for (const r of rows.filter((x) => idle.includes(x.account))) expect(shape(r), r.account).toEqual(shape(own));
  });
});

describe('two rate budgets against a strict double', () => {
  it('per account and endpoint, and for the whole key: no 429 left unretried, every account swept', async () => {
    const ids = double.seedAccounts(80);
    for (const account of ids.slice(0, 4)) chargesOf(account, 30);
    double.setAccountRateLimit(25);
    double.setGlobalRateLimit(100);
    const provider = providerOf(25, 100);
    const selection = await discover(provider);
    const t0 = Date.now();
    const reports = await sweep(depsOf(provider), options(selection.accounts, { accountConcurrency: 8 }));
    const wallMs = Date.now() - t0;
    expect(reports.every((r) => r.status === 'succeeded')).toBe(true);
    expect(reports.filter((r) => r.charges_scanned === 30)).toHaveLength(4);
    expect(double.counters.unretried429s()).toEqual([]);
    // The requests went out no faster than the key's limit allows.
    const requests = double.counters.total();
    expect(wallMs).toBeGreaterThanOrEqual(((requests - 100) / 100) * 1000);
  });
});
