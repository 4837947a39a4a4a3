import type { Queryable } from '../db/pool.js';
import { CATEGORIES, emptyCounts, type Category } from '../sweep/categories.js';

export interface OpenFindings {
  openByCategory: Record<Category, number>;
  /** `first_seen_at` of the oldest open finding: how long the oldest problem has gone unfixed. */
  oldestOpenAt: Date | null;
}

/** What an alert for one account says: open (unreconciled) findings per category, and the oldest one. */
export async function readOpenFindings(db: Queryable, account: string): Promise<OpenFindings> {
  const { rows } = await db.query<{ category: string; n: number; oldest: Date }>(
    `SELECT category, count(*)::int AS n, min(first_seen_at) AS oldest
       FROM recon_findings WHERE account = $1 AND state = 'open' GROUP BY category`,
    [account],
  );
  const openByCategory = emptyCounts();
  let oldestOpenAt: Date | null = null;
  for (const row of rows) {
    if (!(CATEGORIES as readonly string[]).includes(row.category)) continue;
    openByCategory[row.category as Category] = row.n;
    if (oldestOpenAt === null || row.oldest < oldestOpenAt) oldestOpenAt = row.oldest;
  }
  return { openByCategory, oldestOpenAt };
}
