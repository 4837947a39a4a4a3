import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, sweeperLines, type CliResult } from '../support/cli.js';
import { e2eEnvironment } from '../support/e2e.js';
import { startHostileUpstream, type HostileUpstream } from '../support/hostile-upstream.js';
import { seedClaim } from '../support/scenario.js';

/**
 * Every run ends: a runner waiting on a row lock that a frozen runner holds gives up
 * at SWEEPER_DB_LOCK_TIMEOUT, and a run still going at SWEEPER_RUN_DEADLINE stops as
 * on SIGTERM. Both through the CLI, with real concurrent connections.
 */
const HOUR = 3_600_000;
const e2e = e2eEnvironment({ key: 'sk_test_limits', settings: { SWEEPER_LOG_LEVEL: 'warn' }, partitionDaysBack: 2 });
const env = e2e.env;

/** Every `sweeper: …` line. */
const verdict = (result: CliResult): string => sweeperLines(result.stderr).join('\n');

describe('a runner waiting on a lock held by a frozen runner', () => {
  const created = new Date(Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR + 60_000);
  const backfill = [
    'backfill',
    '--from',
    new Date(created.getTime() - 60_000).toISOString(),
    '--to',
    new Date(created.getTime() + HOUR).toISOString(),
  ];

  it('gives up at SWEEPER_DB_LOCK_TIMEOUT with a clear message and exit 1; the claim is untouched; a later run repairs it', async () => {
    // A stale claim: in flight, lease long expired, nothing at Stripe. The sweep releases it.
    await seedClaim(e2e.db.pool, { tenantId: 'acme', key: 'frozen-1', status: 'in_flight', createdAt: created });
    const frozen = await e2e.db.pool.connect();
    let result: CliResult;
    try {
      await frozen.query('BEGIN');
      await frozen.query(`SELECT 1 FROM idempotency_keys WHERE tenant_id = 'acme' AND key = 'frozen-1' FOR UPDATE`);
      result = await runCli(backfill, env({ SWEEPER_DB_LOCK_TIMEOUT: '1s' }));
    } finally {
      await frozen.query('ROLLBACK');
      frozen.release();
    }
    expect(result.code, result.stderr).toBe(1);
    expect(verdict(result)).toMatch(
      /^sweeper: PostgreSQL: waited too long for a lock another session holds .*SWEEPER_DB_LOCK_TIMEOUT/m,
    );
    const { rows: claim } = await e2e.db.pool.query(
      `SELECT status, attempt FROM idempotency_keys WHERE key = 'frozen-1'`,
    );
    expect(claim[0]).toEqual({ status: 'in_flight', attempt: 1 });
    const { rows: run } = await e2e.db.pool.query(
      `SELECT status, error FROM recon_runs ORDER BY started_at DESC LIMIT 1`,
    );
    expect(run[0]).toMatchObject({ status: 'failed', error: expect.stringMatching(/SWEEPER_DB_LOCK_TIMEOUT/) });

    const again = await runCli(backfill, env({ SWEEPER_DB_LOCK_TIMEOUT: '1s' }));
    expect(again.code, again.stderr).toBe(0);
    const { rows: released } = await e2e.db.pool.query(`SELECT status FROM idempotency_keys WHERE key = 'frozen-1'`);
    expect(released[0]?.status).toBe('released');
  });
});

describe('SWEEPER_RUN_DEADLINE', () => {
  let proxy: HostileUpstream;
  beforeAll(async () => {
    proxy = await startHostileUpstream(e2e.double.url, { mode: 'drip', dripMs: 500 });
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('stops a run that is still going as SIGTERM would: exit 1, recorded interrupted, watermark untouched', async () => {
    // Each request could take a minute; the run may take 5 seconds.
    const result = await runCli(
      ['run'],
      env({ STRIPE_API_BASE: proxy.url, SWEEPER_REQUEST_DEADLINE: '60s', SWEEPER_RUN_DEADLINE: '5s' }),
    );
    expect(result.code, result.stderr).toBe(1);
    expect(verdict(result)).toMatch(
      /^sweeper: the run deadline SWEEPER_RUN_DEADLINE \(5s\) was reached: stopping as on SIGTERM/m,
    );
    const { rows } = await e2e.db.pool.query(
      `SELECT status FROM recon_runs WHERE mode = 'run' ORDER BY started_at DESC LIMIT 1`,
    );
    expect(rows[0]?.status).toBe('interrupted');
    const { rows: watermark } = await e2e.db.pool.query(`SELECT watermark FROM recon_watermarks`);
    expect(watermark).toEqual([]);
  });
});
