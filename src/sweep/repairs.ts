import type { Queryable } from '../db/pool.js';
import { forgetStaleClaimKeys } from '../claims/claim-store.js';
import { downstreamKey } from '../claims/keys.js';
import { accountIdOf, claimKey } from '../domain/identity.js';
import {
  chargeResultBody,
  INSERT_PAYMENT_SQL,
  PAYMENT_COLUMNS,
  PAYMENT_RECORD_TYPE,
  type ResponseOutcome,
} from '../claims/claim-store.js';
import type { ChargeFact } from './facts.js';
import type { Finding, RepairPlan } from './judge/index.js';

/**
 * Completes each planned claim (`plan`: tenant_id, key, attempt, status, keep_answer and the
 * response columns; $2 the time) as a compare-and-swap on the version judged: a claim that
 * moved meanwhile, or whose lease is live, is left to its writer. Charges' and refunds' repairs.
 */
export const COMPLETE_CLAIMS_SQL = `
       UPDATE idempotency_keys k
          SET status = 'completed', locked_until = NULL, completed_at = coalesce(k.completed_at, $2), updated_at = $2,
              response_status = plan.response_status, response_body = plan.response_body,
              response_outcome = plan.response_outcome
         FROM plan
        WHERE NOT plan.keep_answer AND k.tenant_id = plan.tenant_id AND k.key = plan.key
          AND k.attempt = plan.attempt AND k.status = plan.status
          AND (k.status <> 'in_flight' OR k.locked_until <= $2)`;
/**
 * Claims are fenced on (tenant, key, attempt, status), never on created_at: a
 * JavaScript Date keeps milliseconds, and a claim written by another client may
 * carry microseconds, which would make every compare-and-swap miss silently.
 *
 * Executes planned repairs inside the slice's transaction, one set-based statement
 * per kind of repair. Every claim write is a compare-and-swap on the version the
 * sweep judged, so a live writer that moved the claim since always wins: its repair
 * simply does not happen. Effects are inserted `ON CONFLICT (charge_id) DO NOTHING`.
 */

export interface RepairOutcome {
  finding: Finding;
  action: string;
  before: unknown;
  after: unknown;
}

export interface RepairContext {
  now: Date;
}

type Of<K extends RepairPlan['kind']> = Extract<RepairPlan, { kind: K }>;

export async function executeRepairs(
  db: Queryable,
  findings: Finding[],
  ctx: RepairContext,
): Promise<Map<Finding, RepairOutcome>> {
  const done = new Map<Finding, RepairOutcome>();
  const byKind = <K extends RepairPlan['kind']>(kind: K) =>
    findings.filter((f): f is Finding & { repair: Of<K> } => f.repair?.kind === kind);

  await completeClaims(db, byKind('complete_claim'), ctx.now, done);
  await releaseClaims(db, byKind('release_claim'), ctx.now, done);
  await recreateClaims(db, byKind('recreate_claim'), ctx.now, done);
  await updateEffects(db, byKind('update_effect'), ctx.now, done);
  // Refunds are calls to Stripe: recorded as intents in this transaction and made after
  // it commits (refunds.ts), never while it holds claim locks.
  return done;
}

/** The answer a retry gets replayed once the sweeper completed a claim from Stripe's charge. */
export function responseFromCharge(charge: ChargeFact): { status: number; body: unknown; outcome: ResponseOutcome } {
  if (charge.status === 'failed') {
    return {
      status: 402,
      outcome: 'declined',
      body: {
        error: {
          type: 'card_error',
          code: 'card_declined',
          message: 'The charge failed at Stripe (recorded by the reconciliation sweeper).',
          charge: charge.id,
          ...(charge.paymentIntent ? { payment_intent: charge.paymentIntent } : {}),
        },
      },
    };
  }
  return {
    status: 200,
    outcome: 'success',
    body: chargeResultBody({
      paymentIntent: charge.paymentIntent,
      charge: charge.id,
      status: charge.status === 'pending' ? 'processing' : 'succeeded',
      amount: charge.amount,
      currency: charge.currency,
    }),
  };
}

function effectRow(charge: ChargeFact, tenantId: string | null, key: string | null) {
  return {
    charge_id: charge.id,
    tenant_id: tenantId,
    idempotency_key: key,
    payment_intent_id: charge.paymentIntent,
    account_id: accountIdOf(charge.account),
    amount: charge.amount,
    currency: charge.currency,
    status: charge.status,
    amount_refunded: charge.amountRefunded,
    disputed: charge.disputed,
    created_at: charge.created.toISOString(),
    reference: charge.reference ?? null,
  };
}

/** Inserts the payment rows of `e` (read with PAYMENT_RECORD_TYPE), updated at $2; the FROM clause follows. */
const INSERT_EFFECTS = `${INSERT_PAYMENT_SQL}
       SELECT ${PAYMENT_COLUMNS.map((c) => `e.${c}`).join(', ')}, $2`;

async function completeClaims(
  db: Queryable,
  findings: Array<Finding & { repair: Of<'complete_claim'> }>,
  now: Date,
  done: Map<Finding, RepairOutcome>,
): Promise<void> {
  if (findings.length === 0) return;
  const plan = findings.map(({ repair: { claim, charge, insertEffect, keepAnswer } }) => {
    const response = responseFromCharge(charge);
    return {
      tenant_id: claim.tenantId,
      key: claim.key,
      attempt: claim.attempt,
      status: claim.status,
      keep_answer: keepAnswer,
      response_status: response.status,
      response_body: response.body,
      response_outcome: response.outcome,
      effect: insertEffect ? effectRow(charge, claim.tenantId, claim.key) : null,
    };
  });
  const { rows } = await db.query<{ tenant_id: string; key: string; response_status: number }>(
    `WITH plan AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(tenant_id text, key text, attempt int, status text,
              keep_answer boolean, response_status int, response_body jsonb, response_outcome text, effect jsonb)
     ), completed AS (${COMPLETE_CLAIMS_SQL}
       RETURNING k.tenant_id, k.key, k.response_status
     ), kept AS (
       -- A stored success is not written at all (not even its updated_at): the claim is
       -- only checked to still be the completed one judged, and held until the commit.
       SELECT k.tenant_id, k.key, k.response_status
         FROM idempotency_keys k JOIN plan ON k.tenant_id = plan.tenant_id AND k.key = plan.key
        WHERE plan.keep_answer AND k.attempt = plan.attempt AND k.status = 'completed'
          FOR SHARE OF k
     ), done AS (
       SELECT * FROM completed UNION ALL SELECT * FROM kept
     ), effects AS (
       ${INSERT_EFFECTS}
         FROM plan JOIN done c USING (tenant_id, key)
        CROSS JOIN LATERAL jsonb_to_record(plan.effect) AS e(${PAYMENT_RECORD_TYPE})
        WHERE plan.effect IS NOT NULL
       ON CONFLICT (charge_id) DO NOTHING
     )
     SELECT tenant_id, key, response_status FROM done`,
    [JSON.stringify(plan), now],
  );
  const completed = new Map(rows.map((r) => [claimKey(r.tenant_id, r.key), r]));
  for (const finding of findings) {
    const { claim, charge, insertEffect, keepAnswer } = finding.repair;
    const row = completed.get(claimKey(claim.tenantId, claim.key));
    if (!row) continue; // a live writer moved the claim: it wins
    const effect = insertEffect ? effectRow(charge, claim.tenantId, claim.key) : 'present';
    done.set(finding, {
      finding,
      action: keepAnswer
        ? 'insert_effect'
        : charge.status === 'failed'
          ? 'store_failure_and_effect'
          : insertEffect
            ? 'insert_effect_and_complete_claim'
            : 'complete_claim',
      before: { claim: { status: claim.status, attempt: claim.attempt }, effect: insertEffect ? null : 'present' },
      after: keepAnswer
        ? { claim: 'unchanged (its stored success stays)', effect }
        : { claim: { status: 'completed', response_status: row.response_status }, effect },
    });
  }
}

async function releaseClaims(
  db: Queryable,
  findings: Array<Finding & { repair: Of<'release_claim'> }>,
  now: Date,
  done: Map<Finding, RepairOutcome>,
): Promise<void> {
  if (findings.length === 0) return;
  const plan = findings.map(({ repair: { claim } }) => ({
    tenant_id: claim.tenantId,
    key: claim.key,
    attempt: claim.attempt,
  }));
  const { rows } = await db.query<{ tenant_id: string; key: string }>(
    `UPDATE idempotency_keys k
        SET status = 'released', locked_until = NULL, updated_at = $2
       FROM jsonb_to_recordset($1::jsonb) AS plan(tenant_id text, key text, attempt int)
      WHERE k.tenant_id = plan.tenant_id AND k.key = plan.key
        AND k.attempt = plan.attempt AND k.status = 'in_flight' AND k.locked_until <= $2
     RETURNING k.tenant_id, k.key`,
    [JSON.stringify(plan), now],
  );
  const released = new Set(rows.map((r) => claimKey(r.tenant_id, r.key)));
  for (const finding of findings) {
    const { claim } = finding.repair;
    if (!released.has(claimKey(claim.tenantId, claim.key))) continue;
    done.set(finding, {
      finding,
      action: 'release_claim',
      before: { claim: { status: 'in_flight', attempt: claim.attempt } },
      after: { claim: { status: 'released', attempt: claim.attempt } },
    });
  }
}

async function recreateClaims(
  db: Queryable,
  findings: Array<Finding & { repair: Of<'recreate_claim'> }>,
  now: Date,
  done: Map<Finding, RepairOutcome>,
): Promise<void> {
  if (findings.length === 0) return;
  const plan = findings.map(({ repair }) => {
    const response = responseFromCharge(repair.charge);
    return {
      tenant_id: repair.tenantId,
      key: repair.key,
      downstream_key: downstreamKey(repair.tenantId, repair.key),
      account_id: repair.accountId,
      created_at: repair.createdAt.toISOString(),
      response_status: response.status,
      response_body: response.body,
      response_outcome: response.outcome,
      // The re-created claim stands for the request its charge made.
      amount: repair.charge.amount,
      currency: repair.charge.currency,
      with_claim: repair.withClaim,
      effect: repair.insertEffect ? effectRow(repair.charge, repair.tenantId, repair.key) : null,
    };
  });
  const planJson = JSON.stringify(plan);
  const claimed = plan.filter((p) => p.with_claim);
  // An entry whose claim is gone (a partition dropped by hand) must not stand in the way.
  if (claimed.length > 0) await forgetStaleClaimKeys(db, claimed);
  const { rows } = await db.query<{ tenant_id: string; key: string; ok: boolean }>(
    `WITH plan AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(tenant_id text, key text, downstream_key text, account_id text,
              created_at timestamptz, response_status int, response_body jsonb, response_outcome text, amount bigint,
              currency text, with_claim boolean, effect jsonb)
     ), filed AS (
       -- The keys first, in key order: a live writer taking one of them now waits for this
       -- transaction; one that filed it before has a claim, which wins (no repair here).
       INSERT INTO idempotency_key_directory (tenant_id, key, created_at)
       SELECT p.tenant_id, p.key, p.created_at FROM plan p WHERE p.with_claim ORDER BY p.tenant_id, p.key
       ON CONFLICT (tenant_id, key) DO NOTHING
       RETURNING tenant_id, key
     ), created AS (
       -- One statement, so the cross-partition uniqueness is checked once for all of them.
       INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, attempt, downstream_key,
                                     account_id, response_status, response_body, response_outcome, amount, currency,
                                     created_at, completed_at, updated_at)
       SELECT p.tenant_id, p.key, sweeper_recreated_fingerprint(), 'completed', NULL, 1, p.downstream_key, p.account_id,
              p.response_status, p.response_body, p.response_outcome, p.amount, p.currency, p.created_at, $2, $2
         FROM plan p JOIN filed f ON f.tenant_id = p.tenant_id AND f.key = p.key
       RETURNING tenant_id, key
     ), attempted AS (
       SELECT plan.*, (NOT plan.with_claim OR EXISTS (SELECT 1 FROM created c WHERE c.tenant_id = plan.tenant_id AND c.key = plan.key)) AS ok
         FROM plan
     ), effects AS (
       ${INSERT_EFFECTS}
         FROM attempted a CROSS JOIN LATERAL jsonb_to_record(a.effect) AS e(${PAYMENT_RECORD_TYPE})
        WHERE a.ok AND a.effect IS NOT NULL
       ON CONFLICT (charge_id) DO NOTHING
     )
     SELECT tenant_id, key, ok FROM attempted`,
    [planJson, now],
  );
  const ok = new Set(rows.filter((r) => r.ok).map((r) => claimKey(r.tenant_id, r.key)));
  for (const finding of findings) {
    const { repair } = finding;
    if (!ok.has(claimKey(repair.tenantId, repair.key))) continue; // a claim appeared meanwhile
    done.set(finding, {
      finding,
      action: repair.insertEffect ? (repair.withClaim ? 'create_claim_and_effect' : 'insert_effect') : 'recreate_claim',
      before: { claim: null, effect: repair.insertEffect ? null : 'present' },
      after: {
        claim: repair.withClaim ? { status: 'completed', created_at: repair.createdAt.toISOString() } : null,
        effect: repair.insertEffect ? effectRow(repair.charge, repair.tenantId, repair.key) : 'present',
      },
    });
  }
}

async function updateEffects(
  db: Queryable,
  findings: Array<Finding & { repair: Of<'update_effect'> }>,
  now: Date,
  done: Map<Finding, RepairOutcome>,
): Promise<void> {
  if (findings.length === 0) return;
  const plan = findings.map(({ repair: { effect, charge } }) => ({
    charge_id: charge.id,
    status: charge.status,
    amount_refunded: charge.amountRefunded,
    disputed: charge.disputed,
    dispute_status: charge.disputeStatus ?? null,
    // The compare-and-swap: only the version the sweep judged is overwritten.
    old_status: effect.status,
    old_amount_refunded: effect.amountRefunded,
    old_disputed: effect.disputed,
    old_dispute_status: effect.disputeStatus ?? null,
  }));
  const { rows } = await db.query<{ charge_id: string }>(
    `UPDATE payments p
        SET status = plan.status, amount_refunded = plan.amount_refunded, disputed = plan.disputed,
            dispute_status = coalesce(plan.dispute_status, p.dispute_status), updated_at = $2
       FROM jsonb_to_recordset($1::jsonb) AS plan(charge_id text, status text, amount_refunded bigint, disputed boolean,
            dispute_status text, old_status text, old_amount_refunded bigint, old_disputed boolean, old_dispute_status text)
      WHERE p.charge_id = plan.charge_id AND p.status = plan.old_status
        AND p.amount_refunded = plan.old_amount_refunded AND p.disputed = plan.old_disputed
        AND p.dispute_status IS NOT DISTINCT FROM plan.old_dispute_status
     RETURNING p.charge_id`,
    [JSON.stringify(plan), now],
  );
  const updated = new Set(rows.map((r) => r.charge_id));
  for (const finding of findings) {
    const { effect, charge } = finding.repair;
    if (!updated.has(charge.id)) continue;
    done.set(finding, {
      finding,
      action: 'update_effect_from_stripe',
      before: {
        status: effect.status,
        amount_refunded: effect.amountRefunded,
        disputed: effect.disputed,
        dispute_status: effect.disputeStatus ?? null,
      },
      after: {
        status: charge.status,
        amount_refunded: charge.amountRefunded,
        disputed: charge.disputed,
        dispute_status: charge.disputeStatus ?? effect.disputeStatus ?? null,
      },
    });
  }
}
