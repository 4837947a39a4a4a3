import pg from 'pg';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openScratchDatabase } from '../testkit/postgres-server.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { migrate } from '../src/db/migrate.js';
import type { ProviderEvidence } from '../src/sweep/provider.js';

/** A migrated database for a benchmark: in DATABASE_URL's server, or a throwaway one. */
export async function benchDatabase(name: string): Promise<{ pool: Pool; url: string; close(): Promise<void> }> {
  const scratch = await openScratchDatabase(process.env.DATABASE_URL, `sweeper_bench_${name}_${process.pid}`);
  const pool = createPool(scratch.url, { max: 8 });
  await migrate(pool);
  return {
    pool,
    url: scratch.url,
    async close() {
      await pool.end();
      await scratch.close();
    },
  };
}

/** Counts (and times, by the statement's first words) every statement any pg client of this process sends. */
export function countStatements(): {
  count: () => number;
  reset: () => void;
  slowest: (n?: number) => Array<[string, number]>;
} {
  let n = 0;
  const time = new Map<string, number>();
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    n += 1;
    const text =
      typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string } | null | undefined)?.text ?? '');
    const label = text.replace(/\s+/g, ' ').trim().slice(0, 70);
    const started = performance.now();
    const result = original.apply(this, args);
    if (result instanceof Promise) {
      void result
        .finally(() => time.set(label, (time.get(label) ?? 0) + performance.now() - started))
        .catch(() => undefined);
    }
    return result;
  };
  return {
    count: () => n,
    reset: () => (n = 0),
    slowest: (k = 5) =>
      [...time.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, k)
        .map(([l, ms]) => [l, Math.round(ms)]),
  };
}

export async function writeResult(name: string, result: unknown): Promise<void> {
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
}

/**
 * For benchmarks whose histories need no re-read from Stripe: any request for one
 * fails loudly, so a benchmark never measures a path it did not mean to.
 */
export const noEvidenceNeeded: ProviderEvidence = {
  chargesById: () => Promise.reject(new Error('benchmark history unexpectedly needed a Stripe re-read by id')),
  chargesNaming: () => Promise.reject(new Error('benchmark history unexpectedly needed a Stripe search')),
  refundsOf: () => Promise.reject(new Error('benchmark history unexpectedly needed a refund list')),
  refund: () => Promise.reject(new Error('benchmark history unexpectedly needed a refund')),
};
