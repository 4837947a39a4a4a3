import type { AlertKey } from './categories.js';

/** What a sink was last told about one category of one account. */
export interface SentState {
  lastCount: number;
  lastSentAt: Date;
}

/**
 * How one category moved since the sink last heard about it.
 * - `opened`, `increased`, `resolved`: a state change, always sent.
 * - `repeat`: still open, and the last message is older than the repeat interval.
 * - `decreased`: still open with fewer findings; good news is not worth a page, so
 *   it is only recorded (a later rise from the lower count then counts as news).
 * - `none`: nothing to say.
 */
export type Change = 'opened' | 'increased' | 'resolved' | 'repeat' | 'decreased' | 'none';

export interface CategoryChange {
  category: AlertKey;
  previous: number;
  current: number;
  change: Change;
}

export function changeOf(previous: SentState | undefined, current: number, now: Date, repeatMs: number): Change {
  const before = previous?.lastCount ?? 0;
  if (current === 0) return before > 0 ? 'resolved' : 'none';
  if (before === 0) return 'opened';
  if (current > before) return 'increased';
  // Unchanged or lower: only the repeat interval can make it worth sending.
  const due = previous !== undefined && now.getTime() - previous.lastSentAt.getTime() >= repeatMs;
  if (due) return 'repeat';
  return current < before ? 'decreased' : 'none';
}

/** Changes that call for a message. */
export function isNews(change: Change): boolean {
  return change === 'opened' || change === 'increased' || change === 'resolved' || change === 'repeat';
}

export function diffCategories(
  categories: readonly AlertKey[],
  state: ReadonlyMap<string, SentState>,
  counts: Readonly<Partial<Record<AlertKey, number>>>,
  now: Date,
  repeatMs: number,
): CategoryChange[] {
  return categories.map((category) => {
    const previous = state.get(category);
    const current = counts[category] ?? 0;
    return {
      category,
      previous: previous?.lastCount ?? 0,
      current,
      change: changeOf(previous, current, now, repeatMs),
    };
  });
}
