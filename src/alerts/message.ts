import type { AlertCategory, AlertKey } from './categories.js';
import type { LagStatus } from './lag.js';
import { isNews, type CategoryChange } from './transitions.js';
import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from '../time/units.js';

/** Everything a sink needs to word one account's alert; `changes` are this sink's own. */
export interface AlertContext {
  runId: string;
  account: string;
  now: Date;
  counts: Readonly<Record<AlertCategory, number>>;
  unreconciled: number;
  oldestOpenAt: Date | null;
  /** Changes of every key this sink was told about: the finding categories, and `reconciliation_lag` when `lag` is known. */
  changes: readonly CategoryChange[];
  /** The account's lags, when the caller read them (docs/judgement.md "Completeness"). */
  lag?: LagStatus | null;
}

/** The command an operator runs next; every message carries it. */
export function reportCommand(account: string): string {
  return `sweeper report --status open --account ${account}`;
}

/** "45s", "12m", "2h 5m", "3d 4h": precise enough to tell a fresh problem from an old one. */
export function formatAge(ms: number): string {
  const whole = Math.max(0, Math.floor(ms / SECOND_MS)) * SECOND_MS;
  const s = whole / SECOND_MS;
  const d = Math.floor(whole / DAY_MS);
  const h = Math.floor((whole % DAY_MS) / HOUR_MS);
  const m = Math.floor((whole % HOUR_MS) / MINUTE_MS);
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`;
  if (m > 0) return `${m}m`;
  return `${s}s`;
}

export function oldestAge(ctx: AlertContext): string | null {
  return ctx.oldestOpenAt ? formatAge(ctx.now.getTime() - ctx.oldestOpenAt.getTime()) : null;
}

/** Non-zero counts only: what is actually open. */
export function openCounts(ctx: AlertContext): Partial<Record<AlertCategory, number>> {
  return Object.fromEntries(Object.entries(ctx.counts).filter(([, n]) => n > 0));
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * Slack and the webhook speak for the whole account: one message when any
 * category has news, carrying (and so refreshing the state of) every category
 * that is open or was open when the sink last heard.
 */
export function summaryPlan(ctx: AlertContext): { send: boolean; categories: AlertKey[] } {
  return {
    send: ctx.changes.some((c) => isNews(c.change)),
    categories: ctx.changes.filter((c) => c.current > 0 || c.previous > 0).map((c) => c.category),
  };
}
