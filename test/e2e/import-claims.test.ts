import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureDayPartitions, partitionDays } from '../../src/db/partitions.js';
import { runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { emptySweepTables } from '../support/scenario.js';
import { atDepth } from '../support/depth.js';

/**
 * docs/claim-library.md "Importing existing claims": `sweeper import-claims` loads an adopted claims
 * table in batches, skips what is there (so it can run again), refuses bad rows by line.
 */

let db: TestDatabase;
let dir: string;
const env = () => ({ DATABASE_URL: db.url, SWEEPER_LOG_LEVEL: 'warn' });
const recent = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
const header =
  'tenant_id,key,status,created_at,account_id,response_status,response_body,response_outcome,amount,currency';

async function csv(name: string, lines: string[]): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, `${[header, ...lines].join('\n')}\n`);
  return file;
}

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, partitionDays(new Date(), 7 * 86_400_000));
  dir = await mkdtemp(path.join(tmpdir(), 'sweeper-import-'));
});
afterAll(async () => {
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  await emptySweepTables(db.pool);
});

describe('sweeper import-claims', () => {
  // Batches of 1,000 (the default --batch): npm test loads two and a part, test:deep twenty.
  const many = atDepth({ normal: 2_500, deep: 20_000 });
  it(`loads ${many.toLocaleString('en')} claims in batches, and a rerun changes nothing`, async () => {
    const lines = Array.from(
      { length: many },
      (_, i) =>
        `t${i % 7},order-${i},completed,${recent(30 + (i % 600))},,200,"{""charge"":""ch_${i}""}",success,${1000 + (i % 5)},usd`,
    );
    const file = await csv('many.csv', lines);
    const first = await runCli(['import-claims', '--csv', file, '--json'], env());
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({
      read: many,
      imported: many,
      existing: 0,
      out_of_retention: 0,
      rejected: 0,
    });
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n, count(DISTINCT (tenant_id, key))::int AS keys, min(amount)::int AS min, bool_and(response_outcome = 'success') AS ok
         FROM idempotency_keys`,
    );
    expect(rows[0]).toEqual({ n: many, keys: many, min: 1000, ok: true });
    // What it loaded has planner statistics at once (docs/operations.md "Planner statistics").
    const { rows: analysed } = await db.pool.query(
      `SELECT s.relname FROM pg_stat_user_tables s
        WHERE (s.relname = 'idempotency_key_directory' OR s.relid IN (SELECT tableoid FROM idempotency_keys))
          AND s.last_analyze IS NOT NULL ORDER BY 1`,
    );
    const { rows: written } = await db.pool.query(
      `SELECT DISTINCT tableoid::regclass::text AS relname FROM idempotency_keys
       UNION SELECT 'idempotency_key_directory' ORDER BY 1`,
    );
    expect(written.length).toBeGreaterThan(1);
    expect(analysed).toEqual(written);
    const again = await runCli(['import-claims', '--csv', file, '--json'], env());
    expect(JSON.parse(again.stdout)).toEqual({
      read: many,
      imported: 0,
      existing: many,
      out_of_retention: 0,
      rejected: 0,
    });
  }, 180_000);

  it('keeps a claim already taken, skips rows older than the retention, refuses bad rows by line and exits 1', async () => {
    await db.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, downstream_key, created_at, updated_at, response_status, completed_at)
       VALUES ('acme', 'taken', 'fp-live', 'completed', 'd', now(), now(), 200, now())`,
    );
    const file = await csv('mixed.csv', [
      `acme,taken,released,${recent(40)},,,,,,`,
      `acme,fine,completed,${recent(50)},acct_1Conn,200,,success,500,EUR`,
      `acme,old,completed,${new Date(Date.now() - 30 * 86_400_000).toISOString()},,200,,success,,`,
      `acme,no zone,completed,2026-11-01T10:00:00,,200,,,,`,
      `acme,bad status,pending,${recent(50)},,,,,,`,
      `ac me,spaces,completed,${recent(50)},,200,,,,`,
    ]);
    const result = await runCli(['import-claims', '--csv', file], env());
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/read 6; imported 1; already claimed 1; older than SWEEPER_RETENTION 1; refused 3/);
    expect(result.stderr).toMatch(/line 5: created_at is not a time with a zone/);
    expect(result.stderr).toMatch(/line 6: status must be completed, released or in_flight/);
    expect(result.stderr).toMatch(/line 7: tenant_id must be/);
    expect(result.stderr.trim().split('\n').at(-1)).toMatch(/^sweeper: 3 row\(s\) refused/);
    expect(
      (
        await db.pool.query(
          `SELECT key, status, request_fingerprint, account_id, currency FROM idempotency_keys ORDER BY key`,
        )
      ).rows,
    ).toEqual([
      {
        key: 'fine',
        status: 'completed',
        request_fingerprint: 'sweeper:recreated',
        account_id: 'acct_1Conn',
        currency: 'eur',
      },
      { key: 'taken', status: 'completed', request_fingerprint: 'fp-live', account_id: null, currency: null },
    ]);
  });

  it('imports a key whose directory entry names a claim that is gone (its day dropped by hand)', async () => {
    await db.pool.query(
      `INSERT INTO idempotency_key_directory (tenant_id, key, created_at) VALUES ('acme', 'orphaned-entry', now() - interval '40 days')`,
    );
    const file = await csv('stale.csv', [`acme,orphaned-entry,completed,${recent(40)},,200,,success,700,usd`]);
    const result = await runCli(['import-claims', '--csv', file, '--json'], env());
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ read: 1, imported: 1, existing: 0 });
    const { rows } = await db.pool.query(
      `SELECT k.key, d.created_at = k.created_at AS filed FROM idempotency_keys k
         JOIN idempotency_key_directory d USING (tenant_id, key) WHERE k.key = 'orphaned-entry'`,
    );
    expect(rows).toEqual([{ key: 'orphaned-entry', filed: true }]);
  });

  it('reads a query on the same database with a cursor', async () => {
    await db.pool.query(`CREATE TABLE IF NOT EXISTS legacy_claims (tenant text, idem text, at timestamptz, code int)`);
    await db.pool.query(`TRUNCATE legacy_claims`);
    await db.pool.query(
      `INSERT INTO legacy_claims SELECT 'acme', 'legacy-' || i, now() - interval '1 hour', 200 FROM generate_series(1, 2500) AS i`,
    );
    const result = await runCli(
      [
        'import-claims',
        '--json',
        '--sql',
        `SELECT tenant AS tenant_id, idem AS key, 'completed' AS status, at AS created_at, code AS response_status FROM legacy_claims`,
      ],
      env(),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ read: 2500, imported: 2500 });
  });

  it('bad usage exits 64 and writes nothing', async () => {
    for (const args of [
      ['import-claims'],
      ['import-claims', '--csv', path.join(dir, 'absent.csv')],
      ['import-claims', '--csv', 'x', '--sql', 'SELECT 1'],
      ['import-claims', '--csv', 'x', '--batch', '0'],
    ]) {
      const result = await runCli(args, env());
      expect(result.code, args.join(' ')).toBe(64);
      expect(result.stderr).toMatch(/^sweeper: /m);
    }
    expect((await db.pool.query('SELECT count(*)::int AS n FROM idempotency_keys')).rows[0]).toEqual({ n: 0 });
  });
});
