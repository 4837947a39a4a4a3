import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Two depths (test/support/depth.ts). `npm test` runs every test file except the
 * `*.deep.test.ts` ones, each at its normal size. `npm run test:deep`
 * (SWEEPER_TEST_DEPTH=deep) runs the `*.deep.test.ts` files and every file that sizes
 * itself by depth (it imports test/support/depth.ts or test/support/properties.ts), each
 * at its deep size: a file whose every test is the same at both depths runs only in `npm test`.
 */
const DEEP = process.env.SWEEPER_TEST_DEPTH === 'deep';

const ROOT = fileURLToPath(new URL('./', import.meta.url));
const sizedByDepth = readdirSync(`${ROOT}test`, { recursive: true, encoding: 'utf8' })
  .map((file) => `test/${file}`)
  .filter((file) => file.endsWith('.test.ts') && !file.endsWith('.deep.test.ts'))
  .filter((file) => /from '\.\.\/support\/(depth|properties)\.js'/.test(readFileSync(`${ROOT}${file}`, 'utf8')));

/** The files of a project under `folder`, at this run's depth. */
function files(folder: string): { include: string[]; exclude: string[] } {
  return DEEP
    ? {
        include: [`${folder}/**/*.deep.test.ts`, ...sizedByDepth.filter((file) => file.startsWith(`${folder}/`))],
        exclude: [...configDefaults.exclude],
      }
    : { include: [`${folder}/**/*.test.ts`], exclude: [...configDefaults.exclude, '**/*.deep.test.ts'] };
}

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two cores: two files at a time keeps concurrency tests honest and the run short.
    maxWorkers: 2,
    // `vitest run` runs both projects; `--project unit` (npm run test:unit) runs the unit
    // tests alone, without PostgreSQL.
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          // No database: no global setup, so no PostgreSQL is started.
          ...files('test/unit'),
        },
      },
      {
        extends: true,
        test: {
          // test/integration and test/e2e (and any other test folder): one PostgreSQL for
          // the whole run, the server in DATABASE_URL or a throwaway one (global-setup.ts).
          // One project, so one global setup: a second would start a second server.
          name: 'integration',
          ...withoutUnit(files('test')),
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
    ],
  },
});

function withoutUnit(project: { include: string[]; exclude: string[] }): { include: string[]; exclude: string[] } {
  return { include: project.include, exclude: [...project.exclude, 'test/unit/**'] };
}
