import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { upsertCharges } from '../../src/sweep/mirror.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { sweep, sweepOptions, type SweepDeps, type SweepOptions, type SweepReport } from '../../src/sweep/sweep.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { normalizedTables } from '../support/normalized-tables.js';
import {
  charge,
  memoryChangeSource,
  memoryEvidence,
  memorySweepDeps,
  seedEffect,
  emptySweepTables,
  seedSweptRange,
  type MemoryEvent,
} from '../support/scenario.js';

/**
 * docs/judgement.md "Late changes": every later change to a charge, whatever its age, is judged by
 * the next ordinary scheduled run, through Stripe's events (and, behind them, the deep
 * re-read). Stripe, its events and the clock are in memory here; test/e2e covers the
 * same through the CLI and the Stripe double.
 */

const NOW = new Date('2026-11-10T12:00:00Z');
const MIN = 60_000;
const DAY = 86_400_000;
const secs = (d: Date) => Math.floor(d.getTime() / 1000);
const ago = (ms: number) => new Date(NOW.getTime() - ms);

let db: TestDatabase;
let stripe: NormalizedCharge[];
let events: MemoryEvent[];
const listCalls = { count: 0 };

function run(
  options: Partial<SweepOptions> = {},
  deps: Partial<SweepDeps> = {},
  clock = () => NOW,
): Promise<SweepReport[]> {
  return sweep(
    memorySweepDeps(db.pool, () => stripe, NOW, {
      listCalls,
      listChanges: memoryChangeSource(() => events),
      clock,
      ...deps,
    }),
    sweepOptions({ mode: 'run', accounts: ['platform'], firstRunLookbackMs: 15 * MIN, deepReadEveryMs: 0, ...options }),
  );
}

const q = async (sql: string, args: unknown[] = []) => (await db.pool.query(sql, args)).rows;
let serial = 0;
const event = (type: string, chargeId: string, at: Date): MemoryEvent => ({
  id: `evt_${++serial}`,
  type,
  created: secs(at),
  chargeId,
});

/** A charge 10 days old, recorded by a payment row long ago: no window will ever list it again. */
async function oldPayment(id: string, over: Partial<NormalizedCharge> = {}, age = 10 * DAY): Promise<NormalizedCharge> {
  const c = charge({ id, created: secs(ago(age)), amount: 5000, amountCaptured: 5000, ...over });
  stripe.push(c);
  await seedEffect(db.pool, { chargeId: id, amount: 5000, createdAt: ago(age), status: c.status });
  return c;
}

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: '2026-09-25', to: '2026-11-15' });
});
afterAll(async () => {
  await db.drop();
});
/** Empty tables, but for an earlier backfill of the last 45 days: the old charges here are in what the sweep judges again. */
async function reset(): Promise<void> {
  await emptySweepTables(db.pool);
  await seedSweptRange(db.pool, 'platform', ago(45 * DAY), ago(60 * MIN));
}

beforeEach(async () => {
  await reset();
  stripe = [];
  events = [];
  listCalls.count = 0;
});

describe('a change to a charge older than any window is judged by the next ordinary run', () => {
  const cases: Array<[string, Partial<NormalizedCharge>, string, Record<string, unknown>]> = [
    ['a full refund', { amountRefunded: 5000, refunded: true }, 'charge.refunded', { amount_refunded: 5000 }],
    ['a partial refund', { amountRefunded: 1200 }, 'charge.refunded', { amount_refunded: 1200 }],
    ['a dispute', { disputed: true }, 'charge.dispute.created', { disputed: true }],
    ['a capture', { status: 'succeeded', captured: true }, 'charge.captured', { status: 'succeeded' }],
  ];
  for (const [what, change, type, row] of cases) {
    it(`${what}: status_drift, repaired on the payment row`, async () => {
      const before =
        type === 'charge.captured' ? { status: 'pending' as const, captured: false, amountCaptured: 0 } : {};
      const c = await oldPayment('ch_old', before);
      Object.assign(c, change);
      events.push(event(type, c.id, ago(20 * MIN)));
      const [report] = await run();
      expect(report?.changes).toMatchObject({ events: 1, charges: 1 });
      expect(report?.repaired.status_drift).toBe(1);
      expect(
        (await q(`SELECT amount_refunded, disputed, status FROM payments WHERE charge_id = 'ch_old'`))[0],
      ).toMatchObject(row);
      expect(await q(`SELECT category, state FROM recon_findings`)).toEqual([
        { category: 'status_drift', state: 'repaired' },
      ]);
    });
  }

  it('a refund 40 days after its charge, seen through its recent event', async () => {
    const c = await oldPayment('ch_40d', {}, 40 * DAY);
    c.amountRefunded = 5000;
    c.refunded = true;
    events.push(event('charge.refunded', c.id, ago(12 * MIN)));
    const [report] = await run();
    expect(report?.repaired.status_drift).toBe(1);
    expect(await q(`SELECT amount_refunded FROM payments`)).toEqual([{ amount_refunded: 5000 }]);
  });

  it('a charge Stripe lists late, past the overlap, is judged like any other (an orphan here)', async () => {
    await seedEffect(db.pool, { chargeId: 'ch_known', tenantId: 'acme', key: 'earlier', createdAt: ago(DAY) });
    stripe.push(charge({ id: 'ch_known', created: secs(ago(DAY)), tenantId: 'acme', idempotencyKey: 'earlier' }));
    // Created three hours ago, but absent from every listing until now.
    const late = charge({
      id: 'ch_late',
      created: secs(ago(3 * 60 * MIN)),
      tenantId: 'acme',
      idempotencyKey: 'order-late',
      amount: 700,
    });
    events.push(event('charge.succeeded', late.id, ago(15 * MIN)));
    const evidence = memoryEvidence(() => [...stripe, late]);
    const [report] = await run({}, { evidence });
    expect(report?.findings.orphan_charge).toBe(1);
    expect(await q(`SELECT charge_id, amount FROM payments WHERE charge_id = 'ch_late'`)).toEqual([
      { charge_id: 'ch_late', amount: 700 },
    ]);
  });
});

describe('the events cursor', () => {
  it('starts a first run SWEEPER_FIRST_RUN_LOOKBACK back, stops SWEEPER_SETTLE (or the longer SWEEPER_EVENTS_LAG) before now, and moves on', async () => {
    const c = await oldPayment('ch_old');
    events.push(event('charge.refunded', c.id, ago(2 * MIN))); // younger than settle (10 min): next time
    const [first] = await run();
    expect(first?.changes).toMatchObject({ events: 0, cursor: ago(10 * MIN).toISOString() });
    c.amountRefunded = 10;
    const [second] = await run({}, {}, () => new Date(NOW.getTime() + 15 * MIN));
    expect(second?.changes).toMatchObject({ events: 1, charges: 1 });
    expect(second?.repaired.status_drift).toBe(1);
  });

  it('duplicate and out-of-order events leave the same result as one', async () => {
    const single = async (list: () => MemoryEvent[]) => {
      await reset();
      stripe = [];
      const c = await oldPayment('ch_old');
      c.amountRefunded = 300;
      c.disputed = true;
      events = list();
      await run();
      return normalizedTables(db.pool);
    };
    const once = await single(() => [event('charge.refunded', 'ch_old', ago(12 * MIN))]);
    const messy = await single(() => [
      event('charge.dispute.created', 'ch_old', ago(7 * MIN)),
      event('charge.refunded', 'ch_old', ago(20 * MIN)),
      event('charge.refunded', 'ch_old', ago(20 * MIN)),
      event('charge.updated', 'ch_old', ago(9 * MIN)),
    ]);
    expect(messy).toEqual(once);
  });

  it('more than 25 days behind: warns, re-lists the charges created since instead, and reads the events Stripe still has', async () => {
    await db.pool.query(
      `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at)
                         VALUES ('run_old', 'run', 'platform', $1, $2, 'succeeded', $2, $1)`,
      [ago(41 * DAY), ago(40 * DAY)],
    );
    await db.pool.query(`INSERT INTO recon_event_cursors VALUES ('platform', $1, 'run_old', $1)`, [ago(40 * DAY)]);
    // A charge from 20 days ago the mirror never saw: the re-list finds it.
    stripe.push(charge({ id: 'ch_unseen', created: secs(ago(20 * DAY)) }));
    const [report] = await run();
    expect(report?.changes?.fallback).toMatchObject({ from: expect.any(String), differing: 1 });
    expect(new Date(report!.changes!.fallback!.from).getTime()).toBeLessThanOrEqual(ago(40 * DAY).getTime());
    expect(report?.findings.unattributed_charge).toBe(1);
    expect(report?.changes?.cursor).toBe(ago(10 * MIN).toISOString());
  });
});

describe('the deep re-read', () => {
  it('catches a change no event told of, judging only the hours that differ; then waits SWEEPER_DEEP_READ_EVERY', async () => {
    const c = await oldPayment('ch_recent', {}, 2 * DAY);
    stripe.push(charge({ id: 'ch_quiet', created: secs(ago(DAY)), amount: 5000 }));
    await seedEffect(db.pool, { chargeId: 'ch_quiet', amount: 5000, createdAt: ago(DAY) });
    // Both in the mirror as they were, as earlier runs left them.
    await upsertCharges(db.pool, stripe, ago(DAY));
    const options = { deepReadEveryMs: DAY, deepReadDays: 3 };
    c.amountRefunded = 900; // no event
    await db.pool.query(`UPDATE recon_deep_reads SET last_at = $1`, [ago(2 * DAY)]);
    const [report] = await run(options, {}, () => new Date(NOW.getTime() + MIN));
    expect(report?.changes?.deep_read).toMatchObject({ hours: expect.any(Number), differing: 1 });
    expect(report?.repaired.status_drift).toBe(1);
    const calls = listCalls.count;
    const [next] = await run(options, {}, () => new Date(NOW.getTime() + 2 * MIN));
    expect(next?.changes?.deep_read).toBeUndefined();
    expect(listCalls.count - calls).toBeLessThanOrEqual(2); // the window's slices only
  });
});

describe('crashes in the events step', () => {
  it('a kill at any phase, then a rerun: the tables equal an uninterrupted run', async () => {
    const setup = async () => {
      await reset();
      stripe = [];
      const a = await oldPayment('ch_a');
      a.amountRefunded = 100;
      const b = await oldPayment('ch_b', {}, 12 * DAY);
      b.disputed = true;
      events = [
        event('charge.refunded', 'ch_a', ago(12 * MIN)),
        event('charge.dispute.created', 'ch_b', ago(11 * MIN)),
      ];
    };
    await setup();
    const [uninterrupted] = await run();
    expect(uninterrupted?.repaired.status_drift).toBe(2);
    const expected = await normalizedTables(db.pool);
    for (const phase of ['listed', 'ingested', 'judged', 'repaired', 'before-commit', 'committed']) {
      await setup();
      const error = await run(
        {},
        {
          faultPoint: (name) => {
            if (name === `changes:0:${phase}`) throw new Error(`killed at ${name}`);
          },
        },
      ).catch((e: unknown) => e);
      expect((error as Error).message, phase).toBe(`killed at changes:0:${phase}`);
      await run();
      expect(await normalizedTables(db.pool), `killed at ${phase}`).toEqual(expected);
    }
  }, 240_000);
});

describe('a first run judges only what it says it judges (docs/judgement.md "Late changes")', () => {
  beforeEach(async () => {
    await emptySweepTables(db.pool); // nothing swept yet: a fresh database
  });

  it('an event about a charge older than anything swept is left for a backfill; judged once a backfill swept its day', async () => {
    const c = await oldPayment('ch_before_us', {}, 10 * DAY);
    c.amountRefunded = 5000;
    c.refunded = true;
    events.push(event('charge.refunded', c.id, ago(12 * MIN)));
    const [first] = await run();
    expect(first?.changes).toMatchObject({ events: 1, charges: 0, not_swept: 1, found: {}, repaired: {} });
    expect(first?.repaired.status_drift).toBe(0);
    expect(await q(`SELECT amount_refunded FROM payments`)).toEqual([{ amount_refunded: 0 }]);

    // A backfill over that day, then the next run's events (re-read with the overlap) reach it.
    const [backfill] = await run({ mode: 'backfill', window: { from: ago(11 * DAY), to: ago(9 * DAY) } });
    expect(backfill?.repaired.status_drift).toBe(1);
    expect(await q(`SELECT amount_refunded FROM payments`)).toEqual([{ amount_refunded: 5000 }]);
  });

  it("the first run's deep re-read compares no hour before its lookback, and a later one compares what earlier runs swept", async () => {
    // Two days old, never listed: an unattributed charge that a deep re-read of unswept hours would raise.
    stripe.push(charge({ id: 'ch_old_unattributed', created: secs(ago(2 * DAY)) }));
    const deep = { deepReadEveryMs: DAY, deepReadDays: 3 };
    const [first] = await run(deep);
    expect(first?.changes?.deep_read).toMatchObject({ hours: 0, differing: 0, charges: 0 });
    expect(first?.changes?.deep_read?.not_swept_hours).toBeGreaterThanOrEqual(72);
    expect(first?.findings.unattributed_charge).toBe(0);

    // A backfill of those days (it finds the charge), then a day later a charge appears at Stripe
    // in an hour the backfill swept, listed by nobody: the next deep re-read finds it.
    await run({ mode: 'backfill', window: { from: ago(3 * DAY), to: ago(DAY) } });
    stripe.push(charge({ id: 'ch_listed_late', created: secs(ago(2 * DAY - 3 * 60 * MIN)) }));
    const [later] = await run(deep, {}, () => new Date(NOW.getTime() + DAY + MIN));
    expect(later?.changes?.deep_read).toMatchObject({ differing: 1, charges: expect.any(Number) });
    expect(later?.changes?.deep_read?.hours).toBeGreaterThan(0);
    expect(later?.changes?.deep_read?.found).toEqual({ unattributed_charge: 1 });
  });
});
