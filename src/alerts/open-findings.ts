import type { Queryable } from '../db/pool.js';
import { CATEGORIES, emptyCounts, type Category } from '../sweep/categories.js';
import { evidenceAtSql } from '../sweep/evidence-time.js';

export interface OpenFindings {
  openByCategory: Record<Category, number>;
  /**
   * How old the oldest open problem is: the earliest evidence time among the open
   * findings (when the charge, else the payment row, else the claim was created:
   * src/sweep/evidence-time.ts), or `first_seen_at` for a finding without one. Not
   * `first_seen_at` alone: a backfill finds month-old charges today, and "8 minutes
   * old" would hide that they are a month old.
   */
  oldestOpenAt: Date | null;
}

/** What an alert for one account says: open (unreconciled) findings per category, and the oldest one. */
export async function readOpenFindings(db: Queryable, account: string): Promise<OpenFindings> {
  const { rows } = await db.query<{ category: string; n: number; oldest: Date }>(
    `SELECT f.category, count(*)::int AS n, min(coalesce(${evidenceAtSql('f')}, f.first_seen_at)) AS oldest
       FROM recon_findings f WHERE f.account = $1 AND f.state = 'open' GROUP BY f.category`,
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
