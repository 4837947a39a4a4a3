#!/usr/bin/env node
// Builds dist/ from src/ for the package scripts (README "Install on a VM or with cron"):
//
//   node scripts/build.mjs prepare   `npm ci` / `npm install` in a clone: builds, so
//                                    `npx sweeper` works at once. Without the dev
//                                    dependencies (`npm ci --omit=dev`) there is no
//                                    compiler: says so and succeeds, instead of failing
//                                    the install. Skipped under `npm pack`/`npm publish`,
//                                    where prepack builds.
//   node scripts/build.mjs prepack   `npm pack` / `npm publish`: a clean build (no file
//                                    of a deleted module is packed), failing loudly
//                                    without a compiler, so no tarball ships without dist/;
//                                    then package-lock.json is copied to npm-shrinkwrap.json,
//                                    which the tarball carries: an install gets exactly the
//                                    dependency versions the tests ran with, and can come
//                                    from npm's cache alone.
//   node scripts/build.mjs postpack  removes that npm-shrinkwrap.json again.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const mode = process.argv[2];
if (mode !== 'prepare' && mode !== 'prepack' && mode !== 'postpack') {
  process.stderr.write('usage: node scripts/build.mjs prepare|prepack|postpack\n');
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
  process.stderr.write('sweeper: cannot pack without the dev dependencies (TypeScript builds dist/): run `npm ci` first\n');
  process.exit(1);
}

if (mode === 'prepack') rmSync(path.join(root, 'dist'), { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
if (result.status === 0 && mode === 'prepack') copyFileSync(path.join(root, 'package-lock.json'), shrinkwrap);
process.exit(result.status ?? 1);
