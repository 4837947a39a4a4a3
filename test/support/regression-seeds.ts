/**
 * Cases the property tests once failed on, by property: `npm test` runs each as a fixed
 * case before the property's own run (properties.ts), so a bug a deep run found stays
 * found.
 *
 * To add one, once the bug is fixed: take the seed and path from the failure that
 * `npm run test:deep` (or any run) printed, which names the property first:
 *
 *   property "sweep-properties: invariants" failed on a new seed (…):
 *   Property failed after 72 tests
 *   { seed: 1234567890, path: "71:0:0:5", endOnFailure: true }
 *
 * and add under that property's name:
 *
 *   { seed: 1234567890, path: '71:0:0:5', note: 'what was wrong, and the fix (commit or issue)' },
 *
 * Check it with SWEEPER_PROPS_SEED=<seed> SWEEPER_PROPS_PATH=<path> before the fix: it
 * must fail. An entry replays exactly the case its path names, so it stays valid while the
 * property's arbitraries stay as they were; one that changes them must re-find its seeds.
 */

export interface RegressionSeed {
  seed: number;
  path: string;
  note: string;
}

const seeds = {
  'sweep-properties: invariants': [],
  'sweep-properties: parts': [],
  'sweep-properties: refund duplicates': [],
  'sweep-judge-properties: judgement': [],
  'fuzz: normalizeCharge refuses nothing wrongly': [],
  'fuzz: normalizeCharge takes every well-formed charge': [],
  'fuzz: listChargeWindow pages': [],
  'fuzz: withRetries failures': [],
  'fuzz: withRetries headers': [],
  'fuzz-mirror: stored': [],
  'timestamps: read': [],
  'sweep-parts: tiles': [],
} satisfies Record<string, RegressionSeed[]>;

/** A property's name: checkProperty takes it, and the fixed seed of `npm test` derives from it. */
export type PropertyName = keyof typeof seeds;

export const REGRESSION_SEEDS: Record<PropertyName, readonly RegressionSeed[]> = seeds;
