#!/usr/bin/env node
// Builds dist/ from src/, then the test kit (testkit/ → dist-testkit/, never into dist/;
// the demo and the Stripe double run from there), for the package scripts (docs/deployment.md
// "Install on a VM or with cron"):
//
//   node scripts/build.mjs build     `npm run build`: both builds, failing loudly without a compiler.
//   node scripts/build.mjs prepare   `npm ci` / `npm install` in a clone: builds, so
//                                    `npx sweeper` works at once. Without the dev
//                                    dependencies (`npm ci --omit=dev`) there is no
//                                    compiler: says so and succeeds, instead of failing
//                                    the install. Skipped under `npm pack`/`npm publish`,
//                                    where prepack builds.
//   node scripts/build.mjs prepack   `npm pack` / `npm publish`: the same clean build
//                                    (every mode builds clean, aside, then swaps in), failing loudly
//                                    without a compiler, so no tarball ships without dist/;
//                                    then package-lock.json is copied to npm-shrinkwrap.json,
//                                    which the tarball carries: an install gets exactly the
//                                    dependency versions the tests ran with, and can come
//                                    from npm's cache alone.
//   node scripts/build.mjs postpack  removes that npm-shrinkwrap.json again.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const mode = process.argv[2];
if (mode !== 'build' && mode !== 'prepare' && mode !== 'prepack' && mode !== 'postpack') {
  process.stderr.write('usage: node scripts/build.mjs build|prepare|prepack|postpack\n');
  process.exit(64);
}
const shrinkwrap = path.join(root, 'npm-shrinkwrap.json');
if (mode === 'postpack') {
  rmSync(shrinkwrap, { force: true });
  process.exit(0);
}

if (mode === 'prepare' && ['pack', 'publish'].includes(process.env.npm_command ?? '')) process.exit(0);

let tsc;
try {
  tsc = createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
} catch {
  if (mode === 'prepare') {
    process.stderr.write(
      'sweeper: dev dependencies not installed, so dist/ was not built' +
        (existsSync(path.join(root, 'dist/cli/main.js')) ? ' (the dist/ already here is used)' : '') +
        '; to install for production, install the packed tarball (npm pack; npm install -g ./sweeper-*.tgz), see README\n',
    );
    process.exit(0);
  }
  process.stderr.write(
    `sweeper: cannot ${mode === 'build' ? 'build' : 'pack'} without the dev dependencies (TypeScript builds dist/): run \`npm ci\` first\n`,
  );
  process.exit(1);
}

const kit = path.join(root, 'dist-testkit');
const product = path.join(root, 'dist');
// Clean builds into fresh directories, swapped in by rename once complete: no file of a
// deleted or moved module lingers (a tarball or dist/ with an old copy of the double),
// and a CLI started meanwhile (a second `npx sweeper` while the first one's install
// builds) finds the previous dist/ or the new one, never a half-built or missing one.
const staging = { [product]: `${product}.building-${process.pid}`, [kit]: `${kit}.building-${process.pid}` };
for (const dir of Object.values(staging)) rmSync(dir, { recursive: true, force: true });
const compile = (config, outDir) =>
  spawnSync(process.execPath, [tsc, '-p', path.join(root, config), '--outDir', outDir], { cwd: root, stdio: 'inherit' })
    .status ?? 1;
let status = compile('tsconfig.build.json', staging[product]);
if (status === 0) status = compile('testkit/tsconfig.json', staging[kit]);
if (status === 0) {
  linkTestkitToDist(staging[kit]);
  for (const [dir, built] of Object.entries(staging)) {
    const old = `${dir}.old-${process.pid}`;
    if (existsSync(dir)) renameSync(dir, old);
    renameSync(built, dir);
    rmSync(old, { recursive: true, force: true });
  }
}
for (const dir of Object.values(staging)) rmSync(dir, { recursive: true, force: true });
if (status === 0 && mode === 'prepack') copyFileSync(path.join(root, 'package-lock.json'), shrinkwrap);
process.exit(status);

/**
 * tsc compiles the src/ modules the test kit imports into dist-testkit/src/ as well: drop
 * that copy and point the test kit's imports of src/ at dist/, so the demo and the double
 * use the product as built (one copy), and dist/ itself holds nothing of the test kit.
 */
function linkTestkitToDist(kitOut) {
  rmSync(path.join(kitOut, 'src'), { recursive: true, force: true });
  const emitted = path.join(kitOut, 'testkit');
  for (const entry of readdirSync(emitted, { recursive: true })) {
    const file = path.join(emitted, String(entry));
    if (!file.endsWith('.js')) continue;
    // Where the module's source sits (testkit/…): its relative specifiers are written from there.
    const sourceDir = path.join(root, path.relative(kitOut, path.dirname(file)));
    const text = readFileSync(file, 'utf8');
    const linked = text.replace(
      /(\bfrom\s*|\bimport\s*\(?\s*)(['"])(\.{1,2}\/[^'"]+)\2/g,
      (whole, lead, quote, specifier) => {
        const target = path.resolve(sourceDir, specifier);
        const inSrc = path.relative(path.join(root, 'src'), target);
        if (inSrc.startsWith('..') || path.isAbsolute(inSrc)) return whole;
        let built = path
          .relative(path.dirname(file), path.join(root, 'dist', inSrc))
          .split(path.sep)
          .join('/');
        if (!built.startsWith('.')) built = `./${built}`;
        return `${lead}${quote}${built}${quote}`;
      },
    );
    if (linked !== text) writeFileSync(file, linked);
  }
}
