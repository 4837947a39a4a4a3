import type { Queryable } from '../../src/db/pool.js';

/**
 * The reconciliation state of a database without what differs between two runs
 * that did the same work: run ids, timestamps of when a repair happened, read times.
 */
export async function normalizedTables(db: Queryable): Promise<Record<string, unknown[]>> {
  const q = async (sql: string) => (await db.query(sql)).rows;
  return {
    claims: await q(
      `SELECT tenant_id, key, request_fingerprint, status, attempt, downstream_key, account_id, response_status,
              response_body, created_at, locked_until FROM idempotency_keys ORDER BY tenant_id, key`,
    ),
    payments: await q(
      `SELECT charge_id, tenant_id, idempotency_key, payment_intent_id, account_id, amount, currency, status,
              amount_refunded, disputed, created_at FROM payments ORDER BY charge_id`,
    ),
    mirror: await q(
      `SELECT account, charge_id, created, amount, amount_refunded, currency, status, disputed, tenant_id, idempotency_key
         FROM stripe_charges ORDER BY charge_id`,
    ),
    findings: await q(
      `SELECT category, account, subject, charge_id, tenant_id, idempotency_key, state, closed_by
         FROM recon_findings ORDER BY category, subject`,
    ),
    repairs: await q(
      `SELECT f.category, f.subject, r.action, r.before, r.after, r.actor
         FROM recon_repairs r JOIN recon_findings f ON f.id = r.finding_id ORDER BY f.category, f.subject, r.action`,
    ),
  };
}
