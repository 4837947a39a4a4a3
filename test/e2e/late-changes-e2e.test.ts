import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClaimClient } from '../../src/claims/index.js';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import { startStripeDouble, type EventTiming, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { emptyCounts } from '../../src/sweep/categories.js';
import { cloneDatabase, createTestDatabase, type TestDatabase } from '../support/db.js';
import { cliEnv, SHORT_RUN_SETTINGS, runCli } from '../support/cli.js';
import { normalizedTables } from '../support/normalized-tables.js';
import { seedClaim, seedEffect, seedSweptRange } from '../support/scenario.js';
import { atDepth } from '../support/depth.js';

/**
 * docs/judgement.md "Late changes", end to end: the ordinary `sweeper run` as a subprocess against
 * the Stripe double over HTTP (the real SDK, the events reader, the charge re-reads).
 * Charges older than any window are refunded, partially refunded, disputed and
 * captured at Stripe, and charges appear that no listing will show; the next run must
 * find each through its event, repair it and say so in its JSON, and the run after it
 * must change nothing. Then the same under duplicate and out-of-order events, kills in
 * the events step (at every phase in `npm run test:deep`), a cursor too old for Stripe's 30 days of events, a key
 * without Events read, and a run whose events span more than a day.
 *
 * Time: the CLI runs on the real clock, so the history is dated back from when this file
 * started, and every change at Stripe is dated 66 seconds back (older than SWEEPER_SETTLE
 * = 65s, which the events read waits out like the window does, and newer than the last
 * run's cursor minus SWEEPER_EVENTS_OVERLAP, 10m: so no run has to wait for it). Nothing sleeps.
 */

const MIN = 60_000;
const DAY = 86_400_000;
const T0 = Math.floor(Date.now() / 1000) * 1000;
const daysAgo = (days: number, plusMinutes = 0) => new Date(T0 - days * DAY + plusMinutes * MIN);
/** A change's events, dated just behind settle: inside the next run's read, whenever it starts. */
const justNow = (): EventTiming => ({ created: new Date(Date.now() - 66_000) });

/**
 * Every run here uses a restricted key holding exactly what docs/operations.md "The
 * Stripe key" says a scheduled run needs: Charges read and Events read.
 */
const RESTRICTED_KEY = 'rk_test_ChargesAndEvents';
/** Charges read alone: a key made before runs read events. */
const NO_EVENTS_KEY = 'rk_test_ChargesOnly';
const keyPolicy = {
  permissions: {
    [RESTRICTED_KEY]: ['rak_charge_read', 'rak_event_read', 'rak_payout_read', 'rak_balance_read'],
    [NO_EVENTS_KEY]: ['rak_charge_read', 'rak_payout_read', 'rak_balance_read'],
  },
};

const databases: TestDatabase[] = [];
const doubles: StripeDouble[] = [];

function env(db: TestDatabase, double: StripeDouble, extra: Record<string, string> = {}): Record<string, string> {
  return cliEnv(
    { db, stripe: double.url, key: RESTRICTED_KEY },
    {
      ...SHORT_RUN_SETTINGS,
      SWEEPER_LOG_LEVEL: 'info',
      ...extra,
    },
  );
}

async function run(db: TestDatabase, double: StripeDouble, extra: Record<string, string> = {}) {
  const result = await runCli(['run', '--json'], env(db, double, extra));
  const line = result.stdout.trim().split('\n')[0];
  return { ...result, report: line ? JSON.parse(line) : null };
}

async function clone(source: TestDatabase): Promise<TestDatabase> {
  const db = await cloneDatabase(source.name);
  databases.push(db);
  return db;
}

async function startDouble(): Promise<StripeDouble> {
  const double = await startStripeDouble({ keys: keyPolicy });
  doubles.push(double);
  return double;
}

/** A migrated database with partitions back to the oldest charge here; its pool closed, so it can be copied. */
async function baseDatabase(fill: (db: TestDatabase) => Promise<void>): Promise<TestDatabase> {
  const db = await createTestDatabase({ poolSize: 2 });
  databases.push(db);
  await ensureDayPartitions(db.pool, { from: utcDay(daysAgo(41)), to: utcDay(daysAgo(-1)) });
  await fill(db);
  return db;
}

const rows = async (db: TestDatabase, sql: string, args: unknown[] = []) => (await db.pool.query(sql, args)).rows;

/**
 * A run reads events up to now − settle in whole seconds, so a run starting within the
 * second the last one ended has nothing newer to read. The built CLI starts that fast:
 * moving the last run's events cursor two seconds back is the next run starting later.
 */
async function asIfLater(db: TestDatabase): Promise<void> {
  await db.pool.query(`UPDATE recon_event_cursors SET cursor = cursor - interval '2 seconds'`);
}
const meta = (key: string) => ({ tenant_id: 'acme', idempotency_key: key });
const counts = (over: Record<string, number>) => ({ ...emptyCounts(), ...over });

afterAll(async () => {
  for (const db of databases) await db.drop();
  for (const double of doubles) await double.close();
});

describe('changes at Stripe after their window, through the ordinary `sweeper run`', () => {
  let double: StripeDouble;
  /** After one ordinary run (run 1), before anything changed at Stripe: each case copies it. */
  let template: TestDatabase;
  /** Where run 1 left the events cursor. */
  let cursor1: Date;
  const ids: Record<string, string> = {};

  /**
   * Payments long past any window: A, B, C and H (which nothing touches) made through
   * the claim library five days ago; D and D2 authorised but not captured (which the
   * library cannot make, so seeded as it records them); E, 40 days old, whose claim
   * expired with its partition (only the payment row is left).
   */
  async function history(db: TestDatabase): Promise<void> {
    double.clock.set(daysAgo(5));
    const library = createClaimClient({
      pool: db.pool,
      stripe: createStripeClient({ apiKey: 'sk_test_payments', apiBase: double.url, maxNetworkRetries: 0 }),
      leaseMs: 5_000,
      maxAmount: 1_000_000,
      metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
      clock: () => double.clock.now(),
    });
    for (const [name, amount] of [
      ['a', 5000],
      ['b', 4000],
      ['c', 3000],
      ['h', 2000],
    ] as const) {
      double.clock.advance(MIN);
      const result = await library.chargeOnce({
        tenantId: 'acme',
        key: `order-${name}`,
        request: { amount, currency: 'usd', paymentMethod: 'pm_card_visa' },
      });
      expect(result.outcome).toBe('charged');
      ids[name] = (
        await rows(db, `SELECT charge_id FROM payments WHERE idempotency_key = $1`, [`order-${name}`])
      )[0].charge_id;
    }
    double.clock.useRealTime();
    for (const [name, amount, minute] of [
      ['d', 2500, 10],
      ['d2', 1800, 11],
    ] as const) {
      const created = daysAgo(5, minute);
      const charge = double.createCharge(null, { created, amount, captured: false, metadata: meta(`order-${name}`) });
      ids[name] = charge.id;
      await seedClaim(db.pool, {
        tenantId: 'acme',
        key: `order-${name}`,
        status: 'completed',
        createdAt: created,
        responseCharge: charge.id,
        amount,
        currency: 'usd',
      });
      await seedEffect(db.pool, {
        chargeId: charge.id,
        tenantId: 'acme',
        key: `order-${name}`,
        amount,
        createdAt: created,
      });
    }
    // An earlier backfill swept these days: the late-changes step judges charges again only inside what runs swept.
    await seedSweptRange(db.pool, 'platform', daysAgo(41), daysAgo(1));
    const e = double.createCharge(null, { created: daysAgo(40), amount: 6000, metadata: meta('order-e') });
    ids.e = e.id;
    await seedEffect(db.pool, {
      chargeId: e.id,
      tenantId: 'acme',
      key: 'order-e',
      amount: 6000,
      createdAt: daysAgo(40),
    });
  }

  /**
   * What happens at Stripe after run 1. Each old charge changes; and two charges appear,
   * dated five and six minutes before run 1's cursor, that `GET /v1/charges` will not
   * list for another hour (F names a tenant and key, G nothing). Both lie before every
   * later window (watermark − SWEEPER_OVERLAP of 1m), so only their creation events,
   * inside the events overlap (SWEEPER_EVENTS_OVERLAP, 10m), can bring them to judgement.
   */
  function changesAtStripe(): void {
    double.refund(ids.a!, undefined, justNow());
    double.refund(ids.b!, 1500, justNow());
    double.dispute(ids.c!, justNow());
    double.capture(ids.d!, 2000, justNow()); // 500 of 2,500 released: Stripe reports it refunded
    double.capture(ids.d2!, undefined, justNow()); // all of it: the payment row already says succeeded, nothing refunded
    double.refund(ids.e!, undefined, justNow()); // 40 days after the charge
    const listedAt = new Date(Date.now() + 60 * MIN);
    ids.f = double.createCharge(null, {
      created: new Date(cursor1.getTime() - 5 * MIN),
      amount: 700,
      metadata: meta('order-late'),
      listedAt,
    }).id;
    ids.g = double.createCharge(null, { created: new Date(cursor1.getTime() - 6 * MIN), amount: 990, listedAt }).id;
  }

  /** Run 2 on a copy of the template, uninterrupted: what every other case is compared with. */
  let run2: Awaited<ReturnType<typeof run>>;
  let afterRun2: TestDatabase;
  let tablesAfterRun2: Awaited<ReturnType<typeof normalizedTables>>;
  /** `GET /v1/charges/:id` requests run 2 made. */
  let run2ByIdReads: number;

  beforeAll(async () => {
    double = await startDouble();
    template = await baseDatabase(history);
    const first = await run(template, double);
    expect(first.code, first.stderr).toBe(0);
    // Nothing in run 1's window, and the old charges' events are older than its read.
    expect(first.report).toMatchObject({
      mode: 'run',
      charges_scanned: 0,
      unreconciled: 0,
      changes: { events: 0, charges: 0 },
    });
    await asIfLater(template);
    cursor1 = (await rows(template, 'SELECT cursor FROM recon_event_cursors'))[0].cursor;
    await template.pool.end(); // a template must have no connections
    changesAtStripe();
    afterRun2 = await clone(template);
    const byIdBefore = double.counters.get('GET /v1/charges/:id');
    run2 = await run(afterRun2, double);
    run2ByIdReads = double.counters.get('GET /v1/charges/:id') - byIdBefore;
    tablesAfterRun2 = await normalizedTables(afterRun2.pool);
  }, 120_000);

  describe('the next run', () => {
    it('reports each change exactly: status_drift repaired five times, the late charges judged, and how many events and charges it read', () => {
      expect(run2.code, run2.stderr).toBe(3); // G names nobody: a person must look
      const { report } = run2;
      expect(report.findings).toEqual(counts({ status_drift: 5, orphan_charge: 1, unattributed_charge: 1 }));
      expect(report.repaired).toEqual(counts({ status_drift: 5, orphan_charge: 1 }));
      expect(report.unreconciled).toBe(1);
      // Nothing of this was in the run's window: all of it came through events.
      expect(report.charges_scanned).toBe(0);
      // Two events per change (charge.refunded + refund.created, charge.dispute.created +
      // .funds_withdrawn, charge.captured + payment_intent.succeeded, charge.succeeded +
      // payment_intent.succeeded), pointing at eight charges, each re-read once.
      expect(report.changes).toMatchObject({
        events: 16,
        charges: 8,
        cursor: expect.any(String),
        cursor_lag_seconds: expect.any(Number),
      });
      // Neither fallback (the cursor is minutes old) nor deep re-read (run 1 did it, less than a day ago).
      expect(report.changes.fallback).toBeUndefined();
      expect(report.changes.deep_read).toBeUndefined();
      expect(new Date(report.changes.cursor).getTime()).toBeGreaterThan(cursor1.getTime());
      expect(run2ByIdReads).toBe(8);
    });

    it('leaves Stripe’s state on the payment rows: a full refund, a partial refund, a dispute, a partial capture, a refund 40 days later', async () => {
      expect(
        await rows(
          afterRun2,
          `SELECT idempotency_key AS key, status, amount, amount_refunded, disputed FROM payments ORDER BY idempotency_key`,
        ),
      ).toEqual([
        { key: 'order-a', status: 'succeeded', amount: 5000, amount_refunded: 5000, disputed: false },
        { key: 'order-b', status: 'succeeded', amount: 4000, amount_refunded: 1500, disputed: false },
        { key: 'order-c', status: 'succeeded', amount: 3000, amount_refunded: 0, disputed: true },
        { key: 'order-d', status: 'succeeded', amount: 2500, amount_refunded: 500, disputed: false },
        { key: 'order-d2', status: 'succeeded', amount: 1800, amount_refunded: 0, disputed: false },
        { key: 'order-e', status: 'succeeded', amount: 6000, amount_refunded: 6000, disputed: false },
        { key: 'order-h', status: 'succeeded', amount: 2000, amount_refunded: 0, disputed: false },
        { key: 'order-late', status: 'succeeded', amount: 700, amount_refunded: 0, disputed: false },
      ]);
      // E's own creation events are past Stripe's 30 days: only its refund's recent event told of it.
      const created = double.events(null, 'charge.succeeded').find((e) => e.data.object.id === ids.e);
      expect(created!.created * 1000).toBeLessThan(Date.now() - 30 * DAY);
      const findings = await rows(
        afterRun2,
        `SELECT category, charge_id, state FROM recon_findings ORDER BY category, charge_id`,
      );
      const expected = [
        ...['a', 'b', 'c', 'd', 'e'].map((n) => ({ category: 'status_drift', charge_id: ids[n], state: 'repaired' })),
        { category: 'orphan_charge', charge_id: ids.f, state: 'repaired' },
        { category: 'unattributed_charge', charge_id: ids.g, state: 'open' },
      ];
      expect(findings).toEqual(expect.arrayContaining(expected));
      expect(findings).toHaveLength(expected.length);
      // One audit row per repair, each saying what the row was and what Stripe says.
      expect(
        await rows(afterRun2, `SELECT action, count(*)::int AS n FROM recon_repairs GROUP BY action ORDER BY action`),
      ).toEqual([
        { action: expect.stringMatching(/create/), n: 1 },
        { action: expect.stringMatching(/update/), n: 5 },
      ]);
    });

    it('judges a charge listed late, beyond the overlap, like any other: an orphan naming a known tenant gets its claim and payment row', async () => {
      expect(
        double
          .unlistedCharges()
          .map((c) => c.id)
          .sort(),
      ).toEqual([ids.f, ids.g].sort()); // no listing ever had them
      expect(
        await rows(
          afterRun2,
          `SELECT status, request_fingerprint, amount FROM idempotency_keys WHERE key = 'order-late'`,
        ),
      ).toEqual([{ status: 'completed', request_fingerprint: 'sweeper:recreated', amount: 700 }]);
      expect(
        await rows(afterRun2, `SELECT charge_id FROM stripe_charges WHERE charge_id = ANY($1) ORDER BY charge_id`, [
          [ids.f, ids.g],
        ]),
      ).toHaveLength(2);
    });

    it('records what the events step did on the run', async () => {
      expect(await rows(afterRun2, `SELECT changes FROM recon_runs WHERE id = $1`, [run2.report.run_id])).toEqual([
        { changes: run2.report.changes },
      ]);
      expect((await rows(afterRun2, `SELECT cursor FROM recon_event_cursors`))[0].cursor.toISOString()).toBe(
        run2.report.changes.cursor,
      );
    });

    // Last of this block: it runs on afterRun2, which the tests above only read.
    it('the run after it repairs nothing and changes no table', async () => {
      await asIfLater(afterRun2);
      const again = await run(afterRun2, double);
      expect(again.code, again.stderr).toBe(3);
      expect(again.report.repaired).toEqual(counts({}));
      // It reads the same events again (they are inside its overlap) and sees the one finding still open.
      expect(again.report.findings).toEqual(counts({ unattributed_charge: 1 }));
      expect(await normalizedTables(afterRun2.pool)).toEqual(tablesAfterRun2);
    });
  });

  describe('killed in the events step, then run again: the tables equal an uninterrupted run', () => {
    // npm test: before anything is written, at the end of the transaction, after its commit;
    // test:deep: every phase.
    const phases = atDepth({
      normal: ['listed', 'before-commit', 'committed'],
      deep: ['listed', 'ingested', 'judged', 'repaired', 'before-commit', 'committed'],
    });
    // Concurrent (each on its own copy; the double is only read): two CLI processes a
    // phase, so each case gets more than the default minute on a busy machine.
    it.concurrent.each(phases)('SIGKILL at changes:0:%s', { timeout: 180_000 }, async (phase) => {
      const db = await clone(template);
      const killed = await run(db, double, { SWEEPER_TEST_CRASH_AT: `changes:0:${phase}` });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      const rerun = await run(db, double);
      expect(rerun.code, rerun.stderr).toBe(3);
      expect(await normalizedTables(db.pool)).toEqual(tablesAfterRun2);
      expect((await rows(db, `SELECT cursor FROM recon_event_cursors`))[0].cursor.getTime()).toBeGreaterThan(
        cursor1.getTime(),
      );
    });
  });

  it('a cursor more than 25 days behind: warns, re-lists the charges created since, says so in the JSON, and reaches the same payments and findings', async () => {
    const db = await clone(template);
    await db.pool.query(`UPDATE recon_event_cursors SET cursor = $1`, [daysAgo(26)]);
    const { code, stderr, report } = await run(db, double);
    expect(code, stderr).toBe(3);
    expect(stderr).toMatch(/"level":40,.*"msg":"the events cursor is more than 25 days behind/);
    expect(report.changes.fallback).toEqual({
      from: expect.any(String),
      to: expect.any(String),
      hours: expect.any(Number),
      differing: expect.any(Number),
      not_swept_hours: expect.any(Number),
      charges: expect.any(Number),
      found: expect.any(Object),
      repaired: expect.any(Object),
    });
    expect(new Date(report.changes.fallback.from).getTime()).toBeLessThanOrEqual(daysAgo(26).getTime());
    // The re-list finds A to D2 and H, which the mirror never held; E (40 days) and the
    // unlisted F and G come through the events Stripe still keeps.
    expect(report.changes.fallback.differing).toBeGreaterThan(0);
    expect(report.findings).toEqual(run2.report.findings);
    // C is judged twice: re-listed first (disputed, no dispute event read yet), then again
    // once its dispute event is read (docs/judgement.md "Disputes"). The tables end the same.
    expect(report.repaired).toEqual({ ...run2.report.repaired, status_drift: run2.report.repaired.status_drift + 1 });
    const tables = await normalizedTables(db.pool);
    expect(tables.payments).toEqual(tablesAfterRun2.payments);
    expect(tables.claims).toEqual(tablesAfterRun2.claims);
    expect(tables.findings).toEqual(tablesAfterRun2.findings);
  });
  it('a key without Events read: the run fails (exit 1) naming rak_event_read, the events cursor stays; with the permission the next run loses nothing', async () => {
    const db = await clone(template);
    const denied = await run(db, double, { STRIPE_API_KEY: NO_EVENTS_KEY });
    expect(denied.code).toBe(1);
    const message =
      /sweeper: the Stripe key may not read events of the platform account \(403\): it is missing the Events read permission \(rak_event_read\)\. Grant 'Events: Read' to the restricted key\./;
    expect(denied.stderr).toMatch(message);
    expect(denied.report).toMatchObject({ status: 'failed', error: expect.stringMatching(/rak_event_read/) });
    expect(await rows(db, `SELECT status, error FROM recon_runs WHERE id = $1`, [denied.report.run_id])).toEqual([
      { status: 'failed', error: expect.stringMatching(/rak_event_read/) },
    ]);
    expect((await rows(db, `SELECT cursor FROM recon_event_cursors`))[0].cursor).toEqual(cursor1);
    expect(await rows(db, `SELECT count(*)::int AS n FROM recon_findings`)).toEqual([{ n: 0 }]);

    const granted = await run(db, double);
    expect(granted.code, granted.stderr).toBe(3);
    expect(granted.report.repaired).toEqual(run2.report.repaired);
    expect(await normalizedTables(db.pool)).toEqual(tablesAfterRun2);
  });
});

describe('events are only pointers', () => {
  it('duplicate and out-of-order events leave the same tables as one event per change', async () => {
    const charges = [
      { id: 'ch_LateRefundedInFull', key: 'dup-1', amount: 5000 },
      { id: 'ch_LateRefundedInPart', key: 'dup-2', amount: 4000 },
      { id: 'ch_LateDisputed', key: 'dup-3', amount: 3000 },
    ];
    const base = await baseDatabase(async (db) => {
      for (const [i, c] of charges.entries()) {
        const createdAt = daysAgo(6, i);
        await seedClaim(db.pool, {
          tenantId: 'acme',
          key: c.key,
          status: 'completed',
          createdAt,
          responseCharge: c.id,
          amount: c.amount,
          currency: 'usd',
        });
        await seedEffect(db.pool, { chargeId: c.id, tenantId: 'acme', key: c.key, amount: c.amount, createdAt });
      }
      await seedSweptRange(db.pool, 'platform', daysAgo(7), daysAgo(1));
    });
    await base.pool.end();
    // Seconds behind settle (65s): events the events read waits out, like the window, are not in it.
    const secondsAgo = (s: number): EventTiming => ({ created: new Date(Date.now() - (66 + s) * 1000) });

    const world = async (messy: boolean) => {
      const double = await startDouble();
      for (const [i, c] of charges.entries())
        double.createCharge(null, { id: c.id, created: daysAgo(6, i), amount: c.amount, metadata: meta(c.key) });
      // Unlisted for the next hour: only its events (two of each in the messy world) tell of it.
      const late = {
        id: 'ch_LateListed',
        created: new Date(Date.now() - 40 * MIN),
        amount: 800,
        metadata: meta('dup-late'),
        listedAt: new Date(Date.now() + 60 * MIN),
      };
      double.createCharge(null, messy ? { ...late, events: { copies: 2 } } : late);
      if (!messy) {
        double.refund('ch_LateRefundedInFull', undefined, secondsAgo(2));
        double.refund('ch_LateRefundedInPart', 1500, secondsAgo(2));
        double.dispute('ch_LateDisputed', secondsAgo(2));
      } else {
        // The same change reported three times, under three ids.
        double.refund('ch_LateRefundedInFull', undefined, { ...secondsAgo(2), copies: 3 });
        // Two refunds whose events arrive in the wrong order (the later one dated earlier),
        // then a stale copy of the first, dated earlier still: the charge says 1,500.
        double.refund('ch_LateRefundedInPart', 1000, secondsAgo(2));
        const [stale] = double
          .events(null, 'charge.refunded')
          .filter((e) => e.data.object.id === 'ch_LateRefundedInPart');
        double.refund('ch_LateRefundedInPart', 500, secondsAgo(90));
        double.duplicateEvent(stale!.id, secondsAgo(180));
        // A dispute whose events were listed minutes after they are dated.
        double.dispute('ch_LateDisputed', secondsAgo(8 * 60));
      }
      const db = await clone(base);
      const result = await run(db, double);
      expect(result.code, result.stderr).toBe(0);
      return { report: result.report, tables: await normalizedTables(db.pool) };
    };
    const [clean, messy] = await Promise.all([world(false), world(true)]);
    expect(clean.report.findings).toEqual(counts({ status_drift: 3, orphan_charge: 1 }));
    expect(clean.report.repaired).toEqual(counts({ status_drift: 3, orphan_charge: 1 }));
    expect(messy.report.changes.events).toBeGreaterThan(clean.report.changes.events);
    expect(messy.report.changes.charges).toBe(4);
    expect(messy.report.findings).toEqual(clean.report.findings);
    expect(messy.report.repaired).toEqual(clean.report.repaired);
    expect(messy.tables).toEqual(clean.tables);
    expect(clean.tables.payments).toContainEqual(
      expect.objectContaining({ charge_id: 'ch_LateRefundedInPart', amount_refunded: 1500 }),
    );
  });
});

describe('a run whose events span more than a day', () => {
  it('reads them a day per transaction and counts each event and each charge once (the overlap between days is read twice)', async () => {
    const double = await startDouble();
    const id = 'ch_TwoDaysOfEvents';
    // An earlier run left the events cursor 36 hours back (an outage, say): this run reads
    // [cursor − 10m, cursor + 1d) and then [cursor + 1d − 10m, now − 1s).
    const cursor = new Date(T0 - 36 * 60 * MIN);
    const db = await baseDatabase(async (db) => {
      await seedClaim(db.pool, {
        tenantId: 'acme',
        key: 'two-days',
        status: 'completed',
        createdAt: daysAgo(5),
        responseCharge: id,
        amount: 5000,
        currency: 'usd',
      });
      await seedEffect(db.pool, {
        chargeId: id,
        tenantId: 'acme',
        key: 'two-days',
        amount: 5000,
        createdAt: daysAgo(5),
      });
      await db.pool.query(
        `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at)
         VALUES ('run_before_the_outage', 'run', 'platform', $1, $2, 'succeeded', $2, $1)`,
        [new Date(cursor.getTime() - 60 * MIN), cursor],
      );
      await db.pool.query(
        `INSERT INTO recon_event_cursors (account, cursor, run_id, updated_at) VALUES ('platform', $1, 'run_before_the_outage', $1)`,
        [cursor],
      );
      await seedSweptRange(db.pool, 'platform', daysAgo(6), daysAgo(2));
    });
    double.createCharge(null, { id, created: daysAgo(5), amount: 5000, metadata: meta('two-days') });
    // Five minutes before the day boundary: inside both days' reads.
    const nearBoundary = new Date(cursor.getTime() + DAY - 5 * MIN);
    double.refund(id, 1000, { created: nearBoundary });
    double.dispute(id, justNow());
    // And an event whose object names no charge there: one lost pointer, logged once.
    double.emitEvent(null, 'charge.updated', { object: 'charge', amount: 5000 }, { created: nearBoundary });

    const { code, stderr, report } = await run(db, double);
    expect(code, stderr).toBe(0);
    // The first day's events bring the refund (and the charge now disputed), the second's the
    // dispute's status (docs/judgement.md "Disputes"): the row is repaired once a day.
    expect(report.repaired).toEqual(counts({ status_drift: 2 }));
    // charge.refunded, refund.created, charge.dispute.created, charge.dispute.funds_withdrawn; one charge.
    expect(report.changes).toMatchObject({ events: 4, charges: 1, malformed_events: 1 });
    expect(await rows(db, `SELECT amount_refunded, disputed, dispute_status FROM payments`)).toEqual([
      { amount_refunded: 1000, disputed: true, dispute_status: 'needs_response' },
    ]);
    expect((await rows(db, `SELECT cursor FROM recon_event_cursors`))[0].cursor.toISOString()).toBe(
      report.changes.cursor,
    );
  });
});
