import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import { inTransaction } from '../../src/db/pool.js';
import { DEFAULT_METADATA_KEYS, normalizeCharge } from '../../src/providers/stripe/normalize.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { upsertCharges } from '../../src/sweep/mirror.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { chargeObject } from '../support/fuzz.js';
import { checkProperty } from '../support/properties.js';

/**
 * Whatever the normaliser accepts, PostgreSQL stores: fuzzed charges, normalised, go
 * into the real mirror through upsertCharges (each batch in a transaction rolled back).
 * Only charges dated inside the listed range are kept, as the lister does: the days of
 * that range are the partitions a slice ensures.
 */
let db: TestDatabase;
const DAY = 86_400;
const now = Math.floor(Date.now() / 1000);
const from = now - 2 * DAY;

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: utcDay(new Date(from * 1000)), to: utcDay(new Date(now * 1000)) }, [
    'stripe_charges',
  ]);
});
afterAll(async () => {
  await db.drop();
});

describe('fuzzed charges in the real mirror', () => {
  it('every charge the normaliser accepts is stored without a database error', async () => {
    await checkProperty(
      'fuzz-mirror: stored',
      { normal: 100, deep: 1_000 },
      [fc.array(chargeObject(fc.integer({ min: from, max: now - 1 })), { maxLength: 40 })],
      async (raws) => {
        const charges = new Map<string, NormalizedCharge>();
        for (const raw of raws) {
          const result = normalizeCharge(raw, 'acct_1Fuzz', DEFAULT_METADATA_KEYS, now);
          if (result.ok && result.charge.created >= from && result.charge.created < now)
            charges.set(result.charge.id, result.charge);
        }
        await inTransaction(db.pool, async (client) => {
          await upsertCharges(client, [...charges.values()], new Date());
          throw new RollBack();
        }).catch((error: unknown) => {
          if (!(error instanceof RollBack)) throw error;
        });
      },
    );
  });
});

class RollBack extends Error {}
