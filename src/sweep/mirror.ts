import type { Queryable } from '../db/pool.js';
import { accountName } from '../domain/identity.js';
import type { NormalizedCharge } from './provider.js';

/** The mirror's columns a read fills, with their types, in one order: every way a batch lands uses it. */
export const MIRROR_COLUMNS = [
  ['account', 'text'],
  ['charge_id', 'text'],
  ['created', 'timestamptz'],
  ['amount', 'bigint'],
  ['amount_captured', 'bigint'],
  ['amount_refunded', 'bigint'],
  ['currency', 'text'],
  ['status', 'text'],
  ['captured', 'boolean'],
  ['refunded', 'boolean'],
  ['disputed', 'boolean'],
  ['payment_intent_id', 'text'],
  ['customer', 'text'],
  ['payment_method', 'text'],
  ['tenant_id', 'text'],
  ['idempotency_key', 'text'],
  ['livemode', 'boolean'],
  ['reference', 'text'],
  ['card_fingerprint', 'text'],
] as const;

/** `name type, …`: a record type or a table definition of those columns. */
export const MIRROR_RECORD_TYPE = MIRROR_COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ');

const NAMES = MIRROR_COLUMNS.map(([name]) => name).join(', ');
// The key (charge_id, created) and the account never change on a re-read.
const UPDATES = MIRROR_COLUMNS.filter(([name]) => !['account', 'charge_id', 'created'].includes(name))
  .map(([name]) => `${name} = EXCLUDED.${name}`)
  .join(', ');

/**
 * The one upsert of the mirror: the rows `source` selects (the mirror's columns, at
 * least), read at `fetchedAt` (a parameter), each overwriting a row only when that row's
 * read is no newer, so a slow request that returns after a newer one cannot roll a
 * refund back.
 */
export function mirrorUpsertSql(source: string, fetchedAt: string): string {
  return `INSERT INTO stripe_charges AS m (${NAMES}, fetched_at)
SELECT ${NAMES}, ${fetchedAt} FROM (${source}) AS r
ON CONFLICT (charge_id, created) DO UPDATE SET ${UPDATES}, fetched_at = EXCLUDED.fetched_at
 WHERE m.fetched_at <= EXCLUDED.fetched_at`;
}

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
    reference: c.reference ?? null,
    card_fingerprint: c.cardFingerprint ?? null,
  }));
  const result = await db.query(
    mirrorUpsertSql(`SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(${MIRROR_RECORD_TYPE})`, '$2'),
    [JSON.stringify(rows), fetchedAt],
  );
  return result.rowCount ?? 0;
}
