import type { Queryable } from '../db/pool.js';
import { claimKey } from '../domain/identity.js';
import { CHARGE_COLUMNS, chargeFact } from '../sweep/charge-rows.js';
import type { ChargeFact } from '../sweep/facts.js';
import { canonicalJson, sha256Hex } from './format.js';

/**
 * The versions of rows a plan step read (evidence.ts): the same columns, hashed the same
 * way, when the plan is made and when it is applied. Set-based: one statement per kind of
 * row, whatever the number of steps. Instants are taken as UTC text to the microsecond,
 * so neither the session's time zone nor a JavaScript Date's milliseconds change them.
 */

const utc = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;

/** Every column of a claim the sweep reads or writes, but `updated_at` (bookkeeping some writers do not keep). */
const CLAIM_CONTENT = `jsonb_build_array(c.tenant_id, c.key, c.account_id, c.status, c.attempt, ${utc('c.locked_until')},
  c.request_fingerprint, c.downstream_key, c.response_status, c.response_body, c.response_outcome, c.amount::text,
  c.currency, c.reference, c.operation, c.target, ${utc('c.created_at')}, ${utc('c.completed_at')})`;

/** What a payment row says about its charge: the columns the sweep judges and repairs. */
const PAYMENT_CONTENT = `jsonb_build_array(p.charge_id, p.tenant_id, p.idempotency_key, p.payment_intent_id, p.account_id,
  p.amount::text, p.currency, p.status, p.amount_refunded::text, p.disputed, ${utc('p.created_at')}, p.reference,
  p.dispute_status)`;

const INTENT_CONTENT = `jsonb_build_array(r.charge_id, r.account, r.kept_charge_id, r.amount::text, r.currency,
  r.idempotency_key, r.state, r.stripe_refund_id)`;

function versionOf(content: unknown): string | null {
  return content === null || content === undefined ? null : sha256Hex(canonicalJson(content));
}

/** Each claim's version (null: no claim), by `claimKey()`; looked up through the directory, one probe per key. */
export async function claimVersions(
  db: Queryable,
  keys: ReadonlyArray<{ tenantId: string; key: string }>,
): Promise<Map<string, string | null>> {
  if (keys.length === 0) return new Map();
  const { rows } = await db.query<{ tenant_id: string; key: string; content: unknown }>(
    `SELECT k.tenant_id, k.key, CASE WHEN c.tenant_id IS NOT NULL THEN ${CLAIM_CONTENT} END AS content
       FROM unnest($1::text[], $2::text[]) AS k(tenant_id, key)
       LEFT JOIN LATERAL (SELECT d.created_at FROM idempotency_key_directory d
                           WHERE d.tenant_id = k.tenant_id AND d.key = k.key OFFSET 0) d ON true
       LEFT JOIN LATERAL (SELECT * FROM idempotency_keys c
                           WHERE c.tenant_id = k.tenant_id AND c.key = k.key AND c.created_at = d.created_at
                          UNION ALL
                          SELECT * FROM idempotency_keys c
                           WHERE d.created_at IS NULL AND c.tenant_id = k.tenant_id AND c.key = k.key
                          LIMIT 1) c ON true`,
    [keys.map((k) => k.tenantId), keys.map((k) => k.key)],
  );
  return new Map(rows.map((r) => [claimKey(r.tenant_id, r.key), versionOf(r.content)]));
}

/** Each payment row's version (null: no row for the charge), by charge id. */
export async function paymentVersions(
  db: Queryable,
  chargeIds: readonly string[],
): Promise<Map<string, string | null>> {
  if (chargeIds.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; content: unknown }>(
    `SELECT i.id, CASE WHEN p.charge_id IS NOT NULL THEN ${PAYMENT_CONTENT} END AS content
       FROM unnest($1::text[]) AS i(id) LEFT JOIN payments p ON p.charge_id = i.id`,
    [[...new Set(chargeIds)]],
  );
  return new Map(rows.map((r) => [r.id, versionOf(r.content)]));
}

/** Each refund outbox row's version (null: none), by the charge it refunds. */
export async function intentVersions(db: Queryable, chargeIds: readonly string[]): Promise<Map<string, string | null>> {
  if (chargeIds.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; content: unknown }>(
    `SELECT i.id, CASE WHEN r.charge_id IS NOT NULL THEN ${INTENT_CONTENT} END AS content
       FROM unnest($1::text[]) AS i(id) LEFT JOIN recon_refunds r ON r.charge_id = i.id`,
    [[...new Set(chargeIds)]],
  );
  return new Map(rows.map((r) => [r.id, versionOf(r.content)]));
}

const REFUND_ROW_CONTENT = `jsonb_build_array(r.refund_id, r.charge_id, r.tenant_id, r.idempotency_key, r.account_id,
  r.amount::text, r.currency, r.status, ${utc('r.created_at')})`;

/** Each application refund row's version (null: none), by refund id. */
export async function refundRowVersions(
  db: Queryable,
  refundIds: readonly string[],
): Promise<Map<string, string | null>> {
  if (refundIds.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; content: unknown }>(
    `SELECT i.id, CASE WHEN r.refund_id IS NOT NULL THEN ${REFUND_ROW_CONTENT} END AS content
       FROM unnest($1::text[]) AS i(id) LEFT JOIN payment_refunds r ON r.refund_id = i.id`,
    [[...new Set(refundIds)]],
  );
  return new Map(rows.map((r) => [r.id, versionOf(r.content)]));
}

/**
 * Charges as the mirror last read them, with when (for an apply without Stripe's own word:
 * apply.ts). By id in each account; a charge's id is unique, its day unknown here, so
 * each day partition's primary key is probed.
 */
export async function mirroredCharges(
  db: Queryable,
  charges: ReadonlyArray<{ account: string; id: string }>,
): Promise<Map<string, { charge: ChargeFact; fetchedAt: Date }>> {
  if (charges.length === 0) return new Map();
  const { rows } = await db.query<Record<string, unknown> & { fetched_at: Date }>(
    `SELECT ${CHARGE_COLUMNS}, sc.fetched_at
       FROM unnest($1::text[], $2::text[]) AS i(account, id)
       JOIN stripe_charges sc ON sc.charge_id = i.id AND sc.account = i.account`,
    [charges.map((c) => c.account), charges.map((c) => c.id)],
  );
  return new Map(rows.map((r) => [String(r.charge_id), { charge: chargeFact(r), fetchedAt: r.fetched_at }]));
}
