#!/usr/bin/env node
// The CLI is compiled to dist/ by `npm run build`, which `npm ci` runs through the
// `prepare` script, so `npx sweeper` works straight after a clone and install.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('sweeper: dist/ is missing; run `npm run build` (npm ci runs it for you)\n');
  process.exit(64);
}
await import(entry.href);
