import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/pool.js';
import { createEmptyDatabase, createTestDatabase, type TestDatabase } from '../support/db.js';
import { runCli, sweeperLines } from '../support/cli.js';
import { tableChecksums } from '../support/checksums.js';

// Bad input stops before anything is read or written: exit 64, one line naming the problem.
describe('sweeper run/backfill: bad usage', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  beforeAll(async () => {
    db = await createTestDatabase();
    env = {
      DATABASE_URL: db.url,
      STRIPE_API_KEY: 'sk_test_usage',
      STRIPE_API_BASE: 'http://127.0.0.1:9', // nothing listens: any Stripe call would fail with exit 1, not 64
      SWEEPER_ACCOUNTS: 'platform,acct_1A',
    };
  });
  afterAll(async () => {
    await db.drop();
  });

  // Far enough ahead that no midnight passing during the run can make it "not settled yet".
  const future = '2999-01-01';
  const cases: Array<[string, string[], Record<string, string | undefined>, RegExp]> = [
    [
      '--from after --to',
      ['backfill', '--from', '2026-11-05', '--to', '2026-11-01'],
      {},
      /--from 2026-11-05 must be before --to/,
    ],
    [
      'unparseable --from',
      ['backfill', '--from', 'last week', '--to', '2026-11-01'],
      {},
      /--from last week: not a time/,
    ],
    [
      'a time without a zone',
      ['backfill', '--from', '2026-11-01T10:00', '--to', '2026-11-02'],
      {},
      /--from 2026-11-01T10:00: a time needs a zone: add one \(Z or \+hh:mm\), e\.g\. 2026-11-01T10:00Z/,
    ],
    ['future --to', ['backfill', '--from', '2026-11-01', '--to', future], {}, /is in the future/],
    ['unknown account', ['run', '--account', 'acct_nope'], {}, /--account acct_nope is not in SWEEPER_ACCOUNTS/],
    ['malformed shard', ['run', '--shard', '3/2'], {}, /--shard 3\/2: expected I\/N/],
    ['missing STRIPE_API_KEY', ['run'], { STRIPE_API_KEY: undefined }, /STRIPE_API_KEY is not set/],
    [
      'malformed STRIPE_API_KEY',
      ['run'],
      { STRIPE_API_KEY: 'pk_live_123' },
      /^sweeper: STRIPE_API_KEY must be .*sk_… or rk_…/m,
    ],
    [
      'an unparseable DATABASE_URL',
      ['run'],
      { DATABASE_URL: 'postgres://sweeper:hunter2@db:99999/payments' },
      /^sweeper: DATABASE_URL is not a URL that can be parsed/m,
    ],
    [
      'STRIPE_API_BASE with port 99999',
      ['run'],
      { STRIPE_API_BASE: 'http://127.0.0.1:99999' },
      /^sweeper: STRIPE_API_BASE is not a URL that can be parsed/m,
    ],
    [
      'an alert URL with credentials',
      ['run'],
      {
        SWEEPER_WEBHOOK_URL: 'https://ops:hunter2@receiver.example/hook',
        SWEEPER_WEBHOOK_SECRET: 'whsec_0123456789abcdef',
      },
      /^sweeper: SWEEPER_WEBHOOK_URL must not contain credentials/m,
    ],
    [
      'SWEEPER_SLICE=1ms',
      ['backfill', '--from', '2026-11-01', '--to', '2026-11-02'],
      { SWEEPER_SLICE: '1ms' },
      /^sweeper: SWEEPER_SLICE must be between 1m and 1d \(got 1ms\)$/m,
    ],
    [
      'SWEEPER_OVERLAP of a year',
      ['run'],
      { SWEEPER_OVERLAP: '365d' },
      /^sweeper: SWEEPER_OVERLAP must be between 1s and 1d/m,
    ],
    [
      'a backfill from 1970',
      ['backfill', '--from', '1970-01-01', '--to', '2026-11-01', '--i-know-this-is-large'],
      {},
      /before 2010-01-01: Stripe has no charges that old/,
    ],
    [
      'a 40-day backfill without asking',
      ['backfill', '--from', '2026-09-01', '--to', '2026-10-11'],
      {},
      /more than 31 days or 10000 slices: split the range, or pass --i-know-this-is-large/,
    ],
    [
      'a backfill of more than a million slices',
      ['backfill', '--from', '2010-01-01', '--to', '2026-11-01', '--i-know-this-is-large'],
      { SWEEPER_SLICE: '1m' },
      /more than 1000000 slices: raise SWEEPER_SLICE/,
    ],
    ['malformed SWEEPER_ACCOUNTS', ['run'], { SWEEPER_ACCOUNTS: 'platform,bob' }, /SWEEPER_ACCOUNTS must be/],
    [
      'settle shorter than the lease',
      ['run'],
      { SWEEPER_SETTLE: '1m' },
      /SWEEPER_SETTLE \(1m\) must be at least SWEEPER_CLAIM_LEASE/,
    ],
    ['missing required flag', ['backfill', '--from', '2026-11-01'], {}, /required option '--to <time>' not specified/],
    ['schedule without STRIPE_API_KEY', ['schedule'], { STRIPE_API_KEY: undefined }, /STRIPE_API_KEY is not set/],
    [
      'schedule with a bad cron',
      ['schedule', '--cron', 'every minute'],
      {},
      /--cron "every minute" is not a valid cron expression/,
    ],
    [
      'schedule with a bad alert setting',
      ['schedule'],
      { SWEEPER_WEBHOOK_URL: 'http://127.0.0.1:9/hook' },
      /SWEEPER_WEBHOOK_SECRET/,
    ],
    [
      'schedule with a bad SWEEPER_FINDINGS_EXIT',
      ['schedule'],
      { SWEEPER_FINDINGS_EXIT: '1' },
      /^sweeper: SWEEPER_FINDINGS_EXIT must be 0 or 3 \(got "1"\)/m,
    ],
  ];

  it.each(cases)('%s → exit 64, nothing written', async (_name, args, overrides, message) => {
    const before = await tableChecksums(db.pool);
    const result = await runCli(args, { ...env, ...overrides });
    expect(result.code).toBe(64);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toContain('hunter2');
    expect(result.stdout).toBe('');
    expect(await tableChecksums(db.pool)).toEqual(before);
  });

  it('a STRIPE_API_BASE where nothing listens → exit 1 at the first request, one line naming the host', async () => {
    // Port 9 (discard) on the loopback: the connection is refused, as for a double not started.
    const result = await runCli(['run', '--account', 'platform'], env);
    expect(result.code).toBe(1);
    expect(sweeperLines(result.stderr)).toEqual([
      'sweeper: cannot connect to Stripe at 127.0.0.1:9 (connection refused): check STRIPE_API_BASE (unset: api.stripe.com) ' +
        'and that a server is running there; fix the cause; the next run retries from the watermark',
    ]);
    // Not retried for minutes, and not Stripe's generic words.
    expect(result.stderr).not.toMatch(
      /gave up after|An error occurred with our connection to Stripe|"event":"progress"/,
    );
    expect(result.stdout).toMatch(/FAILED: cannot connect to Stripe at 127\.0\.0\.1:9 \(connection refused\)/);
  });

  it('a database without the migrations → exit 64 telling to run sweeper migrate, and creates nothing', async () => {
    const empty = await createEmptyDatabase();
    try {
      const result = await runCli(['run'], { ...env, DATABASE_URL: empty.url });
      expect(result.code).toBe(64);
      expect(result.stderr).toMatch(/schema is at migration 0 of \d+: run `sweeper migrate` first/);
      const pool = createPool(empty.url, { max: 1 });
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`);
      await pool.end();
      expect(rows[0].n).toBe(0);
    } finally {
      await empty.drop();
    }
  });

  it('resolve: an unknown finding id or an empty note → exit 64', async () => {
    expect((await runCli(['resolve', '999999', '--note', 'x'], env)).code).toBe(64);
    expect((await runCli(['resolve', 'abc', '--note', 'x'], env)).code).toBe(64);
    expect((await runCli(['resolve', '1', '--note', '  '], env)).code).toBe(64);
  });
});
