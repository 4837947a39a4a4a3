import type { Queryable } from '../db/pool.js';

/** An open finding as a run's summary names it: enough to find it again with `report` or close it with `resolve`. */
export interface OpenFindingBrief {
  id: number;
  category: string;
  chargeId: string | null;
  tenantId: string | null;
  idempotencyKey: string | null;
}

/**
 * The first `limit` open findings of an account (oldest first, by id) and how many
 * are open in all: a run's summary lists a few, never thousands.
 */
export async function listOpenFindings(
  db: Queryable,
  account: string,
  limit: number,
): Promise<{ total: number; first: OpenFindingBrief[] }> {
  const { rows } = await db.query<{
    id: string;
    category: string;
    charge_id: string | null;
    tenant_id: string | null;
    idempotency_key: string | null;
  }>(
    `SELECT id, category, charge_id, tenant_id, idempotency_key FROM recon_findings
      WHERE account = $1 AND state = 'open' ORDER BY id LIMIT $2`,
    [account, limit],
  );
  const count = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM recon_findings WHERE account = $1 AND state = 'open'`,
    [account],
  );
  const total = count.rows[0]?.n ?? 0;
  return {
    total,
    first: rows.map((r) => ({
      id: Number(r.id),
      category: r.category,
      chargeId: r.charge_id,
      tenantId: r.tenant_id,
      idempotencyKey: r.idempotency_key,
    })),
  };
}
