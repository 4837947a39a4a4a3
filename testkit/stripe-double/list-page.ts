import type { ListQuery } from './charge-store.js';
import { invalidRequest } from './errors.js';

export interface Page<T> {
  data: T[];
  hasMore: boolean;
}

/**
 * Stripe's cursor paging over a list already in list order (newest first), for the
 * objects that are few next to charges (refunds, payouts, balance transactions,
 * accounts): `wanted` filters, `starting_after` pages towards older objects,
 * `ending_before` towards newer ones (the page nearest the cursor). A cursor that is
 * not in the list is a 400 `resource_missing` naming `kind`, as at Stripe.
 */
export function pageOf<T>(
  all: readonly T[],
  idOf: (item: T) => string,
  wanted: (item: T) => boolean,
  query: Pick<ListQuery, 'limit' | 'startingAfter' | 'endingBefore'>,
  kind: string,
): Page<T> {
  const index = (param: string, id: string): number => {
    const at = all.findIndex((item) => idOf(item) === id);
    if (at < 0) throw invalidRequest(`No such ${kind}: '${id}'`, { code: 'resource_missing', param });
    return at;
  };
  if (query.endingBefore !== undefined) {
    const newer = all.slice(0, index('ending_before', query.endingBefore)).filter(wanted);
    return { data: newer.slice(Math.max(0, newer.length - query.limit)), hasMore: newer.length > query.limit };
  }
  const from = query.startingAfter === undefined ? 0 : index('starting_after', query.startingAfter) + 1;
  const data: T[] = [];
  for (let i = from; i < all.length; i += 1) {
    const item = all[i] as T;
    if (!wanted(item)) continue;
    if (data.length === query.limit) return { data, hasMore: true };
    data.push(item);
  }
  return { data, hasMore: false };
}

/** Stripe's list envelope. */
export function listBody<T>(page: Page<T>, url: string, render: (item: T) => unknown): Record<string, unknown> {
  return { object: 'list', data: page.data.map(render), has_more: page.hasMore, url };
}
