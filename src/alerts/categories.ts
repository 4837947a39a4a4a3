import { CATEGORIES, CRITICAL_CATEGORIES, type Category } from '../sweep/categories.js';

/** `matched` is never a finding, so it is never alerted on or reported as open. */
export type AlertCategory = Exclude<Category, 'matched'>;
export const ALERT_CATEGORIES: readonly AlertCategory[] = CATEGORIES.filter((c): c is AlertCategory => c !== 'matched');

export type Severity = 'critical' | 'warning';

/** Money may be wrong in the critical categories; the others are bookkeeping that can wait for office hours. */
export function severityOf(category: Category): Severity {
  return CRITICAL_CATEGORIES.includes(category) ? 'critical' : 'warning';
}
