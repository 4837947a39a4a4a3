#!/usr/bin/env node
// The CLI is compiled to dist/ by `npm run build`, which `npm ci` runs through the
// `prepare` script, so `npx sweeper` works straight after a clone and install; a packed
// tarball (`npm pack`, built by `prepack`) carries dist/ itself.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    'sweeper: dist/ is missing: in a clone run `npm ci` (it builds dist/); to install for production use the packed tarball (README "Install on a VM or with cron")\n',
  );
  process.exit(64);
}
await import(entry.href);
