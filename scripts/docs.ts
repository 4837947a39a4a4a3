/**
 * `npm run docs:generate`: rewrites the generated blocks of README.md and docs/ from the
 * code (scripts/docs-blocks.ts). Run it after changing a finding category
 * (src/sweep/categories.ts) or a configuration variable (src/config.ts, src/alerts/config.ts,
 * src/metrics/config.ts), and commit the result: test/unit/docs-sync.test.ts fails while
 * the committed Markdown differs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { blocksIn, GENERATED_FILES, regenerate } from './docs-blocks.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

let changed = 0;
for (const [file, expected] of Object.entries(GENERATED_FILES)) {
  const full = path.join(ROOT, file);
  const before = readFileSync(full, 'utf8');
  const found = blocksIn(before);
  if (found.join(',') !== expected.join(',')) {
    process.stderr.write(`${file}: expected the generated blocks ${expected.join(', ')}, found ${found.join(', ')}\n`);
    process.exit(1);
  }
  const after = regenerate(before);
  if (after !== before) {
    writeFileSync(full, after);
    changed += 1;
    process.stdout.write(`${file}: rewritten\n`);
  }
}
process.stdout.write(
  changed === 0 ? 'docs: every generated block is up to date\n' : `docs: ${changed} file(s) rewritten\n`,
);
