/**
 * The generated blocks of the Markdown docs: what `npm run docs:generate` (scripts/docs.ts)
 * writes between `<!-- generated:NAME … -->` and `<!-- /generated:NAME -->`, and what
 * test/unit/docs-sync.test.ts compares with the committed files. Each block is derived
 * from the one definition of what it shows, so the docs cannot drift from the code.
 */
import { alertEnvSchema } from '../src/alerts/config.js';
import { configVariables, type ConfigVariable } from '../src/config.js';
import { metricsEnvSchema } from '../src/metrics/config.js';
import {
  CATEGORIES,
  FINDING_CATEGORY_DEFINITIONS,
  categoryColumns,
  type FindingCategory,
} from '../src/sweep/categories.js';

export type BlockName = 'categories' | 'runbook' | 'config' | 'sinks';

/** Which blocks each file holds (paths from the repository's root). */
export const GENERATED_FILES: Readonly<Record<string, readonly BlockName[]>> = {
  'README.md': ['categories'],
  'docs/judgement.md': ['categories'],
  'docs/operations.md': ['runbook'],
  'docs/configuration.md': ['config', 'sinks'],
};

/** The width the prose of the docs wraps at. */
const WIDTH = 92;

const cell = (text: string) => text.replace(/\|/g, '\\|');

/** The category table: every category, `matched` first, in the contract's order. */
export function categoriesBlock(): string {
  const rows = CATEGORIES.map((category) => {
    const { about, repairs, staysOpen } = categoryColumns(category);
    const severity =
      category === 'matched'
        ? '—'
        : FINDING_CATEGORY_DEFINITIONS[category].severity === 'critical'
          ? '**critical**'
          : 'warning';
    return `| \`${category}\` | ${cell(about)} | ${severity} | ${cell(repairs)} | ${cell(staysOpen)} |`;
  });
  return ['| category | about | severity | sweeper repairs | stays open? |', '|---|---|---|---|---|', ...rows].join(
    '\n',
  );
}

/** Words of `text` in lines of at most WIDTH characters, the first after `first`, the rest indented by `indent`. */
export function wrap(first: string, text: string, indent: string): string {
  const lines: string[] = [];
  let line = first;
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const candidate = line === first || line === indent ? `${line}${word}` : `${line} ${word}`;
    if (candidate.length > WIDTH && line !== first && line !== indent) {
      lines.push(line);
      line = `${indent}${word}`;
    } else line = candidate;
  }
  lines.push(line);
  return lines.join('\n');
}

/** The runbook: one entry per finding category, what happened and what to do. */
export function runbookBlock(): string {
  return (Object.keys(FINDING_CATEGORY_DEFINITIONS) as FindingCategory[])
    .map((category) => wrap(`- **${category}** — `, FINDING_CATEGORY_DEFINITIONS[category].guide, '  '))
    .join('\n');
}

function variablesTable(variables: readonly ConfigVariable[]): string {
  const rows = variables.map(
    (v) =>
      `| \`${v.name}\` | ${v.fallback === undefined ? '—' : `\`${v.fallback}\``} | ${cell(v.bounds ?? '—')} | ${cell(v.description)} |`,
  );
  return ['| variable | default | accepted | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** The configuration table: every variable of the schema in src/config.ts, in its order. */
export function configBlock(): string {
  return variablesTable(configVariables());
}

/** The alert sinks' and the metrics' variables, from their schemas (src/alerts/config.ts, src/metrics/config.ts). */
export function sinksBlock(): string {
  return variablesTable([...configVariables(alertEnvSchema.shape), ...configVariables(metricsEnvSchema.shape)]);
}

const RENDER: Record<BlockName, () => string> = {
  categories: categoriesBlock,
  runbook: runbookBlock,
  config: configBlock,
  sinks: sinksBlock,
};

const BLOCK = /(<!-- generated:([a-z-]+)\b[^\n]*?-->\n)([\s\S]*?)(<!-- \/generated:\2 -->)/g;

/** The names of the generated blocks in `markdown`, in order. */
export function blocksIn(markdown: string): string[] {
  return [...markdown.matchAll(BLOCK)].map((m) => m[2] ?? '');
}

/**
 * `markdown` with every generated block rewritten from the code. Throws on a block of
 * an unknown name, and on an opening marker without its closing one.
 */
export function regenerate(markdown: string): string {
  const opened = (markdown.match(/<!-- generated:[a-z-]+/g) ?? []).length;
  if (opened !== blocksIn(markdown).length) {
    throw new Error('a <!-- generated:NAME --> marker has no <!-- /generated:NAME --> after it');
  }
  return markdown.replace(BLOCK, (_all, open: string, name: string, _old: string, close: string) => {
    const render = RENDER[name as BlockName] as (() => string) | undefined;
    if (!render) throw new Error(`unknown generated block "${name}" (known: ${Object.keys(RENDER).join(', ')})`);
    return `${open}${render()}\n${close}`;
  });
}
