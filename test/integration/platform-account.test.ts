import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { loadSliceFacts } from '../../src/sweep/facts-sql.js';
import { createTestDatabase, explaining, type TestDatabase } from '../support/db.js';

/**
 * Writers of claims and payment rows name the platform by a NULL account_id; the sweep
 * names it 'platform', as in its own tables. Both tables derive `account` from
 * account_id, so the sweep reads an account's rows through indexes that lead with it,
 * never through a coalesce() an index cannot answer.
 */
const ACCOUNTS = 41; // the platform and 40 connected accounts
const ROWS = 24_000; // claims, and as many payment rows, over four days
const SLICE = { from: new Date('2026-03-11T10:00:00Z'), to: new Date('2026-03-11T11:00:00Z') };
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: '2026-03-09', to: '2026-03-13' });
  // Row i belongs to the platform when i % ACCOUNTS = 0, to acct_<i % ACCOUNTS> otherwise;
  // created (and last changed) evenly over four days.
  const rows = `
    SELECT i, CASE WHEN i % $2 = 0 THEN NULL ELSE 'acct_' || (i % $2) END AS account_id,
           timestamptz '2026-03-09T00:00:00Z' + i * interval '4 days' / $1 AS at
      FROM generate_series(1, $1) AS i`;
  await db.pool.query(
    `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, downstream_key, account_id,
                                   response_status, created_at, completed_at, updated_at)
     SELECT 't' || (i % 50), 'k' || i, 'f', 'completed', 'd' || i, account_id, 200, at, at, at + interval '1 minute'
       FROM (${rows}) r`,
    [ROWS, ACCOUNTS],
  );
  await db.pool.query(
    `INSERT INTO payments (charge_id, tenant_id, idempotency_key, account_id, amount, currency, status, created_at, updated_at)
     SELECT 'ch_' || i, 't' || (i % 50), 'k' || i, account_id, 1000, 'usd', 'succeeded', at, at FROM (${rows}) r`,
    [ROWS, ACCOUNTS],
  );
  await db.pool.query('ANALYZE idempotency_keys, payments');
});
afterAll(async () => {
  await db.drop();
});

describe('the platform account in claims and payment rows', () => {
  it('is derived from account_id (NULL is the platform), and only from it', async () => {
    const { rows } = await db.pool.query<{ account_id: string | null; account: string }>(
      `SELECT DISTINCT account_id, account FROM idempotency_keys WHERE account_id IS NULL OR account_id = 'acct_7'
       UNION SELECT DISTINCT account_id, account FROM payments WHERE account_id IS NULL OR account_id = 'acct_7'`,
    );
    expect(rows.sort((a, b) => a.account.localeCompare(b.account))).toEqual([
      { account_id: 'acct_7', account: 'acct_7' },
      { account_id: null, account: 'platform' },
    ]);
    await expect(
      db.pool.query(
        `INSERT INTO payments (charge_id, account_id, account, amount, currency, status, created_at, updated_at)
         VALUES ('ch_named', NULL, 'acct_7', 1, 'usd', 'succeeded', now(), now())`,
      ),
    ).rejects.toMatchObject({ code: '428C9' });
  });

  it.each(['platform', 'acct_7'])(
    "a slice of %s finds that account's claims and payment rows through the account's indexes",
    async (account) => {
      const { db: spied, plans } = explaining(db.pool);
      const facts = await loadSliceFacts(spied, account, SLICE);

      const accountId = account === 'platform' ? null : account;
      const { rows: expected } = await db.pool.query<{ key: string }>(
        `SELECT key FROM idempotency_keys
          WHERE account_id IS NOT DISTINCT FROM $1 AND updated_at >= $2 AND updated_at < $3
         UNION
         SELECT idempotency_key FROM payments
          WHERE account_id IS NOT DISTINCT FROM $1 AND created_at >= $2 AND created_at < $3`,
        [accountId, SLICE.from, SLICE.to],
      );
      expect(expected.length).toBeGreaterThan(0);
      expect(facts.identities.map((i) => i.key).sort()).toEqual(expected.map((r) => r.key).sort());
      expect(facts.identities.every((i) => i.claim?.accountId === accountId)).toBe(true);
      expect(facts.identities.every((i) => i.effects.every((e) => e.accountId === accountId))).toBe(true);

      const plan = plans.join('\n');
      // No account predicate by coalesce (the stored answer's own reading may use one: sweeper_answer_charge).
      expect(plan).not.toMatch(/COALESCE\(account_id/i);
      const inSlice = `\\(\\(account = '${account}'::text\\) AND \\((updated_at|created_at) >= `;
      expect(plan).toMatch(new RegExp(`Index Cond: ${inSlice}`));
      expect(plan).toMatch(/idempotency_keys_p20260311_account_updated_at_idx/);
      expect(plan).toMatch(/payments_account_created_at/);
    },
  );
});
