import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TESTKIT_DEMO, type DemoModule } from '../../src/cli/commands/demo.js';
import type * as TestkitDemo from '../../testkit/demo.js';

/**
 * The test kit (testkit/: the Stripe double, the traffic simulator, the PostgreSQL
 * launcher, the demo) is not part of the product: no file under src/ imports it, dist/
 * holds none of it, and the production image is built from src/ alone. The one way in is
 * `sweeper demo`, which loads the test kit's demo lazily through one constant.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = path.join(ROOT, 'src');
const TESTKIT = path.join(ROOT, 'testkit');

/** The type the CLI declares for the demo it loads is the test kit's real module (checked by tsc). */
const demoShape: DemoModule = {} as typeof TestkitDemo;
void demoShape;

function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(suffix))
    .map((f) => path.join(dir, f));
}

/** Block and line comments out (not inside strings: good enough for our sources, which the next test checks). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

interface Specifier {
  kind: 'static' | 'dynamic' | 'dynamic-computed';
  text: string;
}

/** Every module specifier of a file: import/export … from, side-effect imports, `import('…')`, `import(expr)`. */
function specifiers(text: string): Specifier[] {
  const code = withoutComments(text);
  const found: Specifier[] = [];
  for (const m of code.matchAll(/(?:^|[;\n}])\s*(?:import|export)\b[^'"`;]*?\bfrom\s*(['"])([^'"]+)\1/g))
    found.push({ kind: 'static', text: m[2]! });
  for (const m of code.matchAll(/(?:^|[;\n])\s*import\s*(['"])([^'"]+)\1/g))
    found.push({ kind: 'static', text: m[2]! });
  for (const m of code.matchAll(/\bimport\s*\(\s*([^)]*?)\s*\)/g)) {
    const literal = /^(['"`])([^'"`$]+)\1$/.exec(m[1]!);
    found.push(literal ? { kind: 'dynamic', text: literal[2]! } : { kind: 'dynamic-computed', text: m[1]! });
  }
  return found;
}

const intoTestkit = (file: string, specifier: string) => {
  const target = path.resolve(path.dirname(file), specifier);
  return specifier.startsWith('.') && (target === TESTKIT || target.startsWith(TESTKIT + path.sep));
};

describe('the test kit stays out of the product', () => {
  const sources = filesUnder(SRC, '.ts');

  it('the parser sees every kind of import (checked on the test kit itself, which imports src/)', () => {
    const demo = path.join(TESTKIT, 'demo.ts');
    const found = specifiers(readFileSync(demo, 'utf8'));
    expect(found).toEqual(
      expect.arrayContaining([
        { kind: 'static', text: './stripe-double/index.js' },
        { kind: 'static', text: '../src/sweep/sweep.js' },
      ]),
    );
    expect(
      specifiers(
        `import type { A } from '../testkit/a.js';\nexport * from "../testkit/b.js";\nimport '../testkit/c.js';\nconst m = await import('../testkit/d.js');\nawait import(url);`,
      ),
    ).toEqual([
      { kind: 'static', text: '../testkit/a.js' },
      { kind: 'static', text: '../testkit/b.js' },
      { kind: 'static', text: '../testkit/c.js' },
      { kind: 'dynamic', text: '../testkit/d.js' },
      { kind: 'dynamic-computed', text: 'url' },
    ]);
  });

  it('no file under src/ imports testkit/: statically, by type, or by a literal dynamic import', () => {
    expect(sources.length).toBeGreaterThan(50);
    const offenders = sources.flatMap((file) =>
      specifiers(readFileSync(file, 'utf8'))
        .filter((s) => s.kind !== 'dynamic-computed' && intoTestkit(file, s.text))
        .map((s) => `${path.relative(ROOT, file)} → ${s.text}`),
    );
    expect(offenders).toEqual([]);
  });

  it('the one way in is the demo command: a lazy import of the constant TESTKIT_DEMO, and no other computed import', () => {
    const computed = sources.flatMap((file) =>
      specifiers(readFileSync(file, 'utf8'))
        .filter((s) => s.kind === 'dynamic-computed')
        .map((s) => `${path.relative(ROOT, file)}: import(${s.text})`),
    );
    expect(computed).toEqual(['src/cli/commands/demo.ts: import(entry.href)']);
    const demoCommand = readFileSync(path.join(SRC, 'cli/commands/demo.ts'), 'utf8');
    expect(demoCommand).toContain('const entry = new URL(TESTKIT_DEMO, import.meta.url);');
    // And no other file of src/ names the test kit in a string.
    const naming = sources.filter((file) =>
      /(['"`])[^'"`\n]*(testkit\/|fakes\/)[^'"`\n]*\1/.test(withoutComments(readFileSync(file, 'utf8'))),
    );
    expect(naming.map((f) => path.relative(ROOT, f))).toEqual(['src/cli/commands/demo.ts']);
  });

  it('TESTKIT_DEMO names the sources from src/cli/commands and the build (dist-testkit/, beside dist/) from dist/cli/commands', () => {
    expect(TESTKIT_DEMO).toBe('../../../testkit/demo.js'); // this test runs the TypeScript sources
    expect(
      existsSync(
        fileURLToPath(
          new URL(TESTKIT_DEMO.replace(/\.js$/, '.ts'), new URL('src/cli/commands/demo.ts', `file://${ROOT}`)),
        ),
      ),
    ).toBe(true);
    const compiled = readFileSync(path.join(SRC, 'cli/commands/demo.ts'), 'utf8');
    expect(compiled).toContain("'../../../dist-testkit/testkit/demo.js'");
    expect(path.resolve(ROOT, 'dist/cli/commands', '../../../dist-testkit/testkit/demo.js')).toBe(
      path.join(ROOT, 'dist-testkit/testkit/demo.js'),
    );
  });

  it('the builds: the product compiles src/ alone into dist/; the test kit compiles into dist-testkit/, outside dist/', () => {
    const product = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as {
      include: string[];
      compilerOptions: { rootDir: string; outDir: string };
    };
    expect(product.include).toEqual(['src']);
    expect(product.compilerOptions).toMatchObject({ rootDir: 'src', outDir: 'dist' });
    const kitConfig = readFileSync(path.join(TESTKIT, 'tsconfig.json'), 'utf8');
    const outDir = /"outDir":\s*"([^"]+)"/.exec(kitConfig)?.[1];
    expect(outDir && path.resolve(TESTKIT, outDir)).toBe(path.join(ROOT, 'dist-testkit'));
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('dist/');
    expect(pkg.files.filter((f) => /^(src|testkit)\b/.test(f))).toEqual([]);
  });

  it('dist/, when built, holds no module of the test kit', () => {
    const dist = path.join(ROOT, 'dist');
    if (!existsSync(dist)) return; // a fresh checkout before `npm run build`: the configuration test above holds
    const files = readdirSync(dist, { recursive: true }).map(String);
    expect(
      files.filter((f) => /(^|\/)(fakes|testkit|demo|stripe-double)(\/|$)|simulator|postgres-server/.test(f)),
    ).toEqual([]);
    const mentions = files
      .filter((f) => f.endsWith('.js'))
      .filter((f) =>
        /\b(startStripeDouble|DoubleState|buildScenario|startThrowawayPostgres|openScratchDatabase)\b/.test(
          readFileSync(path.join(dist, f), 'utf8'),
        ),
      );
    expect(mentions).toEqual([]);
  });

  it('the production image builds src/ alone and copies dist/ only; the test kit is not in its build context', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'jobs/Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/npx tsc -p tsconfig\.build\.json/);
    const copies = [...dockerfile.matchAll(/^COPY\s+(.+)$/gm)].map((m) => m[1]!);
    expect(copies.filter((c) => /testkit|fakes/.test(c))).toEqual([]);
    expect(copies).toContain('--from=build /app/dist ./dist');
    const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(['testkit', 'dist-testkit']));
  });
});

describe('the provider seam', () => {
  const sources = filesUnder(SRC, '.ts');
  const PROVIDERS = path.join(SRC, 'providers');
  const intoProviders = (file: string, specifier: string) => {
    const target = path.resolve(path.dirname(file), specifier);
    return specifier.startsWith('.') && target.startsWith(PROVIDERS + path.sep);
  };

  it('the sweep, the database layer, the domain and the outputs never import a provider: only the CLI picks one (and the claim library its Stripe shorthand)', () => {
    const layered = sources.filter((file) => !file.startsWith(PROVIDERS + path.sep));
    const offenders = layered.flatMap((file) =>
      specifiers(readFileSync(file, 'utf8'))
        .filter((s) => intoProviders(file, s.text))
        .map(() => path.relative(ROOT, path.dirname(file)).split(path.sep).slice(0, 2).join('/')),
    );
    expect([...new Set(offenders)].sort()).toEqual(['src/claims', 'src/cli']);
  });

  it('a provider builds on the sweep model and the domain, never on the sweep machinery or the CLI', () => {
    const allowed = new Set(['src/sweep/provider.ts', 'src/sweep/window.ts', 'src/sweep/types.ts']);
    const offenders = sources
      .filter((file) => file.startsWith(PROVIDERS + path.sep))
      .flatMap((file) =>
        specifiers(readFileSync(file, 'utf8'))
          .map((s) => ({
            s,
            target: path.relative(ROOT, path.resolve(path.dirname(file), s.text)).replace(/\.js$/, '.ts'),
          }))
          .filter(
            ({ s, target }) =>
              s.text.startsWith('.') &&
              (target.startsWith('src/cli/') || (target.startsWith('src/sweep/') && !allowed.has(target))),
          )
          .map(({ target }) => `${path.relative(ROOT, file)} → ${target}`),
      );
    expect(offenders).toEqual([]);
  });
});

describe('the CLI shell', () => {
  const sources = filesUnder(SRC, '.ts');
  const CLI = path.join(SRC, 'cli');

  it('nothing outside src/cli imports it: library code names its exit codes in src/exit-codes.ts', () => {
    const offenders = sources
      .filter((file) => !file.startsWith(CLI + path.sep))
      .flatMap((file) =>
        specifiers(readFileSync(file, 'utf8'))
          .filter((s) => s.text.startsWith('.') && path.resolve(path.dirname(file), s.text).startsWith(CLI + path.sep))
          .map((s) => `${path.relative(ROOT, file)} → ${s.text}`),
      );
    expect(offenders).toEqual([]);
  });

  it('every error that chooses an exit code names it through ExitCode, never a bare number', () => {
    const bare = sources.flatMap((file) =>
      [...withoutComments(readFileSync(file, 'utf8')).matchAll(/\bexitCode\s*(?::\s*number\s*)?=\s*(\d+)/g)].map(
        (m) => `${path.relative(ROOT, file)}: exitCode = ${m[1]}`,
      ),
    );
    expect(bare).toEqual([]);
  });
});
