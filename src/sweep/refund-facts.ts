import type { Queryable } from '../db/pool.js';
import type { NormalizedRefund } from './provider.js';
import type { RefundClaimFact, RefundRowFact, RefundStatus, StripeRefundFact } from './judge/refunds.js';
import type { TimeWindow } from './window.js';

/**
 * What the refund judgement reads and where Stripe's refunds land: the refunds mirror
 * (stripe_refunds), the local refund rows (payment_refunds) and the refund claims, each
 * read once per step with set-based statements, and the step's cursor.
 */

export function refundFact(r: NormalizedRefund): StripeRefundFact {
  return {
    id: r.id,
    chargeId: r.chargeId,
    created: new Date(r.created * 1000),
    amount: r.amount,
    currency: r.currency,
    status: r.status,
    failureReason: r.failureReason,
    tenantId: r.tenantId,
    key: r.idempotencyKey,
  };
}

/** Lands refunds in the mirror; a version read earlier than the one there never overwrites it. */
export async function mirrorRefunds(
  db: Queryable,
  account: string,
  refunds: readonly NormalizedRefund[],
  fetchedAt: Date,
): Promise<void> {
  if (refunds.length === 0) return;
  await db.query(
    `INSERT INTO stripe_refunds AS m (account, refund_id, charge_id, created, amount, currency, status, failure_reason,
                                     tenant_id, idempotency_key, fetched_at)
     SELECT $1, r.id, r.charge_id, to_timestamp(r.created), r.amount, r.currency, r.status, r.failure_reason,
            r.tenant_id, r.idempotency_key, $3
       FROM jsonb_to_recordset($2::jsonb) AS r(id text, charge_id text, created bigint, amount bigint, currency text,
            status text, failure_reason text, tenant_id text, idempotency_key text)
     ON CONFLICT (refund_id) DO UPDATE
        SET status = EXCLUDED.status, failure_reason = EXCLUDED.failure_reason, amount = EXCLUDED.amount,
            tenant_id = EXCLUDED.tenant_id, idempotency_key = EXCLUDED.idempotency_key, fetched_at = EXCLUDED.fetched_at
      WHERE m.fetched_at <= EXCLUDED.fetched_at`,
    [
      account,
      JSON.stringify(
        refunds.map((r) => ({
          id: r.id,
          charge_id: r.chargeId,
          created: r.created,
          amount: r.amount,
          currency: r.currency,
          status: r.status,
          failure_reason: r.failureReason,
          tenant_id: r.tenantId,
          idempotency_key: r.idempotencyKey,
        })),
      ),
      fetchedAt,
    ],
  );
}

/** Which local rows and claims a step judges besides those its refunds name: a window's, or none. */
export interface RefundSelection {
  account: string;
  /** Rows created, and refund claims last active, in this window (null: only what the refunds name). */
  window: TimeWindow | null;
  refundIds: readonly string[];
  /** (tenant, key) pairs the refunds' metadata name. */
  keys: ReadonlyArray<{ tenantId: string; key: string }>;
}

const ROWS_SQL = `
SELECT refund_id, charge_id, tenant_id, idempotency_key, amount::float8 AS amount, currency, status, created_at
  FROM payment_refunds
 WHERE refund_id = ANY($2::text[])
    OR (account = $1 AND $3::timestamptz IS NOT NULL AND created_at >= $3 AND created_at < $4)`;

// A claim's stored answer names its refund when it is Stripe's Refund shape (the claim
// library's, or another writer's Refund object).
const CLAIMS_SQL = `
SELECT c.tenant_id, c.key, c.attempt, c.status, c.locked_until, c.created_at, c.response_outcome,
       CASE WHEN jsonb_typeof(c.response_body) = 'object' AND c.response_body->>'object' = 'refund'
            THEN c.response_body->>'id' END AS answer_refund_id
  FROM idempotency_keys c
 WHERE c.account = $1 AND sweeper_claim_is_refund(c.operation, c.response_body)
   AND ((c.tenant_id, c.key) IN (SELECT * FROM unnest($2::text[], $3::text[]))
        OR ($4::timestamptz IS NOT NULL AND c.updated_at >= $4 AND c.updated_at < $5))`;

export async function loadRefundRows(db: Queryable, s: RefundSelection): Promise<RefundRowFact[]> {
  const { rows } = await db.query<Record<string, unknown>>(ROWS_SQL, [
    s.account,
    s.refundIds,
    s.window?.from ?? null,
    s.window?.to ?? null,
  ]);
  return rows.map((r) => ({
    refundId: r.refund_id as string,
    chargeId: r.charge_id as string,
    tenantId: (r.tenant_id as string | null) ?? null,
    key: (r.idempotency_key as string | null) ?? null,
    amount: Number(r.amount),
    currency: (r.currency as string).trim(),
    status: r.status as RefundStatus,
    createdAt: r.created_at as Date,
  }));
}

export async function loadRefundClaims(db: Queryable, s: RefundSelection): Promise<RefundClaimFact[]> {
  const { rows } = await db.query<Record<string, unknown>>(CLAIMS_SQL, [
    s.account,
    s.keys.map((k) => k.tenantId),
    s.keys.map((k) => k.key),
    s.window?.from ?? null,
    s.window?.to ?? null,
  ]);
  return rows.map((r) => ({
    tenantId: r.tenant_id as string,
    key: r.key as string,
    attempt: r.attempt as number,
    status: r.status as RefundClaimFact['status'],
    lockedUntil: (r.locked_until as Date | null) ?? null,
    createdAt: r.created_at as Date,
    answerRefundId: (r.answer_refund_id as string | null) ?? null,
    responseOutcome: (r.response_outcome as string | null) ?? null,
  }));
}

/**
 * Whether the account has a refund claim active, or a refund row created, in the window
 * (or a claim within Stripe's idempotency window before it, whose retry may refund late).
 */
export async function hasRefundActivity(db: Queryable, account: string, window: TimeWindow): Promise<boolean> {
  const { rows } = await db.query<{ active: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM idempotency_keys c
                     WHERE c.account = $1 AND c.updated_at >= $2::timestamptz - interval '24 hours'
                       AND c.updated_at < $3 AND sweeper_claim_is_refund(c.operation, c.response_body))
         OR EXISTS (SELECT 1 FROM payment_refunds r
                     WHERE r.account = $1 AND r.created_at >= $2 AND r.created_at < $3) AS active`,
    [account, window.from, window.to],
  );
  return rows[0]?.active === true;
}

/** Which of these refunds a local row records. */
export async function recordedRefunds(db: Queryable, ids: readonly string[]): Promise<string[]> {
  const { rows } = await db.query<{ refund_id: string }>(
    `SELECT refund_id FROM payment_refunds WHERE refund_id = ANY($1::text[])`,
    [ids],
  );
  return rows.map((r) => r.refund_id);
}

/** Where the refunds of the account were last listed to (scheduled runs); null before the first. */
export async function readRefundCursor(db: Queryable, account: string): Promise<Date | null> {
  const { rows } = await db.query<{ cursor: Date }>(`SELECT cursor FROM recon_refund_cursors WHERE account = $1`, [
    account,
  ]);
  return rows[0]?.cursor ?? null;
}

export async function advanceRefundCursor(
  db: Queryable,
  account: string,
  cursor: Date,
  runId: string,
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO recon_refund_cursors (account, cursor, run_id, updated_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (account) DO UPDATE SET cursor = GREATEST(recon_refund_cursors.cursor, EXCLUDED.cursor),
            run_id = EXCLUDED.run_id, updated_at = EXCLUDED.updated_at`,
    [account, cursor, runId, now],
  );
}
