/**
 * `npm run bench`: one session. Builds dist/ once (the CLI users run), then runs every
 * benchmark one after the other, each printing its figures and writing
 * bench/results/<name>.json, and last writes bench/RESULTS.md from those results.
 * `npm run bench -- <name>…` runs the benchmarks whose file name contains one of the
 * names (then the table again); `npm run bench -- table` only rewrites the table.
 * BENCH_SCALE multiplies the charge counts of the end-to-end benchmarks (0.05: a
 * smoke run of a few minutes). Figures are from one run on this machine; compare
 * ratios within a run, not absolute numbers across machines.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { codeState, ensureBuilt } from './e2e-support.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const benches = [
  // The headline: end to end through the CLI (issue 12).
  'bench/e2e-rate-limited.ts',
  'bench/e2e-unthrottled.ts',
  // Business references, 1% of the charges paid twice (issue 25).
  'bench/e2e-references.ts',
  // A Connect platform: 2,000 accounts under both rate limits (issue 29).
  'bench/e2e-platform.ts',
  // Payouts: one automatic payout of 10,000 balance transactions (issue 27).
  'bench/e2e-payouts.ts',
  // The 1M backfill inside a 256 MiB memory cgroup vs unlimited (issue 29).
  'bench/e2e-pod-memory.ts',
  'bench/claims.ts',
  // Components.
  'bench/sweep.ts',
  'bench/sweep-attributed.ts',
  'bench/report-memory.ts',
  'bench/list-charges.ts',
  'bench/events-reader.ts',
];
const only = process.argv.slice(2);
const selected = benches.filter((b) => only.length === 0 || only.some((o) => b.includes(o)));
if (selected.length === 0 && !only.includes('table')) {
  process.stderr.write(
    `no benchmark matches ${only.join(', ')}; they are: ${benches.map((b) => b.slice(6, -3)).join(', ')}, table\n`,
  );
  process.exit(64);
}

if (selected.length > 0) ensureBuilt();
const env = {
  ...process.env,
  BENCH_SESSION: process.env.BENCH_SESSION ?? new Date().toISOString(),
  BENCH_BUILT: '1',
  BENCH_CODE: JSON.stringify(codeState()),
};
let failed = 0;
for (const bench of selected) {
  process.stdout.write(`\n== ${bench}\n`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', bench], { cwd: ROOT, stdio: 'inherit', env });
  if (result.status !== 0) {
    failed += 1;
    process.stdout.write(`== ${bench} FAILED (exit ${result.status})\n`);
  }
}
process.stdout.write('\n== bench/results-table.ts\n');
const table = spawnSync(process.execPath, ['--import', 'tsx', 'bench/results-table.ts'], {
  cwd: ROOT,
  stdio: 'inherit',
  env,
});
process.exit(failed === 0 && table.status === 0 ? 0 : 1);
