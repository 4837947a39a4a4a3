import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import { inTransaction } from '../../src/db/pool.js';
import { copyCharges } from '../../src/sweep/mirror-copy.js';
import { upsertCharges } from '../../src/sweep/mirror.js';
import { isDataError, upsertChargesIsolating } from '../../src/sweep/mirror-isolating.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * The mirror's safety net against real PostgreSQL: rows the database refuses are
 * isolated by bisection inside savepoints, every other row is written, the caller's
 * transaction stays usable, and errors that are not about the data are rethrown.
 */
let db: TestDatabase;
const DAY = 86_400;
const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
const fetchedAt = new Date();

function charge(id: string, over: Partial<NormalizedCharge> = {}): NormalizedCharge {
  return {
    id,
    account: null,
    created: today + 3_600,
    amount: 1000,
    amountCaptured: 1000,
    amountRefunded: 0,
    currency: 'usd',
    status: 'succeeded',
    captured: true,
    refunded: false,
    disputed: false,
    paymentIntent: null,
    customer: null,
    paymentMethod: null,
    tenantId: null,
    idempotencyKey: null,
    livemode: false,
    ...over,
  };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: utcDay(new Date(today * 1000)), to: utcDay(new Date(today * 1000)) }, [
    'stripe_charges',
  ]);
  // A rule the normaliser knows nothing about: exactly what the safety net is for.
  await db.pool.query(
    `ALTER TABLE stripe_charges ADD CONSTRAINT test_no_poison CHECK (tenant_id IS DISTINCT FROM 'poison')`,
  );
});

afterAll(async () => {
  await db.drop();
});

describe('upsertChargesIsolating', () => {
  it('writes every good charge and returns each refused one with PostgreSQL’s reason; the transaction commits', async () => {
    const good = Array.from({ length: 50 }, (_, i) => charge(`ch_good_${i}`));
    const bad = [
      charge('ch_bad_check', { tenantId: 'poison' }),
      charge('ch_bad_currency', { currency: 'usdt' }),
      charge('ch_bad_nul', { tenantId: 'acme\u0000' }),
      charge('ch_bad_no_partition', { created: today - 400 * DAY }),
    ];
    const batch = [...good.slice(0, 10), bad[0]!, ...good.slice(10, 30), bad[1]!, bad[2]!, ...good.slice(30), bad[3]!];
    const result = await inTransaction(db.pool, async (client) => {
      const outcome = await upsertChargesIsolating(client, batch, fetchedAt);
      // Still usable: a refused statement did not abort the caller's transaction.
      await client.query('SELECT 1');
      return outcome;
    });
    expect(result.written).toBe(50);
    expect(Object.fromEntries(result.refused.map((r) => [r.charge.id, r.error.code]))).toEqual({
      ch_bad_check: '23514',
      ch_bad_currency: '22001',
      ch_bad_nul: '22P05',
      ch_bad_no_partition: '23514',
    });
    const { rows } = await db.pool.query<{ charge_id: string }>(
      `SELECT charge_id FROM stripe_charges ORDER BY charge_id`,
    );
    expect(rows.map((r) => r.charge_id)).toEqual(good.map((c) => c.id).sort());
  });

  it('costs one statement and a savepoint when nothing is wrong', async () => {
    const client = await db.pool.connect();
    const sent: string[] = [];
    const query = client.query.bind(client);
    try {
      await query('BEGIN');
      const spy = {
        query: (text: string, values?: unknown[]) => (
          sent.push(text.trim().split(/\s+/)[0] ?? ''),
          query(text, values)
        ),
      };
      const result = await upsertChargesIsolating(
        spy as never,
        [charge('ch_quiet_1'), charge('ch_quiet_2')],
        fetchedAt,
      );
      expect(result).toEqual({ written: 2, refused: [] });
      expect(sent).toEqual(['SAVEPOINT', 'INSERT', 'RELEASE']);
    } finally {
      await query('ROLLBACK');
      client.release();
    }
  });

  it('rethrows what is not about the data: a lock timeout, and being called outside a transaction', async () => {
    await upsertCharges(db.pool, [charge('ch_locked')], new Date(fetchedAt.getTime() - 1_000));
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM stripe_charges WHERE charge_id = 'ch_locked' FOR UPDATE`);
      const error = await inTransaction(db.pool, async (client) => {
        await client.query(`SET LOCAL lock_timeout = '200ms'`);
        return upsertChargesIsolating(client, [charge('ch_other'), charge('ch_locked')], fetchedAt);
      }).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: '55P03' });
      expect(isDataError(error)).toBe(false);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    await expect(upsertChargesIsolating(db.pool, [charge('ch_outside')], fetchedAt)).rejects.toMatchObject({
      code: '25P01',
    });
  });
});

describe('every way a batch lands keeps the newer read', () => {
  const landings = {
    upsertCharges: (charges: NormalizedCharge[], at: Date) => upsertCharges(db.pool, charges, at),
    copyCharges: (charges: NormalizedCharge[], at: Date) =>
      inTransaction(db.pool, (client) => copyCharges(client, charges, at)),
  };
  for (const [name, land] of Object.entries(landings)) {
    it(`${name}: a read older than the row's never rolls it back; a newer one overwrites it`, async () => {
      const id = `ch_newer_${name}`;
      const t = fetchedAt.getTime();
      await land([charge(id, { amountRefunded: 1000, refunded: true })], new Date(t));
      await land([charge(id)], new Date(t - 60_000)); // a slow request that returned late
      const row = async () =>
        (
          await db.pool.query('SELECT refunded, amount_refunded, fetched_at FROM stripe_charges WHERE charge_id = $1', [
            id,
          ])
        ).rows[0] as { refunded: boolean; amount_refunded: number; fetched_at: Date };
      expect(await row()).toMatchObject({ refunded: true, amount_refunded: 1000, fetched_at: new Date(t) });
      await land([charge(id, { disputed: true, amountRefunded: 1000, refunded: true })], new Date(t + 60_000));
      expect(await row()).toMatchObject({ refunded: true, fetched_at: new Date(t + 60_000) });
      expect((await db.pool.query('SELECT disputed FROM stripe_charges WHERE charge_id = $1', [id])).rows[0]).toEqual({
        disputed: true,
      });
    });
  }
});
