/**
 * Planning of the windowed listing, without I/O.
 *
 * A task lists `gte <= created < lt`, optionally continuing after the charge
 * `startingAfter` (which lies inside the range). Stripe lists newest first, ordered by
 * `created` and then a fixed tie-break, so after a full page whose oldest charge was
 * created at second `c`, everything still unseen in the task is exactly:
 *
 *   the charges after that last one within `[gte, c + 1)`.
 *
 * That set is split at a second `m` with `gte < m <= c` into
 *   - `[m, c + 1)` continued after the last charge (the cursor stays inside its range, so
 *     this is ordinary pagination of a narrower list), and
 *   - `[gte, m)` listed from its start (every charge in it is older than the cursor).
 * The two parts are disjoint and together cover the rest, so no charge is lost or
 * listed twice, whatever the distribution. A single second (`c == gte`) cannot be
 * split and is paged through with `starting_after`: a burst of 1,000 charges in one
 * second costs ten sequential pages, never a lost charge.
 */
export interface SubWindowTask {
  gte: number;
  lt: number;
  startingAfter?: string;
}

export interface PageOutline {
  hasMore: boolean;
  count: number;
  /** `created` of the page's first (newest) charge, when readable. */
  newestCreated: number | null;
  /** The page's last (oldest) charge, which the next page starts after. */
  last: { id: string | null; created: number | null } | null;
}

export interface PlanOptions {
  /** True when fewer sub-windows are in flight than the lister may run at once. */
  wantMore: boolean;
  /** Page size; a split is only worth a request when about two pages or more remain. */
  limit: number;
  /**
   * Where to split `[gte, created + 1)` instead of its middle (a listing with no real
   * lower bound: see payout-listing.ts); kept to `gte < m <= created`.
   */
  splitPoint?: (gte: number, created: number, page: PageOutline) => number;
}

export type Plan = { ok: true; tasks: SubWindowTask[]; split: boolean } | { ok: false; problem: string };

export function planNext(task: SubWindowTask, page: PageOutline, options: PlanOptions): Plan {
  if (!page.hasMore) return { ok: true, tasks: [], split: false };
  if (page.count === 0 || page.last === null)
    return { ok: false, problem: 'Stripe answered has_more with an empty page' };
  const { id, created } = page.last;
  if (id === null)
    return { ok: false, problem: 'the last charge of a page has no id, so the next page cannot be requested' };
  if (created === null || created < task.gte || created >= task.lt) {
    // Without a trustworthy `created` the range cannot be narrowed; plain pagination is still exact.
    return { ok: true, tasks: [{ gte: task.gte, lt: task.lt, startingAfter: id }], split: false };
  }
  const continued: SubWindowTask = { gte: task.gte, lt: created + 1, startingAfter: id };
  if (!options.wantMore || created === task.gte || !worthSplitting(task, page, created, options.limit)) {
    return { ok: true, tasks: [continued], split: false };
  }
  const chosen = options.splitPoint?.(task.gte, created, page) ?? splitPoint(task.gte, created);
  const mid = Math.min(created, Math.max(task.gte + 1, Math.floor(chosen)));
  return {
    ok: true,
    tasks: [
      { gte: mid, lt: created + 1, startingAfter: id },
      { gte: task.gte, lt: mid },
    ],
    split: true,
  };
}

/** The second that halves `[gte, c + 1)`; always `gte < m <= c` when `c > gte`. */
export function splitPoint(gte: number, created: number): number {
  return gte + Math.floor((created + 1 - gte) / 2);
}

/**
 * Guess, from the density of the page just read, whether at least two more pages
 * remain. A split costs one extra request (the new part's partial last page), which
 * only pays when it buys parallel work. A wrong guess costs speed, never correctness.
 */
function worthSplitting(task: SubWindowTask, page: PageOutline, oldest: number, limit: number): boolean {
  if (page.newestCreated === null || page.newestCreated < oldest) return true;
  const perSecond = page.count / (page.newestCreated - oldest + 1);
  const remainingEstimate = perSecond * (oldest - task.gte);
  return remainingEstimate >= 2 * limit;
}
