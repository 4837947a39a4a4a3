import { configDefaults, defineConfig } from 'vitest/config';

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
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          // test/integration and test/e2e (and any other test folder): one PostgreSQL for
          // the whole run, the server in DATABASE_URL or a throwaway one (global-setup.ts).
          // One project, so one global setup: a second would start a second server.
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/unit/**'],
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
    ],
  },
});
