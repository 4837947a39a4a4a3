import { afterAll, beforeAll } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import type { Pool } from '../../src/db/pool.js';
import type { Judgement } from '../../src/sweep/judge/index.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { sweep, sweepOptions, type SweepOptions, type SweepReport } from '../../src/sweep/sweep.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { atDepth } from './depth.js';
import { NOW, SLICE_MS, stripeChargesOf, unreadableOf, WINDOW, writeHistory, type History } from './histories.js';
import { emptySweepTables, memoryChargeSource, memoryEvidence, memorySweepDeps } from './scenario.js';

/**
 * What the sweep property tests (test/integration/sweep-properties*.test.ts) share: a
 * database of the file's own with the histories' days partitioned, a history written into
 * it, and the real sweep run over it against Stripe held in memory.
 */

/** No case is slow: the bound only stops a property run that hangs, at either depth. */
export const PROPERTY_TIMEOUT = atDepth({ normal: 600_000, deep: 3 * 3_600_000 });

export type Evidence = ReturnType<typeof memoryEvidence>;

export interface HistoryDatabase {
  readonly pool: Pool;
  /** Empties the sweep's tables and writes `h`; returns its charges as Stripe holds them. */
  reset(h: History): Promise<NormalizedCharge[]>;
  /** Stripe's own word over the last history written: its unreadable charges unreadable there too. */
  evidence(stripe: NormalizedCharge[]): Evidence;
  /** A backfill of the histories' window, Stripe being `stripe` and `evidence`. */
  run(
    stripe: NormalizedCharge[],
    evidence: Evidence,
    options: Partial<SweepOptions> & { accounts: string[] },
    extra?: { observe?: (j: Judgement) => void; faultPoint?: (name: string) => void },
  ): Promise<SweepReport[]>;
}

/** The file's database, made before its tests and dropped after them. */
export function historyDatabase(): HistoryDatabase {
  let db: TestDatabase | undefined;
  // The history's charges Stripe returns unreadable, in a listing as in a re-read.
  let unreadable = new Map<string, string>();
  beforeAll(async () => {
    db = await createTestDatabase({ poolSize: 6 });
    await ensureDayPartitions(db.pool, { from: '2026-11-01', to: '2026-11-15' });
  });
  afterAll(async () => {
    await db?.drop();
  });
  const pool = (): Pool => {
    if (!db) throw new Error('historyDatabase() is used before its beforeAll ran');
    return db.pool;
  };
  return {
    get pool() {
      return pool();
    },
    async reset(h) {
      await emptySweepTables(pool());
      const stripe = stripeChargesOf(h);
      unreadable = unreadableOf(h);
      await writeHistory(pool(), h, stripe);
      return stripe;
    },
    evidence(stripe) {
      return memoryEvidence(() => stripe, unreadable);
    },
    run(stripe, evidence, options, extra = {}) {
      return sweep(
        memorySweepDeps(pool(), () => stripe, NOW, {
          evidence,
          listCharges: memoryChargeSource(() => stripe, undefined, unreadable),
          ...(extra.observe ? { observeJudgement: extra.observe } : {}),
          ...(extra.faultPoint ? { faultPoint: extra.faultPoint } : {}),
        }),
        sweepOptions({ mode: 'backfill', window: WINDOW, sliceMs: SLICE_MS, resume: false, ...options }),
      );
    },
  };
}

/** What a report counts, without what differs between two runs doing the same work. */
export const counts = (r: SweepReport) => ({
  findings: r.findings,
  repaired: r.repaired,
  unreconciled: r.unreconciled,
  deferred: r.deferred_keys,
});
