import type { Queryable } from '../db/pool.js';
import { refundResponse } from '../claims/claim-store.js';
import { accountIdOf } from '../domain/identity.js';
import type { Finding, RepairPlan } from './judge/index.js';
import { COMPLETE_CLAIMS_SQL, type RepairOutcome } from './repairs.js';

/**
 * The refund judgement's repairs, one set-based statement per kind, inside the step's
 * transaction. As for charges, every claim write is a compare-and-swap on the version
 * judged (a live writer that moved it wins), rows are inserted `ON CONFLICT (refund_id) DO
 * NOTHING`, and a row's state changes only from the state that was read.
 */

type Of<K extends RepairPlan['kind']> = Extract<RepairPlan, { kind: K }>;

export async function executeRefundRepairs(
  db: Queryable,
  account: string,
  findings: Finding[],
  now: Date,
): Promise<Map<Finding, RepairOutcome>> {
  const done = new Map<Finding, RepairOutcome>();
  const byKind = <K extends RepairPlan['kind']>(kind: K) =>
    findings.filter((f): f is Finding & { repair: Of<K> } => f.repair?.kind === kind);
  await recordRefunds(db, account, byKind('record_refund'), now, done);
  await updateRefunds(db, byKind('update_refund'), now, done);
  return done;
}

/**
 * The claim is completed first (or, already storing the refund, held as read), and the row
 * inserted only for a claim that still is what was judged: a live writer that moved it
 * records the refund itself.
 */
async function recordRefunds(
  db: Queryable,
  account: string,
  findings: Array<Finding & { repair: Of<'record_refund'> }>,
  now: Date,
  done: Map<Finding, RepairOutcome>,
): Promise<void> {
  if (findings.length === 0) return;
  const plan = findings.map(({ tenantId, idempotencyKey, repair: { refund, claim } }) => {
    const response = refundResponse(refund);
    return {
      tenant_id: tenantId,
      key: idempotencyKey,
      keep_answer: claim === null,
      attempt: claim?.attempt ?? null,
      status: claim?.status ?? null,
      response_status: response.status,
      response_body: response.body,
      response_outcome: response.outcome,
      refund_id: refund.id,
      charge_id: refund.chargeId,
      amount: refund.amount,
      currency: refund.currency,
      refund_status: refund.status,
      created_at: refund.created.toISOString(),
    };
  });
  const { rows } = await db.query<{ refund_id: string; inserted: boolean }>(
    `WITH plan AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(tenant_id text, key text, keep_answer boolean, attempt int, status text,
              response_status int, response_body jsonb, response_outcome text, refund_id text, charge_id text,
              amount bigint, currency text, refund_status text, created_at timestamptz)
     ), completed AS (${COMPLETE_CLAIMS_SQL}
       RETURNING k.tenant_id, k.key
     ), kept AS (
       SELECT k.tenant_id, k.key FROM idempotency_keys k JOIN plan ON k.tenant_id = plan.tenant_id AND k.key = plan.key
        WHERE plan.keep_answer AND k.status = 'completed' FOR SHARE OF k
     ), rows AS (
       INSERT INTO payment_refunds (refund_id, charge_id, tenant_id, idempotency_key, account_id, amount, currency,
                                    status, created_at, updated_at)
       SELECT plan.refund_id, plan.charge_id, plan.tenant_id, plan.key, $3, plan.amount, plan.currency,
              plan.refund_status, plan.created_at, $2
         FROM plan JOIN (SELECT * FROM completed UNION ALL SELECT * FROM kept) c USING (tenant_id, key)
       ON CONFLICT (refund_id) DO NOTHING
       RETURNING refund_id
     )
     SELECT plan.refund_id, (r.refund_id IS NOT NULL) AS inserted
       FROM plan JOIN (SELECT * FROM completed UNION ALL SELECT * FROM kept) c USING (tenant_id, key)
       LEFT JOIN rows r USING (refund_id)`,
    [JSON.stringify(plan), now, accountIdOf(account)],
  );
  const recorded = new Map(rows.map((r) => [r.refund_id, r.inserted]));
  for (const finding of findings) {
    const { refund, claim } = finding.repair;
    if (!recorded.has(refund.id)) continue; // a live writer moved the claim: it wins
    done.set(finding, {
      finding,
      action: 'record_refund',
      before: { claim: claim ? { status: claim.status, attempt: claim.attempt } : 'completed', row: null },
      after: {
        claim: { status: 'completed', answer: claim ? 'the refund' : 'kept' },
        row: recorded.get(refund.id) ? { refund_id: refund.id, status: refund.status } : 'present',
      },
    });
  }
}

async function updateRefunds(
  db: Queryable,
  findings: Array<Finding & { repair: Of<'update_refund'> }>,
  now: Date,
  done: Map<Finding, RepairOutcome>,
): Promise<void> {
  if (findings.length === 0) return;
  const plan = findings.map(({ repair: r }) => ({ refund_id: r.refundId, from: r.from, to: r.to }));
  const { rows } = await db.query<{ refund_id: string }>(
    `UPDATE payment_refunds p SET status = plan.to, updated_at = $2
       FROM jsonb_to_recordset($1::jsonb) AS plan(refund_id text, "from" text, "to" text)
      WHERE p.refund_id = plan.refund_id AND p.status = plan.from
     RETURNING p.refund_id`,
    [JSON.stringify(plan), now],
  );
  const updated = new Set(rows.map((r) => r.refund_id));
  for (const finding of findings) {
    const { refundId, from, to } = finding.repair;
    if (!updated.has(refundId)) continue;
    done.set(finding, { finding, action: 'update_refund', before: { status: from }, after: { status: to } });
  }
}
