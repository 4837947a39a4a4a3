import type { Pool, Queryable } from '../db/pool.js';
import { inTransaction } from '../db/pool.js';

/** What `sweeper_take_claim` found or did; see migrations/001. */
export type TakeOutcome =
  'claimed' | 'stolen' | 'retaken' | 'completed' | 'in_flight' | 'fingerprint_mismatch' | 'retry_window_expired';

export interface ClaimRow {
  outcome: TakeOutcome;
  attempt: number;
  status: 'in_flight' | 'completed' | 'released';
  created_at: Date;
  locked_until: Date | null;
  response_status: number | null;
  response_body: unknown;
  downstream_key: string;
}

/**
 * The attempt that holds a claim: the fence every later write of it checks is
 * (tenant, key, attempt, in_flight). Not created_at: a JavaScript Date keeps only
 * milliseconds, a row written by another client may carry microseconds.
 */
export interface HeldClaim {
  tenantId: string;
  key: string;
  createdAt: Date;
  attempt: number;
  downstreamKey: string;
}

export async function takeClaim(
  db: Queryable,
  args: {
    tenantId: string;
    key: string;
    fingerprint: string;
    downstreamKey: string;
    now: Date;
    leaseMs: number;
    accountId?: string | null;
    /** The request the claim stands for: every repair of the sweep checks a charge against it. */
    amount?: number | null;
    currency?: string | null;
    /** The business reference the payment is for (an order, an invoice). */
    reference?: string | null;
    /** 'refund' for a refund's claim (of the charge `target`); null for a charge's. */
    operation?: 'refund' | null;
    target?: string | null;
  },
): Promise<ClaimRow> {
  const { rows } = await db.query<ClaimRow>(
    `SELECT * FROM sweeper_take_claim($1, $2, $3, $4, $5, make_interval(secs => $6::double precision / 1000), $7, $8, $9, $10, $11, $12)`,
    [
      args.tenantId,
      args.key,
      args.fingerprint,
      args.downstreamKey,
      args.now,
      args.leaseMs,
      args.accountId ?? null,
      args.amount ?? null,
      args.currency ?? null,
      args.reference ?? null,
      args.operation ?? null,
      args.target ?? null,
    ],
  );
  const row = rows[0];
  if (!row) throw new Error('sweeper_take_claim returned no row');
  return row;
}

/**
 * Before filing these keys in the claims' directory (idempotency_key_directory): forgets the entries
 * whose claim is gone, so a writer that skips keys already filed (a repair, an import)
 * skips only keys that have a claim. Locks the keys' entries to the end of the
 * transaction.
 */
export async function forgetStaleClaimKeys(
  db: Queryable,
  keys: ReadonlyArray<{ tenant_id: string; key: string }>,
): Promise<void> {
  await db.query('SELECT sweeper_forget_stale_claim_keys($1::text[], $2::text[])', [
    keys.map((k) => k.tenant_id),
    keys.map((k) => k.key),
  ]);
}

/**
 * What a stored answer means, whatever its HTTP status (`response_outcome`): the
 * sweep reads success from this, never from one status code.
 */
export type ResponseOutcome = 'success' | 'pending_action' | 'declined' | 'rejected';

export interface StoredResponse {
  status: number;
  body: unknown;
  outcome: ResponseOutcome;
}

/**
 * The answer a successful charge stores on its claim, replayed to retries: written by
 * the claim library from the PaymentIntent, and by the sweep when it completes or
 * re-creates a claim from Stripe's charge (src/sweep/repairs.ts). The sweep reads
 * `charge` back to link a claim to its charge.
 */
export interface ChargeResponseBody {
  object: 'charge_result';
  /** Null only when the sweep stored the answer of a charge made without a PaymentIntent. */
  payment_intent: string | null;
  charge: string | null;
  status: string;
  amount: number;
  currency: string;
}

/**
 * The answer a refund claim stores and replays: Stripe's Refund shape, trimmed to what the
 * caller and the sweep read (`object: 'refund'` marks the claim a refund claim). One home
 * for the claim library's completion and the sweep's repair.
 */
export function refundResponse(refund: {
  id: string;
  chargeId: string;
  amount: number;
  currency: string;
  status: string;
}): { status: number; body: Record<string, unknown>; outcome: ResponseOutcome } {
  return {
    status: 200,
    body: {
      object: 'refund',
      id: refund.id,
      status: refund.status,
      amount: refund.amount,
      currency: refund.currency,
      charge: refund.chargeId,
    },
    outcome: refund.status === 'requires_action' ? 'pending_action' : 'success',
  };
}

export function chargeResultBody(result: {
  paymentIntent: string | null;
  charge: string | null;
  status: string;
  amount: number;
  currency: string;
}): ChargeResponseBody {
  return {
    object: 'charge_result',
    payment_intent: result.paymentIntent,
    charge: result.charge,
    status: result.status,
    amount: result.amount,
    currency: result.currency,
  };
}

/** A local payment row: the effect of a Stripe charge. */
export interface PaymentEffect {
  chargeId: string;
  tenantId: string | null;
  idempotencyKey: string | null;
  paymentIntentId: string | null;
  accountId: string | null;
  amount: number;
  currency: string;
  status: 'succeeded' | 'failed' | 'pending';
  amountRefunded: number;
  disputed: boolean;
  /** Where the charge's dispute stands (Stripe's dispute status); null or absent: none known. */
  disputeStatus?: string | null;
  createdAt: Date;
  /** The business reference (an order, an invoice) the payment is for, when its writer knew it. */
  reference?: string | null;
}

/**
 * Completes the claim and records its effect in one transaction. The completion is
 * a compare-and-swap on the attempt: if another attempt stole the claim meanwhile,
 * nothing is written and `false` comes back (that attempt will record the same
 * charge, since it sends the same downstream key). The effect insert never doubles
 * a charge that a sweeper repair recorded first.
 */
/** A local refund row: the effect of a Stripe refund the application made (payment_refunds). */
export interface RefundEffect {
  refundId: string;
  chargeId: string;
  tenantId: string | null;
  idempotencyKey: string | null;
  accountId: string | null;
  amount: number;
  currency: string;
  status: 'pending' | 'requires_action' | 'succeeded' | 'failed' | 'canceled';
  createdAt: Date;
}

export async function completeClaim(
  pool: Pool,
  claim: HeldClaim,
  response: StoredResponse,
  effect: PaymentEffect | null,
  now: Date,
  refund: RefundEffect | null = null,
): Promise<boolean> {
  return inTransaction(pool, async (tx) => {
    const updated = await tx.query(
      `UPDATE idempotency_keys
          SET status = 'completed', response_status = $4, response_body = $5, response_outcome = $7,
              completed_at = $6, updated_at = $6, locked_until = NULL
        WHERE tenant_id = $1 AND key = $2 AND attempt = $3 AND status = 'in_flight'`,
      [claim.tenantId, claim.key, claim.attempt, response.status, JSON.stringify(response.body), now, response.outcome],
    );
    // Nothing was written; committing the empty transaction is harmless.
    if (updated.rowCount !== 1) return false;
    if (effect) await insertPayment(tx, effect, now);
    if (refund) await insertRefund(tx, refund, now);
    return true;
  });
}

/** Gives the claim back so the caller's retry can run; fenced like completion. */
export async function releaseClaim(db: Queryable, claim: HeldClaim, now: Date): Promise<boolean> {
  const result = await db.query(
    `UPDATE idempotency_keys
        SET status = 'released', locked_until = NULL, updated_at = $4
      WHERE tenant_id = $1 AND key = $2 AND attempt = $3 AND status = 'in_flight'`,
    [claim.tenantId, claim.key, claim.attempt, now],
  );
  return result.rowCount === 1;
}

/**
 * The columns a payment row is written with, in order, with their types: by the claim
 * library (`insertPayment`) and by the sweep's repairs (src/sweep/repairs.ts, which
 * reads them from JSON). `updated_at` follows them, from the writer's clock.
 */
const PAYMENT_COLUMN_TYPES = [
  ['charge_id', 'text'],
  ['tenant_id', 'text'],
  ['idempotency_key', 'text'],
  ['payment_intent_id', 'text'],
  ['account_id', 'text'],
  ['amount', 'bigint'],
  ['currency', 'text'],
  ['status', 'text'],
  ['amount_refunded', 'bigint'],
  ['disputed', 'boolean'],
  ['created_at', 'timestamptz'],
  ['reference', 'text'],
] as const;

export const PAYMENT_COLUMNS: readonly string[] = PAYMENT_COLUMN_TYPES.map(([name]) => name);

/** The columns as a record type, to read a row from JSON: `jsonb_to_record(…) AS e(${PAYMENT_RECORD_TYPE})`. */
export const PAYMENT_RECORD_TYPE = PAYMENT_COLUMN_TYPES.map(([name, type]) => `${name} ${type}`).join(', ');

/** Every payment insert starts so: the columns of `PAYMENT_COLUMNS`, then `updated_at`. */
export const INSERT_PAYMENT_SQL = `INSERT INTO payments (${PAYMENT_COLUMNS.join(', ')}, updated_at)`;

export async function insertPayment(db: Queryable, effect: PaymentEffect, now: Date): Promise<boolean> {
  const result = await db.query(
    `${INSERT_PAYMENT_SQL}
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $13, $12)
     ON CONFLICT (charge_id) DO NOTHING`,
    [
      effect.chargeId,
      effect.tenantId,
      effect.idempotencyKey,
      effect.paymentIntentId,
      effect.accountId,
      effect.amount,
      effect.currency,
      effect.status,
      effect.amountRefunded,
      effect.disputed,
      effect.createdAt,
      now,
      effect.reference ?? null,
    ],
  );
  return result.rowCount === 1;
}

/** The refund's row, never doubled (a sweep repair may have recorded it first). */
export async function insertRefund(db: Queryable, refund: RefundEffect, now: Date): Promise<boolean> {
  const result = await db.query(
    `INSERT INTO payment_refunds (refund_id, charge_id, tenant_id, idempotency_key, account_id, amount, currency, status,
                                  created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (refund_id) DO NOTHING`,
    [
      refund.refundId,
      refund.chargeId,
      refund.tenantId,
      refund.idempotencyKey,
      refund.accountId,
      refund.amount,
      refund.currency,
      refund.status,
      refund.createdAt,
      now,
    ],
  );
  return result.rowCount === 1;
}
