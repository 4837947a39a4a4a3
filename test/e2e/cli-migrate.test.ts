import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/pool.js';
import { partitionDays, utcDay } from '../../src/db/partitions.js';
import { createEmptyDatabase } from '../support/db.js';
import { runCli } from '../support/cli.js';

const DAY_MS = 86_400_000;

describe('sweeper migrate (subprocess)', () => {
  let db: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    db = await createEmptyDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('shows help with an example', async () => {
    const top = await runCli(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/Examples?:/);
    const sub = await runCli(['migrate', '--help']);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toMatch(/Example:\s+DATABASE_URL=.* sweeper migrate/);
  });

  it.each(['migrate', 'run', 'backfill', 'status', 'resolve', 'report', 'expire', 'schedule', 'serve', 'demo'])(
    '`sweeper %s --help` shows an example',
    async (command) => {
      const help = await runCli([command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`Example:\\n\\s+.*sweeper ${command}`));
    },
  );

  it('run by two processes at once, then again, leaves one consistent schema', async () => {
    const startedAt = new Date();
    const [a, b] = await Promise.all([
      runCli(['migrate', '--json'], { DATABASE_URL: db.url }),
      runCli(['migrate', '--json'], { DATABASE_URL: db.url }),
    ]);
    expect([a.code, b.code, a.stderr, b.stderr]).toEqual([0, 0, expect.any(String), expect.any(String)]);
    const [ja, jb] = [JSON.parse(a.stdout), JSON.parse(b.stdout)];
    expect(ja.applied.length + jb.applied.length).toBe(ja.version);
    const again = await runCli(['migrate'], { DATABASE_URL: db.url });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/already up to date/);

    const pool = createPool(db.url, { max: 1 });
    try {
      const migrations = await pool.query('SELECT id FROM sweeper_migrations ORDER BY id');
      expect(migrations.rows.map((r) => r.id)).toEqual(Array.from({ length: ja.version }, (_, i) => i + 1));
      // The retention window (default 7 days) has its partitions, behind and ahead: one per
      // day, with no gap, 15 days — 16 if midnight UTC passed while the three runs ran.
      const from = partitionDays(startedAt, 7 * DAY_MS).from;
      const to = partitionDays(new Date(), 7 * DAY_MS).to;
      const parts = await pool.query<{ day: string }>(
        `SELECT to_char(lower_bound, 'YYYY-MM-DD') AS day
           FROM (SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz
                        AT TIME ZONE 'UTC' AS lower_bound
                   FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                  WHERE i.inhparent = 'idempotency_keys'::regclass) bounds
          ORDER BY 1`,
      );
      const expected: string[] = [];
      for (let day = Date.parse(from); day <= Date.parse(to); day += DAY_MS) expected.push(utcDay(new Date(day)));
      expect(parts.rows.map((r) => r.day)).toEqual(expected);
      expect(expected.length).toBeGreaterThanOrEqual(15);
    } finally {
      await pool.end();
    }
  });

  it('without DATABASE_URL exits 64 with one line saying what to set', async () => {
    const result = await runCli(['migrate']);
    expect(result.code).toBe(64);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^sweeper: DATABASE_URL is not set: set it to/);
  });

  it('with an unreachable database exits 1 with one line, no stack trace', async () => {
    const result = await runCli(['migrate'], { DATABASE_URL: 'postgres://sweeper:hunter2@127.0.0.1:9/payments' });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(
      /cannot connect to PostgreSQL at postgres:\/\/sweeper:\*\*\*@127\.0\.0\.1:9\/payments/,
    );
    expect(result.stderr).not.toMatch(/hunter2/);
  });

  it('rejects a malformed setting with exit 64, naming the variable', async () => {
    const result = await runCli(['migrate'], { DATABASE_URL: db.url, SWEEPER_RETENTION: 'a week' });
    expect(result.code).toBe(64);
    expect(result.stderr).toMatch(/SWEEPER_RETENTION must be a duration like 90s, 15m, 1h or 7d/);
  });
});
