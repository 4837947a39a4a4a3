/**
 * Peak memory of `sweeper report --format csv` at 10,000 and at 200,000 findings: the
 * report streams with keyset pagination, so the peak should not grow with the count.
 * Each size runs the real CLI (dist/) as a child process, with a 48 MB V8 heap
 * ceiling, and reads its peak RSS.
 * Run with `npx tsx bench/report-memory.ts` (needs `npm run build` first).
 */
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchDatabase, writeResult } from './support.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SIZES = [10_000, 200_000];
const db = await benchDatabase('report');
try {
  await db.pool.query(
    `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at)
     VALUES ('run_bench', 'run', 'platform', '2026-11-01', '2026-11-02', 'succeeded', '2026-11-02', '2026-11-02')`,
  );
  const results = [];
  let seeded = 0;
  for (const size of SIZES) {
    await db.pool.query(
      `INSERT INTO recon_findings (category, account, subject, charge_id, tenant_id, idempotency_key, state, details,
                                   first_seen_run, last_seen_run, first_seen_at, last_seen_at)
       SELECT 'unattributed_charge', 'platform', 'ch_' || i, 'ch_' || i, 'tenant_' || (i % 97), 'order-' || i, 'open',
              jsonb_build_object('charge', jsonb_build_object('amount', i, 'currency', 'usd', 'status', 'succeeded'),
                                 'reason', 'no tenant/key metadata: cannot tell which claim it belongs to'),
              'run_bench', 'run_bench', now(), now()
         FROM generate_series($1::int + 1, $2::int) AS i`,
      [seeded, size],
    );
    seeded = size;
    const out = path.join(tmpdir(), `sweeper-report-${size}.csv`);
    // A small V8 heap ceiling: if the report held rows, 200,000 of them would not fit.
    const child = spawnSync(
      process.execPath,
      [
        '--max-old-space-size=48',
        '-e',
        `import('${path.join(ROOT, 'dist/cli/main.js')}'); process.on('exit', () => process.stderr.write('MAXRSS=' + process.resourceUsage().maxRSS + '\\n'))`,
        '--',
        'sweeper',
        'report',
        '--format',
        'csv',
        '--out',
        out,
      ],
      { env: { ...process.env, DATABASE_URL: db.url, SWEEPER_LOG_LEVEL: 'warn' }, encoding: 'utf8', cwd: ROOT },
    );
    const maxRssKb = Number(/MAXRSS=(\d+)/.exec(child.stderr)?.[1]);
    if (child.status !== 0 || !maxRssKb) throw new Error(`report failed (${child.status}): ${child.stderr}`);
    results.push({
      findings: size,
      peak_rss_mb: Math.round(maxRssKb / 1024),
      csv_mb: Number((statSync(out).size / 1e6).toFixed(1)),
    });
  }
  const ratio = Number((results[1]!.peak_rss_mb / results[0]!.peak_rss_mb).toFixed(2));
  process.stdout.write(
    `sweeper report --format csv, peak RSS of the CLI process:\n` +
      results
        .map(
          (r) => `  ${r.findings.toLocaleString('en').padStart(8)} findings  ${r.peak_rss_mb} MB  (CSV ${r.csv_mb} MB)`,
        )
        .join('\n') +
      `\n  ratio 200,000 / 10,000: ${ratio} (20× the rows)\n`,
  );
  await writeResult('report-memory', { results, ratio });
} finally {
  await db.close();
}
