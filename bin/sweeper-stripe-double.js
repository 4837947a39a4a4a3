#!/usr/bin/env node
// The Stripe double as a process (README "A run against a Stripe you start by hand"):
// `sweeper-stripe-double --port 12111 [--charges FILE]` (in a clone: `node bin/sweeper-stripe-double.js …`;
// run directly, so `kill $!` stops the double itself, not an npm around it). It is part of the test kit,
// compiled to dist-testkit/ (never into dist/) by `npm run build`, which `npm ci` runs;
// a production image has no test kit.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist-testkit/testkit/stripe-double/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    'sweeper-stripe-double: the test kit is not built here (dist-testkit/ is missing): in a clone run `npm ci` (or `npm run build`), or `npm run stripe-double` to run it from the sources\n',
  );
  process.exit(64);
}
await import(entry.href);
