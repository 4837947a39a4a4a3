import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoolClient } from '../../src/db/pool.js';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import { inTransaction } from '../../src/db/pool.js';
import { copyCharges, MirrorRefusedError } from '../../src/sweep/mirror-copy.js';
import { upsertCharges } from '../../src/sweep/mirror.js';
import { isDataError, upsertChargesIsolating } from '../../src/sweep/mirror-isolating.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { charge as chargeOf } from '../support/scenario.js';

/**
 * The mirror's safety net against real PostgreSQL: rows the database refuses are
 * isolated by bisection inside savepoints, every other row is written, the caller's
 * transaction stays usable, and errors that are not about the data are rethrown.
 */
let db: TestDatabase;
const DAY = 86_400;
const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
const fetchedAt = new Date();

/** A charge of today's partition (scenario.ts's defaults: $10 succeeded on the platform). */
const charge = (id: string, over: Partial<NormalizedCharge> = {}): NormalizedCharge =>
  chargeOf({ id, created: today + 3_600, ...over });

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

describe('copyCharges', () => {
  const ids = async (prefix: string) =>
    (
      await db.pool.query<{ charge_id: string }>(
        `SELECT charge_id FROM stripe_charges WHERE charge_id LIKE $1 ORDER BY charge_id`,
        [`${prefix}%`],
      )
    ).rows.map((r) => r.charge_id);

  it('guarded: lands the good charges and returns each refused one; the transaction commits', async () => {
    const batch = [charge('ch_cg_1'), charge('ch_cg_poison', { tenantId: 'poison' }), charge('ch_cg_2')];
    const result = await inTransaction(db.pool, (client) => copyCharges(client, batch, fetchedAt));
    expect(result.written).toBe(2);
    expect(result.refused.map((r) => r.charge.id)).toEqual(['ch_cg_poison']);
    expect(await ids('ch_cg_')).toEqual(['ch_cg_1', 'ch_cg_2']);
  });

  it('unguarded: a refusal is MirrorRefusedError and aborts the transaction, which writes nothing', async () => {
    const batch = [charge('ch_cu_1'), charge('ch_cu_poison', { tenantId: 'poison' })];
    const error = await inTransaction(db.pool, async (client) => {
      await copyCharges(client, [charge('ch_cu_0')], fetchedAt, { guarded: false });
      return copyCharges(client, batch, fetchedAt, { guarded: false });
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MirrorRefusedError);
    expect(await ids('ch_cu_')).toEqual([]);
  });

  it('each batch of one transaction lands only its own charges (the staging table is emptied as it is read)', async () => {
    const written = await inTransaction(db.pool, async (client) => [
      (await copyCharges(client, [charge('ch_cb_1'), charge('ch_cb_2')], fetchedAt, { guarded: false })).written,
      (await copyCharges(client, [charge('ch_cb_3')], fetchedAt, { guarded: false })).written,
      (await copyCharges(client, [charge('ch_cb_4')], fetchedAt)).written,
    ]);
    expect(written).toEqual([2, 1, 1]);
    expect(await ids('ch_cb_')).toEqual(['ch_cb_1', 'ch_cb_2', 'ch_cb_3', 'ch_cb_4']);
  });

  it('a staging table lost with a rolled-back transaction is made again by the next batch of the session', async () => {
    // A fresh session: its first batch creates the staging table, and that transaction rolls back.
    const client = new pg.Client({ connectionString: db.url }) as unknown as PoolClient;
    await client.connect();
    try {
      await client.query('BEGIN');
      await copyCharges(client, [charge('ch_cl_gone')], fetchedAt, { guarded: false });
      await client.query('ROLLBACK');
      await client.query('BEGIN');
      expect((await copyCharges(client, [charge('ch_cl_1')], fetchedAt, { guarded: false })).written).toBe(1);
      await client.query('ROLLBACK');
      await client.query('BEGIN');
      expect((await copyCharges(client, [charge('ch_cl_2')], fetchedAt, { guarded: false })).written).toBe(1);
      await client.query('COMMIT');
    } finally {
      await (client as unknown as pg.Client).end();
    }
    expect(await ids('ch_cl_')).toEqual(['ch_cl_2']);
  });
});
