import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Relative modules a file imports statically (type-only imports are erased; `import()` is lazy). */
async function staticImports(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  const specifiers = [...text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^;]*?\bfrom\s+'(\.[^']+)'/gms)].map(
    (m) => m[1]!,
  );
  return specifiers.map((s) => path.resolve(path.dirname(file), s.replace(/\.js$/, '.ts')));
}

async function reachable(entry: string): Promise<Set<string>> {
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    queue.push(...(await staticImports(file)));
  }
  return seen;
}

describe('what the CLI loads', () => {
  it('sweeper run never loads the Stripe double, the simulator or the demo: the demo command imports them lazily', async () => {
    const modules = [...(await reachable(path.join(SRC, 'cli/main.ts')))].map((f) => path.relative(SRC, f));
    expect(modules).toEqual(
      expect.arrayContaining(['cli/main.ts', 'cli/commands/sweep.ts', 'cli/commands/demo.ts', 'sweep/sweep.ts']),
    );
    expect(modules.filter((m) => m.startsWith('..'))).toEqual([]); // nothing outside src/: no testkit/
  });

  it('the check sees a static import of the double (it would fail if demo.ts imported it)', async () => {
    const modules = [...(await reachable(path.join(SRC, '../testkit/demo.ts')))].map((f) => path.relative(SRC, f));
    expect(modules).toContain('../testkit/stripe-double/index.ts');
  });
});
