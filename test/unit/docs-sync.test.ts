import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { blocksIn, configBlock, GENERATED_FILES, regenerate, sinksBlock, wrap } from '../../scripts/docs-blocks.js';
import { alertEnvSchema } from '../../src/alerts/config.js';
import { configVariables } from '../../src/config.js';
import { metricsEnvSchema } from '../../src/metrics/config.js';
import { CATEGORIES } from '../../src/sweep/categories.js';

/**
 * The docs say what the code does: every generated block of README.md and docs/ is what
 * `npm run docs:generate` would write from the one definition of each category
 * (src/sweep/categories.ts) and each variable (src/config.ts), so a category or a
 * variable added without its docs fails here. No database.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

describe('the generated blocks of the docs', () => {
  it.each(Object.entries(GENERATED_FILES))('%s holds its blocks, as the generator writes them', (file, blocks) => {
    const markdown = read(file);
    expect(blocksIn(markdown)).toEqual(blocks);
    // On failure: run `npm run docs:generate` and commit the result.
    expect(markdown).toBe(regenerate(markdown));
  });

  it('the category table names every category, in the contract order', () => {
    const table = read('README.md').split('<!-- generated:categories')[1]?.split('<!-- /generated:categories')[0] ?? '';
    const named = [...table.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(named).toEqual([...CATEGORIES]);
  });

  it('the configuration table has one row per variable of the schema, with its default and bounds', () => {
    const rows = configBlock().split('\n').slice(2);
    expect(rows.map((r) => /^\| `([A-Z_]+)` \|/.exec(r)?.[1])).toEqual(configVariables().map((v) => v.name));
    expect(rows).toContain(
      '| `SWEEPER_SETTLE` | `10m` | 1m–1d | work younger than this is not judged; must be ≥ `SWEEPER_CLAIM_LEASE` + 1m |',
    );
    expect(rows.find((r) => r.startsWith('| `SWEEPER_LOG_LEVEL` |'))).toContain(
      '| `info` | one of `fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent` |',
    );
  });

  it('the sinks table has one row per alert and metrics variable of their schemas, with its default and bounds', () => {
    const rows = sinksBlock().split('\n').slice(2);
    const names = [...Object.keys(alertEnvSchema.shape), ...Object.keys(metricsEnvSchema.shape)];
    expect(rows.map((r) => /^\| `([A-Z_]+)` \|/.exec(r)?.[1])).toEqual(names);
    expect(rows).toContain('| `SWEEPER_ALERT_REPEAT` | `1h` | 1m–7d | how often an open, unchanged alert is re-sent |');
    expect(rows.find((r) => r.startsWith('| `SWEEPER_PAGERDUTY_URL` |'))).toContain(
      '| `https://events.pagerduty.com/v2/enqueue` |',
    );
  });

  it('a block that differs from the code is rewritten, and only between its markers', () => {
    const stale = 'before\n<!-- generated:config -->\n| stale |\n<!-- /generated:config -->\nafter\n';
    expect(regenerate(stale)).toBe(
      `before\n<!-- generated:config -->\n${configBlock()}\n<!-- /generated:config -->\nafter\n`,
    );
  });

  it('refuses a block it does not know and a marker left open', () => {
    expect(() => regenerate('<!-- generated:nope -->\n<!-- /generated:nope -->\n')).toThrow(
      /unknown generated block "nope"/,
    );
    expect(() => regenerate('<!-- generated:config -->\n| row |\n')).toThrow(/has no <!-- \/generated:NAME -->/);
  });

  it('wraps prose at the docs width without splitting a word', () => {
    const text = wrap('- **x** — ', 'word '.repeat(40), '  ');
    const lines = text.split('\n');
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(92);
    expect(text.replace(/\n {2}/g, ' ')).toBe(`- **x** — ${'word '.repeat(40).trim()}`);
  });
});

describe('every variable has its docs', () => {
  it('a schema variable without a description is refused; with one, it gets its row', () => {
    expect(() => configVariables({ SWEEPER_NEW: z.string().optional() })).toThrow(/SWEEPER_NEW has no description/);
    expect(() => configVariables({ SWEEPER_NEW: z.string().default('x').describe('  ') })).toThrow(/no description/);
    expect(configVariables({ SWEEPER_NEW: z.string().default('x').describe('what it does') })).toEqual([
      { name: 'SWEEPER_NEW', fallback: 'x', bounds: undefined, description: 'what it does' },
    ]);
  });

  /** Environment variables the product reads, by name, from its sources (prefixes such as SWEEPER_DB_* excluded). */
  function variablesReadBy(dir: string): Set<string> {
    const names = new Set<string>();
    for (const file of readdirSync(path.join(ROOT, dir), { recursive: true }).map(String)) {
      if (!file.endsWith('.ts')) continue;
      const text = read(path.join(dir, file));
      for (const m of text.matchAll(/\b(SWEEPER_[A-Z0-9_]*[A-Z0-9]|STRIPE_API_(?:KEY|BASE)|DATABASE_URL)\b/g))
        names.add(m[1]!);
    }
    return names;
  }

  const TEST_HOOKS = new Set(['SWEEPER_TEST_CRASH_AT']);

  it('docs/configuration.md names every variable the code reads, and none it does not', () => {
    const read_ = variablesReadBy('src');
    const page = read('docs/configuration.md');
    const named = new Set(
      [...page.matchAll(/\b(SWEEPER_[A-Z0-9_]*[A-Z0-9]|STRIPE_API_(?:KEY|BASE)|DATABASE_URL)\b/g)].map((m) => m[1]!),
    );
    expect([...read_].filter((v) => !TEST_HOOKS.has(v) && !named.has(v)).sort()).toEqual([]);
    expect([...named].filter((v) => !read_.has(v)).sort()).toEqual([]);
  });

  it('the test hooks the code reads are documented for contributors', () => {
    const page = read('docs/development.md');
    for (const hook of TEST_HOOKS) expect(page).toContain(hook);
  });
});
