import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { resolveFinding } from '../../src/sweep/status.js';
import { sweep, sweepOptions, type SweepOptions } from '../../src/sweep/sweep.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { normalizedTables } from '../support/normalized-tables.js';
import { charge, emptySweepTables, memorySweepDeps, seedPaid } from '../support/scenario.js';

/**
 * docs/judgement.md "Duplicate payments for one order" through the real sweep on the real
 * schema: the outcome judged wherever its payments fall (another slice, another run, days
 * apart), one open finding per group, closed by the sweeper once the extras are refunded,
 * a person's verdict that sticks, and unstable_keys from the claim library's own counts.
 */

const DAY = 86_400_000;
const MIN = 60_000;
const NOW = new Date('2026-11-10T12:00:00Z');
const ago = (ms: number) => new Date(NOW.getTime() - ms);
const secs = (d: Date) => Math.floor(d.getTime() / 1000);

let db: TestDatabase;
let stripe: NormalizedCharge[];

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: '2026-10-30', to: '2026-11-12' });
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  await emptySweepTables(db.pool);
  stripe = [];
});

/** A backfill of [from, to) at `now`. */
function backfill(from: Date, to: Date, now = NOW, options: Partial<SweepOptions> = {}) {
  return sweep(
    memorySweepDeps(db.pool, () => stripe, now),
    sweepOptions({ mode: 'backfill', accounts: ['platform'], window: { from, to }, ...options }),
  );
}

/** A payment for an order made through the library: claim, row and charge agree. */
function paid(id: string, key: string, at: Date, over: Partial<NormalizedCharge> = {}) {
  return seedPaid(db.pool, stripe, { id, tenantId: 'shop', key, at, over: { reference: 'order-1', ...over } });
}

const findings = async (category: string) =>
  (
    await db.pool.query<{
      id: number;
      subject: string;
      state: string;
      closed_by: string | null;
      details: Record<string, unknown>;
    }>(`SELECT id, subject, state, closed_by, details FROM recon_findings WHERE category = $1 ORDER BY id`, [category])
  ).rows;

describe('duplicate_effect through the sweep', () => {
  it('two payments for one order under two keys, four days apart and in two backfills: found by the second', async () => {
    await paid('ch_first', 'attempt-1', ago(5 * DAY));
    const [first] = await backfill(ago(5 * DAY + 60 * MIN), ago(5 * DAY - 60 * MIN));
    expect(first).toMatchObject({ findings: { matched: 1, duplicate_effect: 0 }, unreconciled: 0 });

    await paid('ch_again', 'attempt-2', ago(DAY));
    const [second] = await backfill(ago(DAY + 60 * MIN), ago(DAY - 60 * MIN));
    expect(second).toMatchObject({ findings: { matched: 1, duplicate_effect: 1 }, unreconciled: 1 });
    const [f] = await findings('duplicate_effect');
    expect(f).toMatchObject({
      state: 'open',
      details: { kept: 'ch_first', extras: ['ch_again'], reference: 'order-1' },
    });

    // A rerun of either window changes nothing.
    const before = await normalizedTables(db.pool);
    await backfill(ago(5 * DAY + 60 * MIN), ago(5 * DAY - 60 * MIN));
    await backfill(ago(DAY + 60 * MIN), ago(DAY - 60 * MIN));
    expect((await normalizedTables(db.pool)).findings).toEqual(before.findings);
  });

  it('another tenant, another account, another amount or the same key are not duplicates', async () => {
    await paid('ch_1', 'k1', ago(3 * 60 * MIN));
    await paid('ch_2', 'k2', ago(2 * 60 * MIN), { tenantId: 'other-shop' });
    await paid('ch_3', 'k3', ago(2 * 60 * MIN), { amount: 500 });
    stripe.push(
      charge({
        id: 'ch_4',
        created: secs(ago(60 * MIN)),
        tenantId: 'shop',
        idempotencyKey: 'k1',
        reference: 'order-1',
      }),
    );
    const [report] = await backfill(ago(4 * 60 * MIN), ago(30 * MIN));
    expect(report?.findings.duplicate_effect).toBe(0);
    expect(report?.findings.duplicate_charge).toBe(1); // ch_4: the same key twice
  });

  it('closes by itself once every extra is refunded in full; a partial refund keeps it open', async () => {
    await paid('ch_a', 'k1', ago(3 * 60 * MIN));
    const extra = await paid('ch_b', 'k2', ago(2 * 60 * MIN));
    const window = [ago(4 * 60 * MIN), ago(30 * MIN)] as const;
    await backfill(...window);
    extra.amountRefunded = 400;
    await backfill(...window);
    expect((await findings('duplicate_effect')).map((f) => f.state)).toEqual(['open']);
    extra.amountRefunded = extra.amount;
    extra.refunded = true;
    const [report] = await backfill(...window);
    expect(report?.unreconciled).toBe(0);
    expect(await findings('duplicate_effect')).toMatchObject([{ state: 'resolved', closed_by: 'sweeper' }]);
  });

  it("a person's not-a-duplicate sticks; a third payment joining the group raises a new finding naming all three", async () => {
    await paid('ch_a', 'k1', ago(3 * 60 * MIN));
    await paid('ch_b', 'k2', ago(2 * 60 * MIN));
    const window = [ago(4 * 60 * MIN), ago(30 * MIN)] as const;
    await backfill(...window);
    const [f] = await findings('duplicate_effect');
    await resolveFinding(db.pool, { id: f!.id, note: 'two tickets', actor: 'alice', now: NOW, notDuplicate: true });
    const [again] = await backfill(...window);
    expect(again?.unreconciled).toBe(0);
    expect(await findings('duplicate_effect')).toMatchObject([{ state: 'resolved', closed_by: 'alice' }]);

    await paid('ch_c', 'k3', ago(60 * MIN));
    const [third] = await backfill(...window);
    expect(third?.unreconciled).toBe(1);
    const all = await findings('duplicate_effect');
    expect(all.map((x) => [x.state, x.closed_by])).toEqual([
      ['resolved', 'alice'],
      ['open', null],
    ]);
    expect(all[1]?.details.extras).toEqual(['ch_b', 'ch_c']);
  });
});

describe('suspected_duplicate through the sweep', () => {
  it('one customer paying the same amount twice, four minutes apart across a slice boundary: one finding, stable on reruns', async () => {
    const buy = (id: string, key: string, at: Date) =>
      stripe.push(
        charge({ id, created: secs(at), tenantId: 'shop', idempotencyKey: key, customer: 'cus_9', reference: null }),
      );
    buy('ch_x', 'k-x', new Date('2026-11-10T08:58:00Z'));
    buy('ch_y', 'k-y', new Date('2026-11-10T09:02:00Z'));
    const window = [new Date('2026-11-10T07:00:00Z'), new Date('2026-11-10T11:00:00Z')] as const;
    const [report] = await backfill(...window, NOW, { sliceMs: 60 * MIN });
    expect(report?.findings.suspected_duplicate).toBe(1);
    const before = await normalizedTables(db.pool);
    await backfill(...window, NOW, { sliceMs: 60 * MIN });
    expect((await normalizedTables(db.pool)).findings).toEqual(before.findings);
    expect(await findings('suspected_duplicate')).toMatchObject([{ subject: 'suspect\u241fch_x,ch_y', state: 'open' }]);
    const [off] = await backfill(...window, NOW, { suspectWindowMs: 0 });
    expect(off?.findings.suspected_duplicate).toBe(0);
  });
});

describe('unstable_keys', () => {
  it('a tenant with duplicate payments whose keys are never retried; cleared once the claim library counts a replay', async () => {
    await paid('ch_a', 'k1', ago(3 * 60 * MIN));
    await paid('ch_b', 'k2', ago(2 * 60 * MIN));
    await db.pool.query(`INSERT INTO claim_outcomes VALUES ('shop', '2026-11-10', 'created', 2)`);
    const window = [ago(4 * 60 * MIN), ago(30 * MIN)] as const;
    const [report] = await backfill(...window);
    expect(report?.findings).toMatchObject({ duplicate_effect: 1, unstable_keys: 1 });
    expect(await findings('unstable_keys')).toMatchObject([
      { subject: 'shop\u241f*', state: 'open', details: { duplicate_effects: 1, replayed: 0, created: 2 } },
    ]);
    await db.pool.query(`INSERT INTO claim_outcomes VALUES ('shop', '2026-11-09', 'replayed', 1)`);
    await backfill(...window);
    expect(await findings('unstable_keys')).toMatchObject([{ state: 'resolved', closed_by: 'sweeper' }]);
  });
});
