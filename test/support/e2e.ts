import { afterAll, beforeAll } from 'vitest';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { cliEnv } from './cli.js';
import { createTestDatabase, partitionedDatabase, type TestDatabase } from './db.js';

/**
 * The environment most CLI tests share: for the whole file, a Stripe double and a database
 * of the file's own (with day partitions from `partitionDaysBack` days ago to tomorrow when
 * given), dropped and closed after it; and the CLI's environment pointing at both.
 */
export interface E2eEnvironment {
  readonly db: TestDatabase;
  readonly double: StripeDouble;
  /** DATABASE_URL, STRIPE_API_KEY and STRIPE_API_BASE, the file's settings, then `extra`. */
  env(extra?: Record<string, string>): Record<string, string>;
}

export function e2eEnvironment(options: {
  key: string;
  settings?: Record<string, string>;
  partitionDaysBack?: number;
}): E2eEnvironment {
  let db: TestDatabase | undefined;
  let double: StripeDouble | undefined;
  beforeAll(async () => {
    double = await startStripeDouble();
    db =
      options.partitionDaysBack === undefined
        ? await createTestDatabase()
        : await partitionedDatabase(new Date(Date.now() - options.partitionDaysBack * 86_400_000));
  });
  afterAll(async () => {
    await db?.drop();
    await double?.close();
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('e2eEnvironment() is used before its beforeAll ran');
    return value;
  };
  return {
    get db() {
      return ready(db);
    },
    get double() {
      return ready(double);
    },
    env: (extra = {}) =>
      cliEnv({ db: ready(db), stripe: ready(double).url, key: options.key }, { ...options.settings, ...extra }),
  };
}
