/**
 * Lengths of time in milliseconds, written once: every day, hour and minute in the code
 * is one of these (times a count), so no literal can drift from the others.
 */
export const SECOND_MS = 1_000;
export const MINUTE_MS = 60 * SECOND_MS;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** The same in seconds, for Stripe's unix timestamps. */
export const DAY_SECONDS = DAY_MS / SECOND_MS;
