import type { Queryable } from '../db/pool.js';

/**
 * The per-tenant quota of claims per minute (opt-in): one statement counts the attempt
 * in the tenant's current minute and refuses past the limit, so two takers can never both
 * slip under it (no read, then write). Over it, nothing is claimed or charged.
 */
const COUNT = `
INSERT INTO claim_quota AS q (tenant_id, minute, count) VALUES ($1, date_trunc('minute', $2::timestamptz), 1)
ON CONFLICT (tenant_id, minute) DO UPDATE SET count = q.count + 1 WHERE q.count < $3
RETURNING q.count`;

/** Null when the attempt is within the quota; otherwise the seconds until the next minute (Retry-After). */
export async function overQuota(db: Queryable, tenantId: string, now: Date, perMinute: number): Promise<number | null> {
  const { rowCount } = await db.query(COUNT, [tenantId, now, perMinute]);
  if (rowCount === 1) return null;
  return Math.max(1, 60 - now.getUTCSeconds());
}
