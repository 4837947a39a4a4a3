import { beforeAll, describe, expect, it } from 'vitest';
import { lockAccounts, type SweepLock } from '../../src/sweep/lock.js';
import { e2eEnvironment } from '../support/e2e.js';
import { runCli, startCli } from '../support/cli.js';

/**
 * The lock policy between scheduled runs and backfills (docs/deployment.md "Backfills
 * and scheduled runs: the account lock"), with the CLI as a subprocess and the other side
 * holding its locks from this process's own connections, exactly as a concurrent
 * sweeper would (lockAccounts).
 */

const HOUR = 3_600_000;
const ACCT = 'acct_1Nv0FGQ9RKHgCVdK';
const from = new Date(Math.floor(Date.now() / HOUR) * HOUR - 4 * HOUR);
const to = new Date(from.getTime() + 2 * HOUR);

const e2e = e2eEnvironment({
  key: 'sk_test_lock',
  settings: { SWEEPER_ACCOUNTS: `platform,${ACCT}`, SWEEPER_LOG_LEVEL: 'info' },
});
const env = e2e.env;
const backfill = (...extra: string[]) => [
  'backfill',
  '--from',
  from.toISOString(),
  '--to',
  to.toISOString(),
  '--account',
  'platform',
  '--json',
  ...extra,
];
const runs = async () =>
  (
    await e2e.db.pool.query<{ mode: string; account: string; status: string }>(
      'SELECT mode, account, status FROM recon_runs ORDER BY started_at',
    )
  ).rows;

/** Holds `accounts` as a sweep of `mode` would, until released. */
async function hold(mode: 'run' | 'backfill', accounts = ['platform']): Promise<SweepLock> {
  return lockAccounts(e2e.db.pool, accounts, { mode });
}

/** True once some session waits (not granted) for an advisory lock: the backfill is queued. */
async function someoneWaits(): Promise<boolean> {
  const { rows } = await e2e.db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
  );
  return (rows[0]?.n ?? 0) > 0;
}

beforeAll(() => {
  // One charge nobody can attribute, settled long ago: a run of platform leaves one open finding.
  e2e.double.createCharge(null, { amount: 990, currency: 'usd', created: new Date(from.getTime() + 10 * 60_000) });
});

describe('a scheduled run and a backfill of the same account', () => {
  it('a run that finds a backfill holding the account skips it, exits 0, says so, and sweeps the others', async () => {
    const held = await hold('backfill');
    try {
      const result = await runCli(['run', '--json'], env());
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toMatch(/"account":"platform".*skipped: backfill in progress/);
      const lines = result.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines).toEqual([
        expect.objectContaining({ account: ACCT, mode: 'run', status: 'succeeded' }),
        { mode: 'run', account: 'platform', status: 'skipped', reason: 'backfill_in_progress' },
      ]);
      expect(await runs()).toEqual([{ mode: 'run', account: ACCT, status: 'succeeded' }]);

      const human = await runCli(['run', '--account', 'platform'], env());
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toContain('run  account platform  skipped: backfill in progress; the next run sweeps it');
    } finally {
      await held.release();
    }
  });

  it('a run that finds another run holding the account exits 75 and writes nothing', async () => {
    const held = await hold('run');
    try {
      const before = await runs();
      const result = await runCli(['run', '--account', 'platform'], env());
      expect(result.code).toBe(75);
      expect(result.stderr).toMatch(/^sweeper: another sweep is running for account platform/m);
      expect(await runs()).toEqual(before);
    } finally {
      await held.release();
    }
  });

  it('a backfill waits for a run in progress; runs arriving meanwhile skip; then the backfill sweeps', async () => {
    const scheduled = await hold('run');
    let released = false;
    try {
      const waiting = startCli(backfill('--wait', '10m'), env());
      await waiting.stderrLine(/waiting for it/);
      while (!(await someoneWaits())) {
        // queued in PostgreSQL's lock manager, not just announced
      }
      const meanwhile = await runCli(['run', '--account', 'platform', '--json'], env());
      expect(meanwhile.code, meanwhile.stderr).toBe(0);
      expect(JSON.parse(meanwhile.stdout)).toMatchObject({ status: 'skipped' });

      await scheduled.release();
      released = true;
      const done = await waiting.done;
      expect(done.code, done.stderr).toBe(3);
      expect(JSON.parse(done.stdout)).toMatchObject({
        mode: 'backfill',
        account: 'platform',
        status: 'succeeded',
        unreconciled: 1,
      });
    } finally {
      if (!released) await scheduled.release();
    }
  });

  it('a backfill that waited --wait in vain exits 75 naming the wait; --wait 0 does not wait', async () => {
    const held = await hold('run');
    try {
      const before = await runs();
      const timedOut = await runCli(backfill('--wait', '1s'), env());
      expect(timedOut.code).toBe(75);
      expect(timedOut.stderr).toMatch(
        /^sweeper: another sweep still holds account platform after --wait 1s; run the backfill again later or with a longer --wait$/m,
      );
      const noWait = await runCli(backfill('--wait', '0'), env());
      expect(noWait.code).toBe(75);
      expect(noWait.stderr).toMatch(
        /^sweeper: another sweep is running for account platform; this backfill does not wait \(--wait 0\)$/m,
      );
      expect(await runs()).toEqual(before);
    } finally {
      await held.release();
    }
  });

  it('SIGTERM while a backfill waits ends the wait at once: exit 1, nothing swept, the lock untouched', async () => {
    const held = await hold('run');
    try {
      const before = await runs();
      const waiting = startCli(backfill('--wait', '10m'), env());
      await waiting.stderrLine(/waiting for it/);
      while (!(await someoneWaits())) {
        // queued in PostgreSQL's lock manager
      }
      waiting.child.kill('SIGTERM');
      const done = await waiting.done;
      expect(done.code).toBe(1);
      expect(done.stderr).toMatch(
        /^sweeper: interrupted while waiting for the lock of account platform; nothing was swept$/m,
      );
      expect(await runs()).toEqual(before);
      expect(await someoneWaits()).toBe(false);
    } finally {
      await held.release();
    }
  });

  it('two backfills queue instead of failing: the second starts when the first is done', async () => {
    const first = await hold('backfill');
    let released = false;
    try {
      const second = startCli(backfill('--wait', '10m', '--no-resume'), env());
      await second.stderrLine(/waiting for it/);
      await first.release();
      released = true;
      expect((await second.done).code).toBe(3);
    } finally {
      if (!released) await first.release();
    }
  });
});

describe('--findings-exit', () => {
  it('3 by default while findings are open; 0 with --findings-exit 0 or SWEEPER_FINDINGS_EXIT=0; the flag wins', async () => {
    const args = ['run', '--account', 'platform'];
    expect((await runCli(args, env())).code).toBe(3);
    expect((await runCli([...args, '--findings-exit', '0'], env())).code).toBe(0);
    expect((await runCli(args, env({ SWEEPER_FINDINGS_EXIT: '0' }))).code).toBe(0);
    expect((await runCli([...args, '--findings-exit', '3'], env({ SWEEPER_FINDINGS_EXIT: '0' }))).code).toBe(3);
    const open = await e2e.db.pool.query(`SELECT category FROM recon_findings WHERE state = 'open'`);
    expect(open.rows).toEqual([{ category: 'unattributed_charge' }]); // still open: only the exit code changed
  });

  it('a failed run still exits 1 with --findings-exit 0', async () => {
    // The e2e.double accepts only test-mode keys: a live key is refused (401), and the run fails.
    const result = await runCli(
      ['run', '--account', 'platform', '--findings-exit', '0'],
      env({ STRIPE_API_KEY: 'sk_live_refused' }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^sweeper: /m);
  });
});

describe('bad usage is refused with 64 before anything is written', () => {
  it.each([
    [['run', '--findings-exit', '1'], {}, /^sweeper: --findings-exit must be 0 or 3 \(got "1"\)/m],
    [['run'], { SWEEPER_FINDINGS_EXIT: 'no' }, /^sweeper: SWEEPER_FINDINGS_EXIT must be 0 or 3 \(got "no"\)/m],
    [
      ['backfill', '--from', '2026-01-01', '--to', '2026-01-02', '--wait', 'soon'],
      {},
      /^sweeper: --wait soon: expected a duration like 90s, 15m or 1h, or 0 to not wait$/m,
    ],
  ] as const)('%j %j', async (args, extra, message) => {
    const before = await runs();
    const result = await runCli([...args], env(extra));
    expect(result.code).toBe(64);
    expect(result.stderr).toMatch(message);
    expect(await runs()).toEqual(before);
  });
});
