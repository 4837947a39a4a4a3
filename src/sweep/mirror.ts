import type { Queryable } from '../db/pool.js';
import { accountName } from '../domain/identity.js';
import type { NormalizedCharge } from './provider.js';

/**
 * Lands one batch of charges (a page or more) in the mirror in one statement. A row
 * is only overwritten by a read at least as new (`fetched_at`), so a slow request
 * that returns after a newer one cannot roll a refund back.
 */
export async function upsertCharges(db: Queryable, charges: NormalizedCharge[], fetchedAt: Date): Promise<number> {
  if (charges.length === 0) return 0;
  const unique = [...new Map(charges.map((c) => [c.id, c])).values()];
  const rows = unique.map((c) => ({
    account: accountName(c.account),
    charge_id: c.id,
    created: new Date(c.created * 1000).toISOString(),
    amount: c.amount,
    amount_captured: c.amountCaptured,
    amount_refunded: c.amountRefunded,
    currency: c.currency,
    status: c.status,
    captured: c.captured,
    refunded: c.refunded,
    disputed: c.disputed,
    payment_intent_id: c.paymentIntent,
    customer: c.customer,
    payment_method: c.paymentMethod,
    tenant_id: c.tenantId,
    idempotency_key: c.idempotencyKey,
    livemode: c.livemode,
  }));
  const result = await db.query(
    `INSERT INTO stripe_charges AS m (account, charge_id, created, amount, amount_captured, amount_refunded, currency,
                                      status, captured, refunded, disputed, payment_intent_id, customer,
                                      payment_method, tenant_id, idempotency_key, livemode, fetched_at)
     SELECT r.account, r.charge_id, r.created, r.amount, r.amount_captured, r.amount_refunded, r.currency,
            r.status, r.captured, r.refunded, r.disputed, r.payment_intent_id, r.customer, r.payment_method,
            r.tenant_id, r.idempotency_key, r.livemode, $2
       FROM jsonb_to_recordset($1::jsonb) AS r(account text, charge_id text, created timestamptz, amount bigint,
            amount_captured bigint, amount_refunded bigint, currency text, status text, captured boolean,
            refunded boolean, disputed boolean, payment_intent_id text, customer text, payment_method text,
            tenant_id text, idempotency_key text, livemode boolean)
     ON CONFLICT (charge_id, created) DO UPDATE
        SET amount = EXCLUDED.amount, amount_captured = EXCLUDED.amount_captured,
            amount_refunded = EXCLUDED.amount_refunded, currency = EXCLUDED.currency, status = EXCLUDED.status,
            captured = EXCLUDED.captured, refunded = EXCLUDED.refunded, disputed = EXCLUDED.disputed,
            payment_intent_id = EXCLUDED.payment_intent_id, customer = EXCLUDED.customer,
            payment_method = EXCLUDED.payment_method, tenant_id = EXCLUDED.tenant_id,
            idempotency_key = EXCLUDED.idempotency_key, livemode = EXCLUDED.livemode, fetched_at = EXCLUDED.fetched_at
      WHERE m.fetched_at <= EXCLUDED.fetched_at`,
    [JSON.stringify(rows), fetchedAt],
  );
  return result.rowCount ?? 0;
}
