import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SweepOptions } from '../../src/sweep/sweep.js';
import { ACCOUNTS, historyArb } from '../support/histories.js';
import { counts, historyDatabase, PROPERTY_TIMEOUT } from '../support/history-sweeps.js';
import { normalizedTables } from '../support/normalized-tables.js';
import { checkProperty } from '../support/properties.js';

/**
 * The sweep's invariants over random histories, on the real schema and the real sweep
 * (README "How a key is judged"): a slice judged in parts. `npm test` runs the same
 * histories on every run (fixed seeds); `npm run test:deep` runs a thousand or more on new
 * seeds. A failure prints the property, the seed, the path and the shrunk history
 * (test/support/properties.ts says how to replay it and keep it as a regression seed).
 * The three sweep properties: test/integration/sweep-properties*.test.ts.
 */

const db = historyDatabase();

describe('the sweep over random histories', () => {
  it(
    'a slice judged in parts (SWEEPER_BATCH_CHARGES) ends exactly as judged whole: tables, counts, charges scanned, dry runs too',
    async () => {
      await checkProperty(
        'sweep-properties: parts',
        { normal: 30, deep: 1_000 },
        [historyArb, fc.integer({ min: 1, max: 3 })],
        async (h, batchCharges) => {
          const outcome = async (options: Partial<SweepOptions>) => {
            const stripe = await db.reset(h);
            const reports = await db.run(stripe, db.evidence(stripe), { accounts: [...ACCOUNTS], ...options });
            return {
              counts: reports.map((r) => ({ ...counts(r), scanned: r.charges_scanned, status: r.status })),
              tables: await normalizedTables(db.pool),
            };
          };
          const whole = await outcome({ batchCharges: 1_000_000 });
          const parts = await outcome({ batchCharges });
          expect(parts.counts, 'counts differ when slices are judged in parts').toEqual(whole.counts);
          expect(parts.tables, 'tables differ when slices are judged in parts').toEqual(whole.tables);
          // A dry run of both accounts at once, whole or in parts (one transaction, the overlay
          // carried from part to part and from account to account), counts as the real run of
          // both, and leaves the tables as they were.
          const dryWhole = await outcome({ batchCharges: 1_000_000, dryRun: true });
          const dryParts = await outcome({ batchCharges, dryRun: true });
          expect(dryWhole.counts, 'a dry run of both accounts counted differently from the real run').toEqual(
            whole.counts,
          );
          expect(dryParts.counts, 'a dry run in parts counted differently').toEqual(dryWhole.counts);
          expect(dryParts.tables, 'a dry run in parts left other tables').toEqual(dryWhole.tables);
        },
      );
    },
    PROPERTY_TIMEOUT,
  );
});
