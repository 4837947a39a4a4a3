import { Writable } from 'node:stream';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { freshenStatistics } from '../../src/db/statistics.js';
import { applyPlan, approvePlan, makePlan } from '../../src/plans/index.js';
import { sweep, sweepOptions } from '../../src/sweep/sweep.js';
import { runCli } from '../support/cli.js';
import { createTestDatabase, roleSettings, type TestDatabase } from '../support/db.js';
import { charge, memoryEvidence, memorySweepDeps, seedClaim } from '../support/scenario.js';

const NOW = new Date('2026-11-10T12:00:00Z');
let db: TestDatabase;
let runtime: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  const sql = await readFile(
    fileURLToPath(new URL('../../jobs/sql/least-privilege-role.sql', import.meta.url)),
    'utf8',
  );
  await db.pool.query(sql);
  // The role is set at connection start-up, before any query can be sent on it.
  const url = new URL(db.url);
  url.searchParams.set('options', '-c role=sweeper_runtime');
  runtime = createPool(url.toString(), { max: 4 });
});
afterAll(async () => {
  await runtime.end();
  await db.drop();
});

describe('the least-privilege runtime role', () => {
  it('cannot run DDL', async () => {
    expect((await runtime.query('SELECT current_user AS u')).rows[0].u).toBe('sweeper_runtime');
    await expect(runtime.query('CREATE TABLE sneaky (id int)')).rejects.toMatchObject({ code: '42501' });
    await expect(runtime.query('DROP TABLE payments')).rejects.toMatchObject({ code: '42501' });
    await expect(runtime.query('DELETE FROM recon_repairs')).rejects.toMatchObject({ code: '42501' });
  });

  it('can run a sweep, including creating the day partitions it needs through the definer function', async () => {
    await db.pool.query(`SELECT sweeper_ensure_day_partitions('idempotency_keys', '2026-11-09', '2026-11-10')`);
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'k1',
      status: 'in_flight',
      createdAt: new Date('2026-11-10T09:00:00Z'),
    });
    const stripe = [
      charge({
        id: 'ch_1',
        created: Date.parse('2026-11-10T09:00:05Z') / 1000,
        tenantId: 'acme',
        idempotencyKey: 'k1',
      }),
    ];
    const [report] = await sweep(
      memorySweepDeps(runtime, () => stripe, NOW),
      sweepOptions({
        mode: 'backfill',
        accounts: ['platform'],
        window: { from: new Date('2026-11-10T08:00:00Z'), to: new Date('2026-11-10T10:00:00Z') },
      }),
    );
    expect(report?.repaired.claim_without_effect).toBe(1);
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'stripe_charges'::regclass`,
    );
    expect(rows[0].n).toBeGreaterThan(0);
  });

  it('makes, approves and applies a saved plan, and cannot alter one or its audit', async () => {
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'k2',
      status: 'in_flight',
      createdAt: new Date('2026-11-10T10:30:00Z'),
    });
    const stripe = [
      charge({
        id: 'ch_2',
        created: Date.parse('2026-11-10T10:30:05Z') / 1000,
        tenantId: 'acme',
        idempotencyKey: 'k2',
      }),
    ];
    const window = { from: new Date('2026-11-10T10:00:00Z'), to: new Date('2026-11-10T11:00:00Z') };
    const deps = memorySweepDeps(runtime, () => stripe, NOW);
    const { body } = await makePlan(deps, sweepOptions({ mode: 'backfill', accounts: ['platform'], window }), {
      author: 'alice',
      now: NOW,
    });
    await approvePlan(runtime, { planId: body.id, actor: 'bob', now: NOW });
    const report = await applyPlan(
      { pool: runtime, clock: () => NOW, logger: silentLogger(), evidence: memoryEvidence(() => stripe) },
      { planId: body.id, actor: 'bob' },
    );
    expect(report.applied.map((s) => s.category)).toEqual(['claim_without_effect']);
    await expect(runtime.query(`UPDATE recon_plan_events SET actor = 'mallory'`)).rejects.toMatchObject({
      code: '42501',
    });
    await expect(runtime.query(`DELETE FROM recon_plans`)).rejects.toMatchObject({ code: '42501' });
  });

  it('has lock, statement and idle-in-transaction limits of its own, for sessions that do not set them', async () => {
    expect(await roleSettings(db.pool, 'sweeper_runtime')).toEqual(
      expect.arrayContaining([
        'lock_timeout=30s',
        'statement_timeout=5min',
        'idle_in_transaction_session_timeout=5min',
      ]),
    );
  });

  it('migrate and expire as the runtime role exit 64 and say to run them as the schema owner, changing nothing', async () => {
    const url = new URL(db.url);
    url.searchParams.set('options', '-c role=sweeper_runtime');
    const partitions = async () =>
      (await db.pool.query(`SELECT count(*)::int AS n FROM pg_inherits`)).rows[0].n as number;
    const before = await partitions();
    for (const command of ['migrate', 'expire'] as const) {
      const result = await runCli([command], { DATABASE_URL: url.toString() });
      expect(result.code, result.stderr).toBe(64);
      expect(result.stderr).toMatch(
        new RegExp(
          `^sweeper: sweeper ${command} changes the schema and sweeper_runtime does not own it \\(\\w+ does\\): run this as the schema owner`,
          'm',
        ),
      );
    }
    expect(await partitions()).toBe(before);
    // The owner may: the same commands with the owner's URL succeed.
    expect((await runCli(['expire', '--dry-run'], { DATABASE_URL: db.url })).code).toBe(0);
  });

  it('creates partitions only for days a sweep can need: not in 2100, not before Stripe existed', async () => {
    const ensure = (from: string, to: string) =>
      runtime.query(`SELECT sweeper_ensure_day_partitions('stripe_charges', $1::date, $2::date) AS n`, [from, to]);
    await expect(ensure('2100-01-01', '2100-12-31')).rejects.toMatchObject({
      code: '22023',
      message: expect.stringMatching(/35 days ahead/),
    });
    await expect(ensure('2009-12-31', '2010-01-02')).rejects.toMatchObject({ code: '22023' });
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'stripe_charges_p21%'`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('may not analyse the tables it reads: a stale one gets one log line, and the run goes on', async () => {
    // Rows another writer loaded, not yet analysed (autovacuum off, so they stay so).
    await db.pool.query('ALTER TABLE payment_refunds SET (autovacuum_enabled = off)');
    await db.pool.query(
      `INSERT INTO payment_refunds (refund_id, charge_id, amount, currency, status, created_at, updated_at)
       SELECT 're_' || i, 'ch_' || i, 1, 'usd', 'succeeded', now(), now() FROM generate_series(1, 2000) AS i;
       -- Its counts in the shared statistics now, not at the session's next report (up to seconds later).
       SELECT pg_stat_force_next_flush();`,
    );
    const lines: Array<Record<string, unknown>> = [];
    const destination = new Writable({
      write(chunk: Buffer, _e, done) {
        for (const l of chunk.toString().trim().split('\n')) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    const result = await freshenStatistics(runtime, createLogger({ destination, level: 'info' }));
    expect(result).toEqual({ analysed: [], refused: ['payment_refunds'] });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, event: 'statistics_not_analysed', tables: ['payment_refunds'] });
    const { rows } = await db.pool.query(
      `SELECT last_analyze FROM pg_stat_user_tables WHERE relid = 'payment_refunds'::regclass`,
    );
    expect(rows[0].last_analyze).toBeNull();
    // The owner may: the same check analyses it.
    await expect(freshenStatistics(db.pool, silentLogger())).resolves.toMatchObject({ analysed: ['payment_refunds'] });
  });
});
