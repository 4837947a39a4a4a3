import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import { downstreamKey } from '../../src/claims/keys.js';
import { runCli, type CliResult } from '../support/cli.js';
import { tableChecksums } from '../support/checksums.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { POISON_KEY, startHostileUpstream, type HostileUpstream } from '../support/hostile-upstream.js';
import { seedClaim, seedEffect } from '../support/scenario.js';

/**
 * Adopting sweeper on a database other code wrote, through the CLI against the Stripe
 * double (docs/judgement.md "Stored answers", "Keys as Stripe holds them", "What has
 * been swept", "The repair brake"; docs/operations.md "First run on an existing database").
 */

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const T0 = Math.floor(Date.now() / 1000) * 1000;
const ago = (ms: number) => new Date(T0 - ms);

let double: StripeDouble;
let proxy: HostileUpstream;
const databases: TestDatabase[] = [];

beforeAll(async () => {
  double = await startStripeDouble();
  proxy = await startHostileUpstream(double.url);
  proxy.mode = 'poison';
});
afterAll(async () => {
  for (const db of databases) await db.drop();
  await proxy.close();
  await double.close();
});

/** A fresh database, and a Stripe with nothing in it: each case is a history of its own. */
async function database(): Promise<TestDatabase> {
  double.reset();
  const db = await createTestDatabase({ poolSize: 2 });
  databases.push(db);
  await ensureDayPartitions(db.pool, { from: utcDay(ago(8 * DAY)), to: utcDay(ago(-DAY)) });
  return db;
}

const env = (db: TestDatabase, extra: Record<string, string> = {}) => ({
  DATABASE_URL: db.url,
  STRIPE_API_KEY: 'sk_test_otherWriters',
  STRIPE_API_BASE: proxy.url,
  SWEEPER_CLAIM_LEASE: '5s',
  SWEEPER_SETTLE: '65s',
  SWEEPER_LOG_LEVEL: 'warn',
  ...extra,
});

const reportOf = (result: CliResult) => JSON.parse(result.stdout.trim().split('\n')[0] as string);
const lastLine = (result: CliResult) =>
  result.stderr
    .split('\n')
    .filter((l) => l.startsWith('sweeper: '))
    .at(-1) ?? '';
const rows = async (db: TestDatabase, sql: string, args: unknown[] = []) => (await db.pool.query(sql, args)).rows;

describe('a first run over a claims table of 1,000 claims storing Stripe Charge objects', () => {
  it('judges every one matched, repairs nothing and leaves every stored answer as it was', async () => {
    const db = await database();
    const tenants: string[] = [];
    const keys: string[] = [];
    const created: Date[] = [];
    const bodies: string[] = [];
    for (let i = 0; i < 1000; i += 1) {
      const at = ago(2 * HOUR - i * 5_000);
      const charge = double.createCharge(null, {
        created: at,
        amount: 1500,
        metadata: { tenant_id: 'shop', idempotency_key: `legacy-${i}` },
        // Swept by the listing; their creation events would only point at them again.
        events: false,
      });
      tenants.push('shop');
      keys.push(`legacy-${i}`);
      created.push(at);
      bodies.push(JSON.stringify(charge));
    }
    // As older payment code wrote them: the Charge object Stripe returned, no outcome, no request.
    await db.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, attempt, downstream_key, response_status,
                                     response_body, created_at, completed_at, updated_at)
       SELECT t, k, 'legacy', 'completed', 1, d, 200, b::jsonb, c, c, c
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS x(t, k, d, b, c)`,
      [tenants, keys, keys.map((k) => downstreamKey('shop', k)), bodies, created],
    );
    await db.pool.query(
      `INSERT INTO payments (charge_id, tenant_id, idempotency_key, amount, currency, status, created_at, updated_at)
       SELECT (b::jsonb)->>'id', 'shop', k, 1500, 'usd', 'succeeded', c, c
         FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS x(k, b, c)`,
      [keys, bodies, created],
    );
    const claimsBefore = (await tableChecksums(db.pool)).idempotency_keys;

    const result = await runCli(['run', '--json'], env(db, { SWEEPER_FIRST_RUN_LOOKBACK: '3h' }));
    expect(result.code, result.stderr).toBe(0);
    const report = reportOf(result);
    expect(report.findings.matched).toBe(1000);
    expect(Object.values(report.repaired as Record<string, number>).every((n) => n === 0)).toBe(true);
    expect(report.unreconciled).toBe(0);
    expect((await tableChecksums(db.pool)).idempotency_keys).toBe(claimsBefore);
  }, 120_000);
});

describe("other writers' answers, keys and poisoned re-reads, in one first run", () => {
  let db: TestDatabase;
  let result: CliResult;
  let answersBefore: Array<{ key: string; answer: string }>;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    db = await database();
    const inWindow = (m: number) => ago(2 * HOUR - m * MIN);
    // The tenant is known here (a payment row of its own).
    ids.known = double.createCharge(null, {
      created: inWindow(0),
      amount: 900,
      metadata: { tenant_id: 'acme', idempotency_key: 'known' },
    }).id;
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'known',
      status: 'completed',
      createdAt: inWindow(0),
      responseCharge: ids.known,
      amount: 900,
    });
    await seedEffect(db.pool, {
      chargeId: ids.known,
      tenantId: 'acme',
      key: 'known',
      amount: 900,
      createdAt: inWindow(0),
    });

    // A body of the writer's own, its charge named in a field of its own and carrying no metadata.
    ids.custom = double.createCharge(null, { created: inWindow(10), amount: 1000 }).id;
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'custom',
      status: 'completed',
      createdAt: inWindow(10),
      responseStatus: 200,
      responseBody: { order: { charge_ref: ids.custom }, state: 'paid' },
      responseOutcome: null,
    });
    // 201 "paid", no payment row, no money at Stripe.
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'paid-nothing',
      status: 'completed',
      createdAt: inWindow(20),
      responseStatus: 201,
      responseBody: { id: 'order_1', state: 'paid' },
      responseOutcome: null,
    });
    // A worker died holding a key with an accent; Stripe charged it hours before the window.
    ids.accent = double.createCharge(null, {
      created: ago(5 * HOUR),
      amount: 1000,
      metadata: { tenant_id: 'acme', idempotency_key: 'commande-é-1' },
      events: false,
    }).id;
    await seedClaim(db.pool, { tenantId: 'acme', key: 'commande-é-1', status: 'in_flight', createdAt: inWindow(30) });
    // Another died holding a key whose only charge Stripe returns unreadable when searched for.
    ids.poison = double.createCharge(null, {
      created: ago(5 * HOUR),
      amount: 1000,
      metadata: { tenant_id: 'acme', idempotency_key: 'poisoned', [POISON_KEY]: 'negative_amount' },
      events: false,
    }).id;
    await seedClaim(db.pool, { tenantId: 'acme', key: 'poisoned', status: 'in_flight', createdAt: inWindow(40) });
    // And one that died before Stripe saw it: released, as usual, in the same run.
    await seedClaim(db.pool, { tenantId: 'acme', key: 'stale', status: 'in_flight', createdAt: inWindow(50) });

    answersBefore = await rows(
      db,
      `SELECT key, response_status || ' ' || response_body::text AS answer FROM idempotency_keys WHERE status = 'completed' ORDER BY key`,
    );
    result = await runCli(
      ['run', '--json'],
      env(db, {
        SWEEPER_FIRST_RUN_LOOKBACK: '3h',
        SWEEPER_STORED_ANSWER: '{"charge": "order.charge_ref", "outcome": "state", "success": ["paid"]}',
      }),
    );
  }, 120_000);

  it('finishes (exit 3, not 1): nothing Stripe returned stops the account', () => {
    expect(result.code, result.stderr).toBe(3);
    expect(reportOf(result)).toMatchObject({ status: 'succeeded' });
  });

  it('the mapped body: its charge linked by the configured field, the payment row added, the answer kept', async () => {
    expect(
      await rows(db, `SELECT tenant_id, idempotency_key FROM payments WHERE charge_id = $1`, [ids.custom]),
    ).toEqual([{ tenant_id: 'acme', idempotency_key: 'custom' }]);
    const after = await rows(
      db,
      `SELECT key, response_status || ' ' || response_body::text AS answer FROM idempotency_keys
        WHERE key = ANY($1) ORDER BY key`,
      [answersBefore.map((a) => a.key)],
    );
    expect(after).toEqual(answersBefore);
  });

  it("201 'paid' with no money → lost_effect", async () => {
    expect(await rows(db, `SELECT category, state FROM recon_findings WHERE idempotency_key = 'paid-nothing'`)).toEqual(
      [{ category: 'lost_effect', state: 'open' }],
    );
  });

  it('a key with an accent is a key: its claim is completed from the charge Stripe found for it, not released', async () => {
    expect(await rows(db, `SELECT status, response_status FROM idempotency_keys WHERE key = 'commande-é-1'`)).toEqual([
      { status: 'completed', response_status: 200 },
    ]);
    expect(await rows(db, `SELECT idempotency_key FROM payments WHERE charge_id = $1`, [ids.accent])).toEqual([
      { idempotency_key: 'commande-é-1' },
    ]);
  });

  it('the poisoned re-read: an open finding naming the charge, its key neither released nor lost; the others judged', async () => {
    expect(
      await rows(db, `SELECT status FROM idempotency_keys WHERE key IN ('poisoned', 'stale') ORDER BY key`),
    ).toEqual([{ status: 'in_flight' }, { status: 'released' }]);
    const findings = await rows(
      db,
      `SELECT category, subject, state, details->>'reason' AS reason FROM recon_findings
        WHERE subject IN ($1, 'acme\u241fpoisoned') ORDER BY category`,
      [ids.poison],
    );
    expect(findings).toMatchObject([
      { category: 'claim_without_effect', state: 'open', reason: expect.stringMatching(/cannot read/) },
      {
        category: 'unattributed_charge',
        subject: ids.poison,
        state: 'open',
        reason: expect.stringMatching(/amount -500 is negative/),
      },
    ]);
  });

  it('a second run reads the same and fails on nothing', async () => {
    const again = await runCli(
      ['run', '--json'],
      env(db, { SWEEPER_STORED_ANSWER: '{"charge": "order.charge_ref", "outcome": "state", "success": ["paid"]}' }),
    );
    expect(again.code, again.stderr).toBe(3);
    expect(reportOf(again)).toMatchObject({ status: 'succeeded', unreconciled: reportOf(result).unreconciled });
  });
});

describe('the repair brake', () => {
  it('a dry run shows the counts; a real run stops before repairing; --allow-mass-repair confirms', async () => {
    const db = await database();
    const from = ago(3 * HOUR);
    // The tenant is known (one payment row); 60 charges name its keys, with no claim and no row: 60 orphans.
    await seedEffect(db.pool, { chargeId: 'ch_known_row', tenantId: 'bulk', key: 'first', createdAt: ago(3 * DAY) });
    for (let i = 0; i < 60; i += 1)
      double.createCharge(null, {
        created: new Date(from.getTime() + 10 * MIN + i * 1000),
        amount: 700,
        metadata: { tenant_id: 'bulk', idempotency_key: `imported-${i}` },
      });
    const backfill = (extra: string[]) =>
      runCli(
        ['backfill', '--from', from.toISOString(), '--to', ago(HOUR).toISOString(), '--no-resume', ...extra],
        env(db, { STRIPE_API_BASE: double.url }),
      );

    const untouched = await tableChecksums(db.pool);
    const dry = await backfill(['--dry-run']);
    expect(dry.code, dry.stderr).toBe(0); // every would-be repair would leave nothing open
    expect(dry.stdout).toMatch(/orphan_charge\s+60\s+60/);
    expect(dry.stdout).toMatch(
      /repair brake: a real run would stop before these repairs: 60 orphan_charge repairs of 60 judged/,
    );
    expect(await tableChecksums(db.pool)).toEqual(untouched);

    const stopped = await backfill(['--json']);
    expect(stopped.code, stopped.stderr).toBe(1);
    expect(lastLine(stopped)).toMatch(
      /^sweeper: the repair brake stopped account platform before repairing: 60 orphan_charge repairs .*--dry-run.*sweeper report --status open --category orphan_charge.*--allow-mass-repair/,
    );
    expect(await rows(db, `SELECT count(*)::int AS n FROM payments`)).toEqual([{ n: 1 }]);
    expect(await rows(db, `SELECT count(*)::int AS n FROM idempotency_keys`)).toEqual([{ n: 0 }]);

    const confirmed = await backfill(['--json', '--allow-mass-repair']);
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(reportOf(confirmed)).toMatchObject({
      repaired: { orphan_charge: 60 },
      mass_repair: { category: 'orphan_charge', repairs: 60, allowed: true },
    });
    expect(await rows(db, `SELECT count(*)::int AS n FROM payments`)).toEqual([{ n: 61 }]);
  }, 120_000);
});

describe('a first scheduled run on a fresh database with days of history', () => {
  it('judges only its lookback: older charges, their events and the deep re-read wait for a backfill', async () => {
    const db = await database();
    // Three days of history the application recorded, one charge refunded at Stripe just now.
    const old = double.createCharge(null, {
      created: ago(2 * DAY),
      amount: 4000,
      metadata: { tenant_id: 'hist', idempotency_key: 'old-1' },
    });
    await seedClaim(db.pool, {
      tenantId: 'hist',
      key: 'old-1',
      status: 'completed',
      createdAt: ago(2 * DAY),
      responseCharge: old.id,
      amount: 4000,
    });
    await seedEffect(db.pool, {
      chargeId: old.id,
      tenantId: 'hist',
      key: 'old-1',
      amount: 4000,
      createdAt: ago(2 * DAY),
    });
    // Charges nobody recorded, days old: orphans, had they been judged.
    for (let i = 0; i < 3; i += 1)
      double.createCharge(null, {
        created: ago(3 * DAY - i * HOUR),
        amount: 500,
        metadata: { tenant_id: 'hist', idempotency_key: `gone-${i}` },
      });
    double.refund(old.id, undefined, { created: ago(10 * MIN) });

    const result = await runCli(['run', '--json'], env(db, { STRIPE_API_BASE: double.url }));
    expect(result.code, result.stderr).toBe(0);
    const report = reportOf(result);
    expect(new Date(report.window.to).getTime() - new Date(report.window.from).getTime()).toBeLessThanOrEqual(DAY);
    expect(Object.values(report.repaired as Record<string, number>).every((n) => n === 0)).toBe(true);
    expect(report.changes).toMatchObject({ not_swept: 1, found: {}, repaired: {} });
    expect(report.changes.deep_read).toMatchObject({ hours: 0, charges: 0 });
    expect(report.changes.deep_read.not_swept_hours).toBeGreaterThanOrEqual(72);
    expect(await rows(db, `SELECT amount_refunded FROM payments WHERE charge_id = $1`, [old.id])).toEqual([
      { amount_refunded: 0 },
    ]);
    expect(await rows(db, `SELECT count(*)::int AS n FROM recon_findings`)).toEqual([{ n: 0 }]);

    // The text summary says what each step judged.
    const text = await runCli(['run'], env(db, { STRIPE_API_BASE: double.url }));
    expect(text.stdout).toMatch(/^late changes: \d+ events, \d+ charges re-read and judged/m);
  }, 120_000);
});

describe('payment rows another writer bulk-loaded, not yet analysed', () => {
  it('a run analyses the table before its first slice (docs/operations.md "Planner statistics")', async () => {
    const db = await database();
    await db.pool.query('ALTER TABLE payments SET (autovacuum_enabled = off)');
    // Five days old: before the run's window, so only its statistics check reads them.
    const at = `'${ago(5 * DAY).toISOString()}'::timestamptz`;
    await db.pool.query(
      `INSERT INTO payments (charge_id, tenant_id, idempotency_key, amount, currency, status, created_at, updated_at)
       SELECT 'ch_restored_' || i, 'shop', 'restored-' || i, 1000, 'usd', 'succeeded', ${at} - i * interval '1 second', ${at}
         FROM generate_series(1, 5000) AS i;
       SELECT pg_stat_force_next_flush();`,
    );
    const analysed = () =>
      rows(db, `SELECT last_analyze IS NOT NULL AS analysed FROM pg_stat_user_tables WHERE relname = 'payments'`);
    expect(await analysed()).toEqual([{ analysed: false }]);

    const result = await runCli(['run', '--json'], env(db, { STRIPE_API_BASE: double.url }));
    expect(result.code, result.stderr).toBe(0);
    expect(await analysed()).toEqual([{ analysed: true }]);
  }, 120_000);
});
