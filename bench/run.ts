/**
 * `npm run bench`: every benchmark, one after the other, each printing its figures
 * and writing bench/results/<name>.json. Figures are from one run on this machine;
 * compare ratios within a run, not absolute numbers across machines.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const benches = ['bench/sweep.ts', 'bench/sweep-attributed.ts', 'bench/report-memory.ts', 'bench/list-charges.ts', 'bench/events-reader.ts'];
const only = process.argv.slice(2);
let failed = 0;
for (const bench of benches.filter((b) => only.length === 0 || only.some((o) => b.includes(o)))) {
  process.stdout.write(`\n== ${bench}\n`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', bench], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) failed += 1;
}
process.exit(failed === 0 ? 0 : 1);
