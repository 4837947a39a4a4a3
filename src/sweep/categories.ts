/** The finding categories of the public contract (README "Finding categories"). */
export const CATEGORIES = [
  'matched',
  'claim_without_effect',
  'stale_claim',
  'lost_effect',
  'effect_without_claim',
  'orphan_charge',
  'unattributed_charge',
  'effect_without_charge',
  'amount_mismatch',
  'status_drift',
  'duplicate_charge',
] as const;
export type Category = (typeof CATEGORIES)[number];

/**
 * Where a charge Stripe returned that the sweep cannot read or store (a field missing,
 * a NUL in its metadata, a negative amount, `created` in milliseconds…) is recorded: an
 * open finding naming the charge, its reason the problem (slice.ts `unjudgeable`).
 */
export const MALFORMED_CHARGE_CATEGORY = 'unattributed_charge' satisfies Category;

/** Categories whose open findings page someone: money may be wrong. */
export const CRITICAL_CATEGORIES: readonly Category[] = [
  'duplicate_charge',
  'effect_without_charge',
  'lost_effect',
  'amount_mismatch',
];

export function emptyCounts(): Record<Category, number> {
  return Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
}
