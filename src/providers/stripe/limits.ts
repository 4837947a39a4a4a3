import { DAY_MS } from '../../time/units.js';

/**
 * Stripe's own limits that the sweeper's rules follow.
 *
 * Stripe remembers an idempotency key for 24 hours: within it, a retry with the same
 * downstream key gets the first charge back; after it, the same key can charge again.
 * So a claim older than this is never re-driven by the claim library nor released by
 * the sweep, and claims are kept at least this long (plus the retry horizon).
 * The claim SQL (migrations/, `sweeper_take_claim`) carries the same 24 hours.
 */
export const STRIPE_IDEMPOTENCY_WINDOW_MS = DAY_MS;
/** The same, with the name messages give it. */
export const STRIPE_IDEMPOTENCY_WINDOW = { ms: STRIPE_IDEMPOTENCY_WINDOW_MS, name: "Stripe's 24h idempotency window" };

/** The most objects one page of any Stripe list or search returns (`limit` 1..100). */
export const STRIPE_MAX_PAGE_SIZE = 100;
