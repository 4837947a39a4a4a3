import type { Queryable } from '../db/pool.js';
import type { ResponseOutcome } from '../claims/claim-store.js';
import { accountIdOf, type ChargeFact, type ClaimFact, type EffectFact, type SliceFacts } from './facts.js';
import type { TimeWindow } from './window.js';

/**
 * Gathers everything one slice is judged on, set-based: three statements however
 * many charges the slice holds. An identity (account, tenant, key) is in the slice
 * when one of its charges was created, its claim last changed, or its payment row was
 * created there; it then carries its claim (if the claim is on this account), and
 * every charge and payment naming the key or linked to it by a local record (a
 * payment's charge id, the charge the claim's stored answer names), wherever they lie
 * in time. Which of them count is judged in judge/evidence.ts.
 */
/** The identities whose charge was created, claim last changed, or payment row created in a slice. */
const SLICE_KEYS = `
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
)`;

/** The identities of the charges `$2` (ids): their metadata, or a payment row of this account naming a key. */
const CHARGES_KEYS = `
WITH keys AS (
  SELECT tenant_id, idempotency_key AS key FROM stripe_charges
   WHERE account = $1 AND charge_id = ANY($2::text[]) AND tenant_id IS NOT NULL AND idempotency_key IS NOT NULL
  UNION
  SELECT tenant_id, idempotency_key FROM payments
   WHERE coalesce(account_id, 'platform') = $1 AND charge_id = ANY($2::text[])
     AND tenant_id IS NOT NULL AND idempotency_key IS NOT NULL
)`;

/** Everything each identity of `keys` is judged on ($1 account name, `accountId` the parameter holding its account_id). */
const identitiesSql = (keys: string, accountId: string) => `${keys}
SELECT k.tenant_id, k.key,
       CASE WHEN claim.key IS NOT NULL AND coalesce(claim.account_id, 'platform') = $1 THEN row_to_json(claim) END AS claim,
       CASE WHEN claim.key IS NOT NULL AND coalesce(claim.account_id, 'platform') <> $1
            THEN coalesce(claim.account_id, 'platform') END AS claim_account,
       (EXISTS (SELECT 1 FROM idempotency_keys c WHERE c.tenant_id = k.tenant_id
                   AND (c.account_id = ${accountId} OR (${accountId}::text IS NULL AND c.account_id IS NULL)))
        OR EXISTS (SELECT 1 FROM payments p WHERE p.tenant_id = k.tenant_id
                   AND (p.account_id = ${accountId} OR (${accountId}::text IS NULL AND p.account_id IS NULL)))) AS tenant_known,
       coalesce(ch.j, '[]') AS charges, coalesce(ef.j, '[]') AS effects
  FROM keys k
  LEFT JOIN LATERAL (
    SELECT c.tenant_id, c.key, c.account_id, c.status, c.attempt, c.locked_until, c.created_at, c.updated_at,
           c.response_status, c.response_outcome, c.amount, c.currency, c.downstream_key,
           CASE WHEN jsonb_typeof(c.response_body) = 'object' THEN c.response_body->>'charge' END AS response_charge_id
      FROM idempotency_keys c WHERE c.tenant_id = k.tenant_id AND c.key = k.key LIMIT 1
  ) claim ON true
  -- Each lookup is its own indexed probe (a UNION, not an OR, which would scan).
  -- Lookups by charge id carry no account filter: charge ids are unique across
  -- accounts, and which account a charge is in is judged in judge/evidence.ts.
  LEFT JOIN LATERAL (
    SELECT json_agg(c) AS j FROM (
      SELECT c.*, (SELECT coalesce(p.account_id, 'platform') FROM payments p
                    WHERE p.charge_id = c.charge_id AND coalesce(p.account_id, 'platform') <> c.account) AS recorded_in
        FROM (
          SELECT sc.* FROM stripe_charges sc
           WHERE sc.tenant_id = k.tenant_id AND sc.idempotency_key = k.key AND sc.account = $1
          UNION
          SELECT sc.* FROM payments p JOIN stripe_charges sc ON sc.charge_id = p.charge_id
           WHERE p.tenant_id = k.tenant_id AND p.idempotency_key = k.key
             AND (p.account_id = ${accountId} OR (${accountId}::text IS NULL AND p.account_id IS NULL))
          UNION
          SELECT sc.* FROM stripe_charges sc WHERE sc.charge_id = claim.response_charge_id
        ) c
    ) c
  ) ch ON true
  LEFT JOIN LATERAL (
    SELECT json_agg(e) AS j FROM (
      SELECT p.* FROM payments p WHERE p.tenant_id = k.tenant_id AND p.idempotency_key = k.key
         AND (p.account_id = ${accountId} OR (${accountId}::text IS NULL AND p.account_id IS NULL))
      UNION
      SELECT p.* FROM stripe_charges sc JOIN payments p ON p.charge_id = sc.charge_id
       WHERE sc.tenant_id = k.tenant_id AND sc.idempotency_key = k.key AND sc.account = $1
         AND (p.account_id = ${accountId} OR (${accountId}::text IS NULL AND p.account_id IS NULL))
    ) e
  ) ef ON true`;

export const IDENTITIES_SQL = identitiesSql(SLICE_KEYS, '$4');
const CHANGED_IDENTITIES_SQL = identitiesSql(CHARGES_KEYS, '$3');

/** Charges without attribution metadata that no payment row of this account attributes to a key. */
const looseChargesSql = (selection: string) => `
SELECT row_to_json(sc) AS charge,
       (SELECT row_to_json(p) FROM payments p WHERE p.charge_id = sc.charge_id AND coalesce(p.account_id, 'platform') = $1) AS effect
  FROM stripe_charges sc
 WHERE sc.account = $1 AND ${selection}
   AND (sc.tenant_id IS NULL OR sc.idempotency_key IS NULL)
   -- A payment row naming a tenant and key makes the charge that key's: judged with it.
   AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.charge_id = sc.charge_id AND coalesce(p.account_id, 'platform') = $1
                      AND p.tenant_id IS NOT NULL AND p.idempotency_key IS NOT NULL)`;

// Payment rows without attribution (nor a charge naming a key), with their charge if
// the mirror has it. Every object is judged on exactly one path: with its identity,
// or here as loose.
const looseEffectsSql = (selection: string) => `
SELECT row_to_json(p) AS effect, (SELECT row_to_json(sc) FROM stripe_charges sc WHERE sc.charge_id = p.charge_id LIMIT 1) AS charge
  FROM payments p
 WHERE coalesce(p.account_id, 'platform') = $1 AND ${selection}
   AND (p.tenant_id IS NULL OR p.idempotency_key IS NULL)
   -- A charge naming a tenant and key makes the row that key's: judged with it.
   AND NOT EXISTS (SELECT 1 FROM stripe_charges sc WHERE sc.charge_id = p.charge_id AND sc.account = $1
                      AND sc.tenant_id IS NOT NULL AND sc.idempotency_key IS NOT NULL)`;

const SLICE = {
  identities: IDENTITIES_SQL,
  looseCharges: looseChargesSql('sc.created >= $2 AND sc.created < $3'),
  looseEffects: looseEffectsSql('p.created_at >= $2 AND p.created_at < $3'),
};
const CHANGED = {
  identities: CHANGED_IDENTITIES_SQL,
  looseCharges: looseChargesSql('sc.charge_id = ANY($2::text[])'),
  looseEffects: looseEffectsSql('p.charge_id = ANY($2::text[])'),
};

type Json = Record<string, unknown>;
type Queries = typeof SLICE;

/** The facts of one slice of time. */
export function loadSliceFacts(db: Queryable, account: string, slice: TimeWindow): Promise<SliceFacts> {
  return loadFacts(db, account, SLICE, [account, slice.from, slice.to], [account, slice.from, slice.to, accountIdOf(account)]);
}

/** The facts of the identities some charges belong to (the charges Stripe's events point at), whatever their age. */
export function loadChangedFacts(db: Queryable, account: string, chargeIds: readonly string[]): Promise<SliceFacts> {
  return loadFacts(db, account, CHANGED, [account, chargeIds], [account, chargeIds, accountIdOf(account)]);
}

async function loadFacts(db: Queryable, account: string, queries: Queries, args: unknown[], identityArgs: unknown[]): Promise<SliceFacts> {
  const identities = await db.query<{
    tenant_id: string;
    key: string;
    claim: Json | null;
    claim_account: string | null;
    tenant_known: boolean;
    charges: Json[];
    effects: Json[];
  }>(queries.identities, identityArgs);
  const looseCharges = await db.query<{ charge: Json; effect: Json | null }>(queries.looseCharges, args);
  const looseEffects = await db.query<{ effect: Json; charge: Json | null }>(queries.looseEffects, args);
  return {
    identities: identities.rows.map((r) => ({
      account,
      tenantId: r.tenant_id,
      key: r.key,
      claim: r.claim ? claimFact(r.claim) : null,
      claimAccount: r.claim_account,
      tenantKnown: r.tenant_known,
      charges: r.charges.map(chargeFact),
      effects: r.effects.map(effectFact),
    })),
    looseCharges: looseCharges.rows.map((r) => ({ charge: chargeFact(r.charge), effect: r.effect ? effectFact(r.effect) : null })),
    looseEffects: looseEffects.rows.map((r) => ({ effect: effectFact(r.effect), charge: r.charge ? chargeFact(r.charge) : null })),
  };
}

const date = (v: unknown) => new Date(String(v));
const dateOrNull = (v: unknown) => (v === null || v === undefined ? null : new Date(String(v)));
const numberOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const textOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));

function claimFact(j: Json): ClaimFact {
  return {
    tenantId: String(j.tenant_id),
    key: String(j.key),
    accountId: textOrNull(j.account_id),
    status: j.status as ClaimFact['status'],
    attempt: Number(j.attempt),
    lockedUntil: dateOrNull(j.locked_until),
    createdAt: date(j.created_at),
    updatedAt: date(j.updated_at),
    responseStatus: numberOrNull(j.response_status),
    responseOutcome: textOrNull(j.response_outcome) as ResponseOutcome | null,
    responseChargeId: textOrNull(j.response_charge_id),
    amount: numberOrNull(j.amount),
    currency: textOrNull(j.currency),
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
    currency: String(j.currency).trim(),
    status: j.status as ChargeFact['status'],
    captured: Boolean(j.captured),
    refunded: Boolean(j.refunded),
    disputed: Boolean(j.disputed),
    paymentIntent: textOrNull(j.payment_intent_id),
    customer: textOrNull(j.customer),
    paymentMethod: textOrNull(j.payment_method),
    tenantId: textOrNull(j.tenant_id),
    idempotencyKey: textOrNull(j.idempotency_key),
    recordedIn: textOrNull(j.recorded_in),
  };
}

function effectFact(j: Json): EffectFact {
  return {
    chargeId: String(j.charge_id),
    tenantId: textOrNull(j.tenant_id),
    idempotencyKey: textOrNull(j.idempotency_key),
    accountId: textOrNull(j.account_id),
    paymentIntentId: textOrNull(j.payment_intent_id),
    amount: Number(j.amount),
    currency: String(j.currency).trim(),
    status: j.status as EffectFact['status'],
    amountRefunded: Number(j.amount_refunded),
    disputed: Boolean(j.disputed),
    createdAt: date(j.created_at),
  };
}
