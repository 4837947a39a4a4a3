import { Writable } from 'node:stream';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_COLUMNS, writeReport } from '../../src/report/findings-report.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { runCli, startCli } from '../support/cli.js';

let db: TestDatabase;
const N = 4_500; // more than two pages of the keyset pagination

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(
    `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at)
     VALUES ('run_seed', 'run', 'platform', '2026-11-01', '2026-11-02', 'succeeded', '2026-11-02', '2026-11-02')`,
  );
  // Awkward values on purpose: commas, quotes and newlines must survive the round trip.
  await db.pool.query(
    `INSERT INTO recon_findings (category, account, subject, charge_id, tenant_id, idempotency_key, state, details,
                                 first_seen_run, last_seen_run, first_seen_at, last_seen_at, note)
     SELECT CASE WHEN i % 3 = 0 THEN 'amount_mismatch' ELSE 'unattributed_charge' END,
            CASE WHEN i % 2 = 0 THEN 'platform' ELSE 'acct_1A' END,
            'ch_' || i, 'ch_' || i, 'tenant,' || i, 'key "' || i || '"',
            CASE WHEN i % 5 = 0 THEN 'resolved' ELSE 'open' END,
            jsonb_build_object('charge', jsonb_build_object('amount', i, 'currency', 'usd', 'status', 'succeeded'),
                               'effect', jsonb_build_object('amount', i + 1)),
            'run_seed', 'run_seed', '2026-11-01T00:00:00Z'::timestamptz + i * interval '1 second',
            '2026-11-01T00:00:00Z'::timestamptz + i * interval '1 second',
            CASE WHEN i % 7 = 0 THEN E'line one\\nline two' END
       FROM generate_series(1, ${N}) AS i`,
  );
});
afterAll(async () => {
  await db.drop();
});

function collect(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  return {
    stream: new Writable({
      write(chunk: Buffer, _e, done) {
        chunks.push(Buffer.from(chunk));
        done();
      },
    }),
    text: () => Buffer.concat(chunks).toString('utf8'),
  };
}

describe('findings report', () => {
  it('CSV parses back to exactly the rows in the table, across pages', async () => {
    const out = collect();
    const written = await writeReport(db.pool, {}, 'csv', out.stream);
    expect(written).toBe(N);
    const rows = parse(out.text(), { columns: true }) as Array<Record<string, string>>;
    expect(Object.keys(rows[0]!)).toEqual([...REPORT_COLUMNS]);
    expect(rows).toHaveLength(N);
    const { rows: expected } = await db.pool.query(
      `SELECT id::text, category, state, account, charge_id, tenant_id, idempotency_key, coalesce(note, '') AS note,
              details #>> '{charge,amount}' AS charge_amount FROM recon_findings f ORDER BY f.id`,
    );
    expect(
      rows.map((r) => ({
        id: r.id,
        category: r.category,
        state: r.state,
        account: r.account,
        charge_id: r.charge_id,
        tenant_id: r.tenant_id,
        idempotency_key: r.idempotency_key,
        note: r.note,
        charge_amount: r.charge_amount,
      })),
    ).toEqual(expected);
  });

  it('filters by state, category, account and since', async () => {
    const out = collect();
    const n = await writeReport(
      db.pool,
      { status: 'open', category: 'amount_mismatch', account: 'platform', since: new Date('2026-11-01T00:30:00Z') },
      'json',
      out.stream,
    );
    const rows = JSON.parse(out.text()) as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(n);
    const expected = Array.from({ length: N }, (_, k) => k + 1).filter(
      (i) => i % 3 === 0 && i % 2 === 0 && i % 5 !== 0 && i >= 1800,
    );
    expect(rows.map((r) => r.charge_id)).toEqual(expected.map((i) => `ch_${i}`));
  });

  it('an empty result is a header-only CSV and an empty JSON array', async () => {
    const csv = collect();
    expect(await writeReport(db.pool, { category: 'lost_effect' }, 'csv', csv.stream)).toBe(0);
    expect(csv.text().trim()).toBe(REPORT_COLUMNS.join(','));
    const json = collect();
    await writeReport(db.pool, { category: 'lost_effect' }, 'json', json.stream);
    expect(JSON.parse(json.text())).toEqual([]);
  });

  it('the CLI writes the file atomically and refuses a bad filter with exit 64', async () => {
    const file = path.join(tmpdir(), `sweeper-report-${process.pid}.csv`);
    const ok = await runCli(['report', '--status', 'resolved', '--out', file], { DATABASE_URL: db.url });
    expect(ok.code).toBe(0);
    const rows = parse(await readFile(file, 'utf8'), { columns: true }) as unknown[];
    expect(rows).toHaveLength(N / 5);
    const bad = await runCli(['report', '--status', 'closed'], { DATABASE_URL: db.url });
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/--status closed: expected one of open, repaired, resolved, ignored/);
    expect((await runCli(['report', '--format', 'xml'], { DATABASE_URL: db.url })).code).toBe(64);
    const nowhere = await runCli(['report', '--out', '/nonexistent-dir/x.csv'], { DATABASE_URL: db.url });
    expect(nowhere.code).toBe(64);
    expect(nowhere.stderr.trim().split('\n')).toEqual([
      'sweeper: --out /nonexistent-dir/x.csv: cannot write there (ENOENT)',
    ]);
  });

  it('--account: an account nothing names and SWEEPER_ACCOUNTS leaves out is unknown, exit 64; a swept one reports', async () => {
    const env = { DATABASE_URL: db.url, SWEEPER_ACCOUNTS: 'platform,acct_1Quiet' };
    const unknown = await runCli(['report', '--account', 'acct_unknown'], env);
    expect(unknown.code).toBe(64);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr.trim().split('\n')).toEqual([
      'sweeper: --account acct_unknown is unknown: it is not in SWEEPER_ACCOUNTS (platform, acct_1Quiet) and no run or finding names it',
    ]);
    // Findings name acct_1A, though this configuration no longer sweeps it.
    const recorded = await runCli(['report', '--account', 'acct_1A', '--status', 'open', '--format', 'json'], env);
    expect(recorded.code).toBe(0);
    expect((JSON.parse(recorded.stdout) as unknown[]).length).toBeGreaterThan(0);
    // Swept by this configuration, nothing found yet: an empty report is the answer.
    const quiet = await runCli(['report', '--account', 'acct_1Quiet'], env);
    expect([quiet.code, quiet.stdout.trim()]).toEqual([0, REPORT_COLUMNS.join(',')]);
  });

  it.each(['csv', 'json'])(
    'a reader that goes away (`sweeper report | head`) ends the %s report quietly',
    async (format) => {
      const running = startCli(['report', '--format', format], { DATABASE_URL: db.url, SWEEPER_LOG_LEVEL: 'warn' });
      running.child.stdout?.once('data', () => running.child.stdout?.destroy());
      const result = await running.done;
      expect(result.code).toBe(0);
      expect(result.stderr).not.toMatch(/Error|EPIPE/);
    },
  );

  it('neutralises formulas in CSV text cells, escapes control characters, and keeps amounts numbers', async () => {
    const hostile = await createTestDatabase();
    try {
      await hostile.pool.query(
        `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at)
         VALUES ('run_h', 'run', 'platform', '2026-11-01', '2026-11-02', 'succeeded', '2026-11-02', '2026-11-02')`,
      );
      await hostile.pool.query(
        `INSERT INTO recon_findings (category, account, subject, charge_id, tenant_id, idempotency_key, state, details,
                                     first_seen_run, last_seen_run, first_seen_at, last_seen_at, note)
         VALUES ('amount_mismatch', 'platform', 'ch_h', 'ch_h', $1, $2, 'open', $3, 'run_h', 'run_h', now(), now(), $4)`,
        [
          '=HYPERLINK("https://evil.example","click")',
          '-2+3',
          JSON.stringify({ charge: { amount: 500, currency: 'usd' }, effect: { amount: -500 }, reason: '@SUM(A1:A9)' }),
          '\u001b[31mred\u001b[0m\ttab\u009b2J\u202eevil',
        ],
      );
      const csv = collect();
      await writeReport(hostile.pool, {}, 'csv', csv.stream);
      const [row] = parse(csv.text(), { columns: true }) as Array<Record<string, string>>;
      expect(row).toMatchObject({
        tenant_id: `'=HYPERLINK("https://evil.example","click")`,
        idempotency_key: "'-2+3",
        reason: "'@SUM(A1:A9)",
        effect_amount: '-500',
        charge_amount: '500',
        note: '\\x1b[31mred\\x1b[0m\ttab\\x9b2J\\u202eevil',
      });
      for (const char of ['\u001b', '\u009b', '\u202e']) expect(csv.text()).not.toContain(char);

      const json = collect();
      await writeReport(hostile.pool, {}, 'json', json.stream);
      for (const char of ['\u001b', '\u009b', '\u202e']) expect(json.text()).not.toContain(char);
      const [parsed] = JSON.parse(json.text()) as Array<Record<string, unknown>>;
      // JSON keeps the values exactly (escaped the JSON way) and the amounts numbers.
      expect(parsed).toMatchObject({
        tenant_id: '=HYPERLINK("https://evil.example","click")',
        effect_amount: -500,
        note: '\u001b[31mred\u001b[0m\ttab\u009b2J\u202eevil',
      });
    } finally {
      await hostile.drop();
    }
  });
});
