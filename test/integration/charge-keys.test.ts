import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expirePartitions } from '../../src/db/expire.js';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import { loadSliceFacts } from '../../src/sweep/facts-sql.js';
import { upsertCharges } from '../../src/sweep/mirror.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { charge } from '../support/scenario.js';

/**
 * The mirror's key index (docs/performance.md "The throughput design"): every write to the mirror,
 * whatever its path, files the charge under the key its metadata names, so a key's
 * charges are found with one probe; an entry left behind by changed metadata is never
 * taken for evidence; `expire` drops the entries of the days it drops.
 */
let db: TestDatabase;
const DAY = 86_400_000;
const NOW = new Date(Date.UTC(2026, 10, 20, 12));
const at = (daysAgo: number) => Math.floor((NOW.getTime() - daysAgo * DAY) / 1000);

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: utcDay(new Date(NOW.getTime() - 20 * DAY)), to: utcDay(NOW) }, [
    'stripe_charges',
  ]);
});
afterAll(async () => db.drop());

const entries = async (key: string) =>
  (
    await db.pool.query<{ charge_id: string }>(
      'SELECT charge_id FROM stripe_charge_keys WHERE idempotency_key = $1 ORDER BY charge_id',
      [key],
    )
  ).rows.map((r) => r.charge_id);

/** The charges the sweep judges with key `key` of tenant `t1`, in a slice of today that holds none of them. */
async function evidenceOf(key: string): Promise<string[]> {
  const slice = { from: new Date(NOW.getTime() - 3_600_000), to: NOW };
  await db.pool.query(
    `INSERT INTO payments (charge_id, tenant_id, idempotency_key, amount, currency, status, created_at, updated_at)
     VALUES ($1, 't1', $2, 1000, 'usd', 'succeeded', $3, $3) ON CONFLICT DO NOTHING`,
    [`ch_local_${key}`, key, new Date(NOW.getTime() - 60_000)],
  );
  const facts = await loadSliceFacts(db.pool, 'platform', slice);
  const identity = facts.identities.find((i) => i.key === key);
  return (identity?.charges ?? []).map((c) => c.id).sort();
}

const attributed = (id: string, key: string, daysAgo: number, over: Partial<NormalizedCharge> = {}) =>
  charge({ id, created: at(daysAgo), tenantId: 't1', idempotencyKey: key, ...over });

describe('stripe_charge_keys', () => {
  it('files every charge landed through the sweep, and the ones written by hand, under its key', async () => {
    await upsertCharges(db.pool, [attributed('ch_a1', 'key_a', 10), attributed('ch_a2', 'key_a', 2)], NOW);
    await db.pool.query(
      `INSERT INTO stripe_charges (account, charge_id, created, amount, amount_captured, amount_refunded, currency,
         status, captured, refunded, disputed, tenant_id, idempotency_key, livemode, fetched_at)
       VALUES ('platform', 'ch_a3', $1, 1000, 1000, 0, 'usd', 'succeeded', true, false, false, 't1', 'key_a', false, $2)`,
      [new Date(at(5) * 1000), NOW],
    );
    await upsertCharges(db.pool, [charge({ id: 'ch_loose', created: at(1) })], NOW);
    expect(await entries('key_a')).toEqual(['ch_a1', 'ch_a2', 'ch_a3']);
    expect(await evidenceOf('key_a')).toEqual(['ch_a1', 'ch_a2', 'ch_a3']);
  });

  it('a row new to the mirror whose entry is already there (the mirror lost it) lands, beside new ones', async () => {
    await upsertCharges(db.pool, [attributed('ch_kept', 'key_kept', 4, { reference: 'ord_kept' })], NOW);
    // The mirror loses the row, its entries stay (TRUNCATE fires no row trigger).
    await db.pool.query(`DELETE FROM stripe_charges WHERE charge_id = 'ch_kept'`);
    const later = new Date(NOW.getTime() + 2_000);
    await upsertCharges(
      db.pool,
      [
        attributed('ch_kept', 'key_kept', 4, { reference: 'ord_kept' }),
        attributed('ch_kept2', 'key_kept', 4, { reference: 'ord_kept' }),
      ],
      later,
    );
    expect(await entries('key_kept')).toEqual(['ch_kept', 'ch_kept2']);
    const refs = await db.pool.query<{ charge_id: string }>(
      `SELECT charge_id FROM stripe_charge_references WHERE reference = 'ord_kept' ORDER BY charge_id`,
    );
    expect(refs.rows.map((r) => r.charge_id)).toEqual(['ch_kept', 'ch_kept2']);
  });

  it('a charge whose metadata changed is evidence of its new key only', async () => {
    await upsertCharges(db.pool, [attributed('ch_moved', 'key_old', 3)], NOW);
    await upsertCharges(db.pool, [attributed('ch_moved', 'key_new', 3)], new Date(NOW.getTime() + 1_000));
    expect(await entries('key_old')).toEqual(['ch_moved']); // the stale entry stays...
    expect(await evidenceOf('key_old')).toEqual([]); // ...and is never taken for evidence
    expect(await evidenceOf('key_new')).toEqual(['ch_moved']);
  });

  it("a slice's key has as evidence its charges in what the slice listed and outside it, each once", async () => {
    // A slice's charges are read from the window it listed (one range scan) plus, through
    // the index, the key's charges outside it: both parts, and never a stale entry.
    const slice = { from: new Date(NOW.getTime() - 2 * 3_600_000), to: new Date(NOW.getTime() - 3_600_000) };
    const listed = { from: new Date(slice.from.getTime() - 120_000), to: new Date(slice.to.getTime() + 120_000) };
    const inSlice = Math.floor(slice.from.getTime() / 1000) + 600;
    const inMargin = Math.floor(slice.to.getTime() / 1000) + 60;
    const named = (id: string, key: string, created: number) =>
      charge({ id, created, tenantId: 't1', idempotencyKey: key });
    await upsertCharges(
      db.pool,
      [
        named('ch_w_in', 'key_w', inSlice),
        named('ch_w_margin', 'key_w', inMargin),
        attributed('ch_w_old', 'key_w', 4),
        named('ch_w_moved', 'key_gone', inSlice + 5),
      ],
      NOW,
    );
    // Its metadata changed: the entry under key_gone stays, inside the listed window.
    await upsertCharges(db.pool, [named('ch_w_moved', 'key_w2', inSlice + 5)], new Date(NOW.getTime() + 1_000));
    await db.pool.query(
      `INSERT INTO payments (charge_id, tenant_id, idempotency_key, amount, currency, status, created_at, updated_at)
       VALUES ('ch_local_gone', 't1', 'key_gone', 1000, 'usd', 'succeeded', $1, $1)`,
      [new Date(inSlice * 1000)],
    );
    const facts = await loadSliceFacts(db.pool, 'platform', slice, listed);
    const evidence = (key: string) => {
      const identity = facts.identities.find((i) => i.key === key);
      return identity ? identity.charges.map((c) => c.id).sort() : null;
    };
    expect(evidence('key_w')).toEqual(['ch_w_in', 'ch_w_margin', 'ch_w_old']);
    expect(evidence('key_w2')).toEqual(['ch_w_moved']);
    expect(evidence('key_gone')).toEqual([]); // judged (its payment row), without the moved charge
  });

  it('expire drops the entries of the days it drops from the mirror, and keeps the rest', async () => {
    await upsertCharges(db.pool, [attributed('ch_old', 'key_e', 15), attributed('ch_kept', 'key_e', 1)], NOW);
    await expirePartitions(db.pool, { now: NOW, retentionMs: 7 * DAY });
    expect(await entries('key_e')).toEqual(['ch_kept']);
    expect(await entries('key_a')).toEqual(['ch_a2', 'ch_a3']); // 10 days ago: gone with its day
  });
});
