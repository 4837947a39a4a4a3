import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The tests that spawn the CLI or the Stripe double run what `npm run build` made
 * (bin/sweeper.js → dist/, bin/sweeper-stripe-double.js → dist-testkit/), as an operator
 * does, instead of transpiling the sources on every spawn. The global setup calls
 * `ensureBuilt()`: it builds when an output is missing or older than any input, so a
 * fresh clone (`npm ci` builds through `prepare`) builds nothing, and an edit to src/
 * or testkit/ is never tested through a stale build.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What the two builds read (scripts/build.mjs): a change to any of these makes the build stale. */
const INPUTS = ['src', 'testkit', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs'];
/** What they write; each build writes every file of both afresh. */
const OUTPUTS = ['dist', 'dist-testkit'];

/**
 * The most recently modified path under `paths`, directories included: removing or
 * renaming a file changes its directory's time, so a deleted module counts as a change.
 */
function newest(paths: string[]): { at: string; mtimeMs: number } {
  let latest = { at: '', mtimeMs: -Infinity };
  const visit = (at: string) => {
    const stat = statSync(at, { throwIfNoEntry: false });
    if (!stat) return;
    if (stat.mtimeMs > latest.mtimeMs) latest = { at, mtimeMs: stat.mtimeMs };
    if (stat.isDirectory()) for (const entry of readdirSync(at)) visit(path.join(at, entry));
  };
  for (const p of paths) visit(path.join(ROOT, p));
  return latest;
}

/** Oldest file under `paths`, or -Infinity when one of them is missing or empty. */
function oldestFile(paths: string[]): number {
  let oldest = Infinity;
  for (const p of paths) {
    const dir = path.join(ROOT, p);
    if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) return -Infinity;
    let files = 0;
    for (const entry of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
      const stat = statSync(path.join(dir, entry));
      if (!stat.isFile()) continue;
      files += 1;
      oldest = Math.min(oldest, stat.mtimeMs);
    }
    if (files === 0) return -Infinity;
  }
  return oldest;
}

/** Why the build must run, or null when dist/ and dist-testkit/ are newer than every input. */
export function staleBuild(): string | null {
  const built = oldestFile(OUTPUTS);
  if (built === -Infinity) return `${OUTPUTS.join('/ or ')}/ is missing`;
  const changed = newest(INPUTS);
  if (changed.mtimeMs > built) return `${path.relative(ROOT, changed.at)} changed since the last build`;
  return null;
}

/** Builds with `npm run build`'s script when the build is stale; rejects with the compiler's output if it fails. */
export async function ensureBuilt(): Promise<void> {
  const why = staleBuild();
  if (why === null) return;
  process.stderr.write(`test setup: building dist/ (${why})\n`);
  const child = spawn(process.execPath, [path.join(ROOT, 'scripts/build.mjs'), 'build'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0) throw new Error(`npm run build failed (exit ${code}); the tests run the built CLI:\n${output}`);
}
