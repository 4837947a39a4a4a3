import type { Queryable } from '../db/pool.js';
import type { ChargeFact, ClaimFact, EffectFact, SliceFacts } from './facts.js';
import type { TimeWindow } from './window.js';

/**
 * Gathers everything one slice is judged on, set-based: three statements however
 * many charges the slice holds. A (tenant, key) is in the slice when one of its
 * charges was created, its claim last changed, or its effect was created there; the
 * group then carries its claim and all its charges and effects, wherever they lie.
 */
export const GROUPS_SQL = `
WITH keys AS (
  SELECT tenant_id, idempotency_key AS key FROM stripe_charges
   WHERE account = $1 AND created >= $2 AND created < $3 AND tenant_id IS NOT NULL AND idempotency_key IS NOT NULL
  UNION
  SELECT tenant_id, key FROM idempotency_keys
   WHERE coalesce(account_id, 'platform') = $1 AND updated_at >= $2 AND updated_at < $3
  UNION
  SELECT tenant_id, idempotency_key FROM payments
   WHERE coalesce(account_id, 'platform') = $1 AND created_at >= $2 AND created_at < $3
     AND tenant_id IS NOT NULL AND idempotency_key IS NOT NULL
)
SELECT k.tenant_id, k.key, claim.j AS claim, coalesce(ch.j, '[]') AS charges, coalesce(ef.j, '[]') AS effects
  FROM keys k
  LEFT JOIN LATERAL (
    SELECT row_to_json(c) AS j FROM idempotency_keys c WHERE c.tenant_id = k.tenant_id AND c.key = k.key LIMIT 1
  ) claim ON true
  -- Each lookup is its own indexed probe (a UNION, not an OR, which would scan):
  -- charges by attribution, plus charges its effects name; effects by attribution,
  -- plus effects of its charges. Lookups by charge id carry no account filter:
  -- charge ids are unique across accounts, and a filter on account invited the
  -- planner to AND in the (account, created) index, reading a whole day per key.
  -- Which account a charge is in is judged in classify.ts.
  LEFT JOIN LATERAL (
    SELECT json_agg(c) AS j FROM (
      SELECT sc.* FROM stripe_charges sc
       WHERE sc.tenant_id = k.tenant_id AND sc.idempotency_key = k.key AND sc.account = $1
      UNION
      SELECT sc.* FROM payments p JOIN stripe_charges sc ON sc.charge_id = p.charge_id
       WHERE p.tenant_id = k.tenant_id AND p.idempotency_key = k.key
    ) c
  ) ch ON true
  LEFT JOIN LATERAL (
    SELECT json_agg(e) AS j FROM (
      SELECT p.* FROM payments p WHERE p.tenant_id = k.tenant_id AND p.idempotency_key = k.key
      UNION
      SELECT p.* FROM stripe_charges sc JOIN payments p ON p.charge_id = sc.charge_id
       WHERE sc.tenant_id = k.tenant_id AND sc.idempotency_key = k.key AND sc.account = $1
    ) e
  ) ef ON true`;

const LOOSE_CHARGES_SQL = `
SELECT row_to_json(sc) AS charge,
       (SELECT row_to_json(p) FROM payments p WHERE p.charge_id = sc.charge_id) AS effect
  FROM stripe_charges sc
 WHERE sc.account = $1 AND sc.created >= $2 AND sc.created < $3
   AND (sc.tenant_id IS NULL OR sc.idempotency_key IS NULL)`;

// Effects without attribution whose charge the mirror does not hold: candidates for
// effect_without_charge. An effect whose charge is mirrored is judged with that
// charge, in the charge's slice (as a loose charge or in its key's group), once.
const LOOSE_EFFECTS_SQL = `
SELECT row_to_json(p) AS effect, NULL::json AS charge
  FROM payments p
 WHERE coalesce(p.account_id, 'platform') = $1 AND p.created_at >= $2 AND p.created_at < $3
   AND (p.tenant_id IS NULL OR p.idempotency_key IS NULL)
   AND NOT EXISTS (SELECT 1 FROM stripe_charges sc WHERE sc.charge_id = p.charge_id)`;

type Json = Record<string, unknown>;

export async function loadSliceFacts(db: Queryable, account: string, slice: TimeWindow): Promise<SliceFacts> {
  const args = [account, slice.from, slice.to];
  const groups = await db.query<{ tenant_id: string; key: string; claim: Json | null; charges: Json[]; effects: Json[] }>(
    GROUPS_SQL,
    args,
  );
  const looseCharges = await db.query<{ charge: Json; effect: Json | null }>(LOOSE_CHARGES_SQL, args);
  const looseEffects = await db.query<{ effect: Json; charge: Json | null }>(LOOSE_EFFECTS_SQL, args);
  return {
    groups: groups.rows.map((r) => ({
      tenantId: r.tenant_id,
      key: r.key,
      claim: r.claim ? claimFact(r.claim) : null,
      charges: r.charges.map(chargeFact),
      effects: r.effects.map(effectFact),
    })),
    looseCharges: looseCharges.rows.map((r) => ({ charge: chargeFact(r.charge), effect: r.effect ? effectFact(r.effect) : null })),
    looseEffects: looseEffects.rows.map((r) => ({ effect: effectFact(r.effect), charge: r.charge ? chargeFact(r.charge) : null })),
  };
}

const date = (v: unknown) => new Date(String(v));
const dateOrNull = (v: unknown) => (v === null || v === undefined ? null : new Date(String(v)));

function claimFact(j: Json): ClaimFact {
  return {
    tenantId: String(j.tenant_id),
    key: String(j.key),
    accountId: (j.account_id as string | null) ?? null,
    status: j.status as ClaimFact['status'],
    attempt: Number(j.attempt),
    lockedUntil: dateOrNull(j.locked_until),
    createdAt: date(j.created_at),
    updatedAt: date(j.updated_at),
    responseStatus: j.response_status === null ? null : Number(j.response_status),
    downstreamKey: String(j.downstream_key),
  };
}

export function chargeFact(j: Json): ChargeFact {
  return {
    id: String(j.charge_id),
    account: String(j.account),
    created: date(j.created),
    amount: Number(j.amount),
    amountCaptured: Number(j.amount_captured),
    amountRefunded: Number(j.amount_refunded),
    currency: String(j.currency),
    status: j.status as ChargeFact['status'],
    captured: Boolean(j.captured),
    refunded: Boolean(j.refunded),
    disputed: Boolean(j.disputed),
    paymentIntent: (j.payment_intent_id as string | null) ?? null,
    tenantId: (j.tenant_id as string | null) ?? null,
    idempotencyKey: (j.idempotency_key as string | null) ?? null,
  };
}

function effectFact(j: Json): EffectFact {
  return {
    chargeId: String(j.charge_id),
    tenantId: (j.tenant_id as string | null) ?? null,
    idempotencyKey: (j.idempotency_key as string | null) ?? null,
    accountId: (j.account_id as string | null) ?? null,
    paymentIntentId: (j.payment_intent_id as string | null) ?? null,
    amount: Number(j.amount),
    currency: String(j.currency).trim(),
    status: j.status as EffectFact['status'],
    amountRefunded: Number(j.amount_refunded),
    disputed: Boolean(j.disputed),
    createdAt: date(j.created_at),
  };
}
