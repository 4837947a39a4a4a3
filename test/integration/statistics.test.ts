import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { analyseTables, freshenStatistics } from '../../src/db/statistics.js';
import { createLogger } from '../../src/log.js';
import { loadSliceFacts, SLICE_FACTS_SQL } from '../../src/sweep/facts-sql.js';
import { createTestDatabase, explaining, type TestDatabase } from '../support/db.js';

/**
 * docs/operations.md "Planner statistics": 200,000 payment rows bulk-loaded, as a restore
 * or another writer's import would, into a freshly migrated database and not analysed
 * (autovacuum is off for the table here, so its statistics cannot arrive mid-test). The
 * sweep's payments lookups keep their index shape all the same, and the check a sweep
 * makes before its first slice analyses the table.
 */

const ROWS = 200_000;
const SLICE = { from: new Date('2026-03-10T10:00:00Z'), to: new Date('2026-03-10T11:00:00Z') };
let db: TestDatabase;

function logLines() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const l of chunk.toString().trim().split('\n')) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ destination: stream, level: 'info' }), lines };
}

const stats = async (table: string) =>
  (
    await db.pool.query<{ analysed: boolean; changed: number }>(
      `SELECT (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL) AS analysed, n_mod_since_analyze::int AS changed
         FROM pg_stat_user_tables WHERE relid = to_regclass($1)`,
      [table],
    )
  ).rows[0];

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: '2026-03-09', to: '2026-03-12' });
  await db.pool.query('ALTER TABLE payments SET (autovacuum_enabled = off)');
  // As a payment service writes them: 50 tenants, the platform (NULL account_id) and two
  // connected accounts, over three days, each row naming its tenant and key.
  await db.pool.query(
    `INSERT INTO payments (charge_id, tenant_id, idempotency_key, account_id, amount, currency, status, created_at, updated_at)
     SELECT 'ch_' || i, 't' || (i % 50), 'k' || i, CASE i % 3 WHEN 0 THEN NULL ELSE 'acct_' || (i % 3) END,
            1000 + i % 7, 'usd', 'succeeded', at, at
       FROM generate_series(1, $1) AS i,
            LATERAL (SELECT timestamptz '2026-03-09T00:00:00Z' + i * interval '3 days' / $1 AS at) t`,
    [ROWS],
  );
}, 120_000);
afterAll(async () => {
  await db.drop();
});

describe('the sweep on payment rows without statistics', () => {
  it('finds a slice’s payment rows by their keys through payments_tenant_key, never a scan of the table', async () => {
    expect(await stats('payments')).toEqual({ analysed: false, changed: ROWS });
    const { db: spied, plans } = explaining(db.pool);
    const started = performance.now();
    const facts = await loadSliceFacts(spied, 'platform', SLICE);
    const elapsed = performance.now() - started;

    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM payments WHERE account_id IS NULL AND created_at >= $1 AND created_at < $2`,
      [SLICE.from, SLICE.to],
    );
    expect(rows[0]?.n).toBeGreaterThan(900);
    expect(facts.identities).toHaveLength(rows[0]?.n as number);
    expect(facts.identities.every((i) => i.effects.length === 1 && i.effects[0]?.accountId === null)).toBe(true);

    expect(plans.join('\n')).not.toMatch(/Seq Scan on payments/);
    // The keys' payment rows: one probe of (tenant_id, idempotency_key) per key, not every row of the tenant per key.
    const named = await db.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${SLICE_FACTS_SQL.namedEffects}`, [
      'platform',
      facts.identities.map((i) => i.tenantId),
      facts.identities.map((i) => i.key),
      null,
    ]);
    const plan = named.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/payments_tenant_key/);
    expect(plan).not.toMatch(/payments_tenant_account|Seq Scan/);
    // Without the shape, this slice took tens of seconds; with it, well under one.
    expect(elapsed).toBeLessThan(10_000);
  });

  it('a sweep’s check analyses the bulk-loaded table, then leaves it be', async () => {
    const { logger, lines } = logLines();
    const first = await freshenStatistics(db.pool, logger);
    expect(first).toEqual({ analysed: ['payments'], refused: [] });
    expect(await stats('payments')).toEqual({ analysed: true, changed: 0 });
    expect(lines.find((l) => l.event === 'statistics_refreshed')).toMatchObject({ tables: ['payments'] });

    // 1,000 rows more on 200,000 analysed: under the rule (half as many as were there), left to autovacuum.
    await db.pool.query(
      `INSERT INTO payments (charge_id, amount, currency, status, created_at, updated_at)
       SELECT 'ch_more_' || i, 1, 'usd', 'succeeded', now(), now() FROM generate_series(1, 1000) AS i;
       SELECT pg_stat_force_next_flush();`,
    );
    expect(await stats('payments')).toEqual({ analysed: true, changed: 1000 });
    await expect(freshenStatistics(db.pool, logger)).resolves.toEqual({ analysed: [], refused: [] });
  });

  it('after a load, analyses the tables named, each partition of a partitioned one', async () => {
    const { logger } = logLines();
    const result = await analyseTables(db.pool, logger, ['idempotency_keys', 'idempotency_key_directory']);
    expect(result).toEqual({ analysed: ['idempotency_key_directory', 'idempotency_keys'], refused: [] });
    expect(await stats('idempotency_keys_p20260310')).toMatchObject({ analysed: true });
    expect(await stats('idempotency_key_directory')).toMatchObject({ analysed: true });
  });
});
