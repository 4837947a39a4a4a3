import { CATEGORIES, CRITICAL_CATEGORIES, type Category, type Severity } from '../sweep/categories.js';

export type { Severity };

/** `matched` is never a finding, so it is never alerted on or reported as open. */
export type AlertCategory = Exclude<Category, 'matched'>;
export const ALERT_CATEGORIES: readonly AlertCategory[] = CATEGORIES.filter((c): c is AlertCategory => c !== 'matched');

/**
 * An alert that is not about findings: the account's charges watermark or events
 * cursor is further behind than SWEEPER_MAX_LAG (docs/judgement.md "Completeness"). It goes
 * through the same machinery as a category (count 1 while lagging, 0 when not: sent
 * on change, repeated, resolved, with its own state row and PagerDuty dedup key),
 * and is never a finding category: no finding, report row or `findings` count has it.
 */
export const LAG_ALERT = 'reconciliation_lag';
export type LagAlert = typeof LAG_ALERT;

/** What a sink keeps state for and alerts on. */
export type AlertKey = AlertCategory | LagAlert;
export const ALERT_KEYS: readonly AlertKey[] = [...ALERT_CATEGORIES, LAG_ALERT];

/**
 * Each category's severity is defined with it (src/sweep/categories.ts). A stalled
 * sweeper is critical: it stops seeing money go wrong.
 */
export function severityOf(key: Category | LagAlert): Severity {
  return key === LAG_ALERT || CRITICAL_CATEGORIES.includes(key) ? 'critical' : 'warning';
}
