/**
 * Two depths of one suite (vitest.config.ts):
 *
 * - `npm test` runs every test file except `*.deep.test.ts`, each at its normal size: a
 *   few crash points where a matrix has many, property tests on fixed seeds, fewer seeded
 *   charges. Deterministic, and within minutes on two cores.
 * - `npm run test:deep` (SWEEPER_TEST_DEPTH=deep) runs the `*.deep.test.ts` files and
 *   every file that imports this module or ./properties.ts, at its deep size: every crash
 *   point, thousands of property cases on new seeds, the full seeding. Together the two
 *   commands cover what one long run used to.
 *
 * A file asks for its size with `atDepth({ normal, deep })`; nothing is skipped at either
 * depth, only sized.
 */

export const DEEP = process.env.SWEEPER_TEST_DEPTH === 'deep';

export function atDepth<T>(sizes: { normal: T; deep: T }): T {
  return DEEP ? sizes.deep : sizes.normal;
}
