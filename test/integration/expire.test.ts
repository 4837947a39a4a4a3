import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeClaim } from '../../src/claims/claim-store.js';
import { downstreamKey } from '../../src/claims/keys.js';
import { dayOfPartition, expirePartitions } from '../../src/db/expire.js';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { sweep, sweepOptions } from '../../src/sweep/sweep.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { runCli } from '../support/cli.js';
import { charge, memorySweepDeps, seedClaim } from '../support/scenario.js';

const NOW = new Date('2026-11-20T12:00:00Z');
const DAY = 86_400_000;
const daysAgo = (d: number) => new Date(NOW.getTime() - d * DAY);

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 16 });
  await ensureDayPartitions(db.pool, { from: '2026-11-01', to: '2026-11-27' });
});
afterAll(async () => {
  await db.drop();
});

async function partitions(): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'idempotency_keys' ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

describe('expire', () => {
  it('drops old partitions while payment traffic and a sweep run, losing no row inside the window', async () => {
    for (let d = 1; d <= 18; d += 1) {
      await seedClaim(db.pool, { tenantId: 'acme', key: `old-${d}`, status: 'completed', createdAt: daysAgo(d) });
    }
    const mirror = Array.from({ length: 300 }, (_, i) =>
      charge({
        id: `ch_${i}`,
        created: Math.floor(daysAgo(1 + (i % 15)).getTime() / 1000),
        tenantId: 'acme',
        idempotencyKey: `m-${i}`,
      }),
    );
    const traffic = Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        takeClaim(db.pool, {
          tenantId: 'acme',
          key: `live-${i}`,
          fingerprint: 'fp',
          downstreamKey: downstreamKey('acme', `live-${i}`),
          now: new Date(NOW.getTime() - (i % 3) * DAY),
          leaseMs: 60_000,
        }),
      ),
    );
    const sweeping = sweep(
      memorySweepDeps(db.pool, () => mirror, NOW),
      sweepOptions({
        mode: 'backfill',
        accounts: ['platform'],
        window: { from: daysAgo(16), to: daysAgo(0.5) },
        overlapMs: 0,
        // Its history is mostly orphans on purpose: the repair brake is not what this test is about.
        allowMassRepair: true,
        sliceMs: 6 * 3_600_000,
      }),
    );
    const expiring = expirePartitions(db.pool, { now: NOW, retentionMs: 7 * DAY });
    const [claims, , result] = await Promise.all([traffic, sweeping, expiring]);

    expect(claims.every((c) => c.outcome === 'claimed')).toBe(true);
    expect(result.keptFrom).toBe('2026-11-13');
    expect(result.dropped.filter((p) => p.startsWith('idempotency_keys_'))).toHaveLength(12); // 2026-11-01 … 11-12
    const left = await partitions();
    expect(left.every((p) => (dayOfPartition(p) ?? '') >= '2026-11-13')).toBe(true);
    expect(left).toContain('idempotency_keys_p20261127');

    const { rows } = await db.pool.query<{ key: string }>(`SELECT key FROM idempotency_keys ORDER BY key`);
    const keys = rows.map((r) => r.key);
    for (let i = 0; i < 200; i += 1) expect(keys).toContain(`live-${i}`);
    for (let d = 1; d <= 7; d += 1) expect(keys).toContain(`old-${d}`); // inside the window: kept
    for (let d = 9; d <= 18; d += 1) expect(keys).not.toContain(`old-${d}`);
    // The claims' directory keeps exactly the claims that are left.
    const { rows: filed } = await db.pool.query<{ key: string }>(
      `SELECT key FROM idempotency_key_directory ORDER BY key`,
    );
    expect(filed.map((r) => r.key)).toEqual(keys);
  });

  it('cuts the days in UTC whatever the session time zone: a claim early on the first kept day keeps its entry', async () => {
    const key = `early-${Date.now()}`;
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key,
      status: 'completed',
      createdAt: new Date('2026-11-13T02:00:00Z'),
    });
    // A role or server set to New York: '2026-11-13' read there is 05:00 UTC.
    const westward = new pg.Pool({ connectionString: db.url, max: 1, options: '-c TimeZone=America/New_York' });
    try {
      const result = await expirePartitions(westward, { now: NOW, retentionMs: 7 * DAY });
      expect(result.keptFrom).toBe('2026-11-13');
    } finally {
      await westward.end();
    }
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n FROM idempotency_key_directory WHERE tenant_id = 'acme' AND key = $1`,
      [key],
    );
    expect(rows).toEqual([{ n: 1 }]);
  });

  it('refuses a retention shorter than 24 h plus the retry horizon, with exit 64 and a reason', async () => {
    const result = await runCli(['expire'], { DATABASE_URL: db.url, SWEEPER_RETENTION: '36h' });
    expect(result.code).toBe(64);
    expect(result.stderr).toMatch(
      /SWEEPER_RETENTION 36h is shorter than Stripe's 24h idempotency window plus SWEEPER_RETRY_HORIZON 1d/,
    );
    const held = await db.pool.connect();
    try {
      await held.query('SELECT pg_advisory_lock($1, 2)', [0x53574550]); // another expire is running
      const locked = await runCli(['expire'], { DATABASE_URL: db.url });
      expect([locked.code, locked.stderr.trim()]).toEqual([
        75,
        'sweeper: another `sweeper expire` is running; this one stops (it does not wait)',
      ]);
    } finally {
      await held.query('SELECT pg_advisory_unlock_all()');
      held.release();
    }
    const before = await partitions();
    const dry = await runCli(['expire', '--dry-run', '--json'], { DATABASE_URL: db.url });
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dry_run: true, created: 0 });
    expect(await partitions()).toEqual(before);
  });
});
