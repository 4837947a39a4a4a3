import { randomBytes } from 'node:crypto';
import { inTransaction, type Pool, type Queryable } from '../db/pool.js';
import { InvalidPlanError, planDigest, type PlanBody, type PlanFile, type PlanStep } from './format.js';

/**
 * Plans in the database (migrations/003_reconciliation.sql): the plan as written, with its
 * digest; each step's state; and the audit of plans made, approved and applied.
 *
 * Why a digest kept with the row, and no signature: the database holds the plan itself,
 * and `apply` applies what the database holds, once the file's digest matches the row's.
 * A file from another database names a plan this one does not have; an altered file no
 * longer matches. A signature (an HMAC with a secret kept in the database) would add
 * nothing: whoever could change the row to match a forged file could read that secret too.
 */

export type StepState = 'planned' | 'applied' | 'refused';

export interface StoredStep {
  step: number;
  state: StepState;
  reason: string | null;
  findingId: number | null;
  decidedAt: Date | null;
  decidedBy: string | null;
}

export interface StoredPlan {
  id: string;
  author: string;
  createdAt: Date;
  digest: string;
  body: PlanBody;
  approvedBy: string | null;
  approvedAt: Date | null;
  steps: Map<number, StoredStep>;
}

/** What a plan id looks like (newPlanId): checked before a database is asked about one. */
export const PLAN_ID_PATTERN = /^plan_[0-9A-Za-z_]{1,80}$/;

export function newPlanId(now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `plan_${stamp}_${randomBytes(4).toString('hex')}`;
}

/** The plan, its steps (all `planned`) and its audit row, in one transaction. */
export async function savePlan(pool: Pool, body: PlanBody): Promise<string> {
  const digest = planDigest(body);
  await inTransaction(pool, async (tx) => {
    await tx.query(
      `INSERT INTO recon_plans (id, author, created_at, mode, accounts, digest, body, steps, money_steps)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        body.id,
        body.author,
        body.created_at,
        body.mode,
        body.accounts,
        digest,
        JSON.stringify(body),
        body.steps.length,
        body.steps.filter((s) => s.moves_money).length,
      ],
    );
    await tx.query(
      `INSERT INTO recon_plan_steps (plan_id, step, account, category, subject, kind, moves_money, state)
       SELECT $1, s.step, s.account, s.category, s.subject, s.kind, s.moves_money, 'planned'
         FROM jsonb_to_recordset($2::jsonb) AS s(step int, account text, category text, subject text, kind text,
              moves_money boolean)`,
      [body.id, JSON.stringify(body.steps.map(stepRow))],
    );
    await recordPlanEvent(tx, {
      planId: body.id,
      action: 'planned',
      actor: body.author,
      at: new Date(body.created_at),
      details: { steps: body.steps.length, money_steps: body.steps.filter((s) => s.moves_money).length, digest },
    });
  });
  return digest;
}

function stepRow(s: PlanStep) {
  return {
    step: s.step,
    account: s.account,
    category: s.category,
    subject: s.subject,
    kind: s.kind,
    moves_money: s.moves_money,
  };
}

export async function recordPlanEvent(
  db: Queryable,
  e: { planId: string; action: 'planned' | 'approved' | 'applied'; actor: string; at: Date; details: unknown },
): Promise<void> {
  await db.query(`INSERT INTO recon_plan_events (plan_id, action, actor, at, details) VALUES ($1, $2, $3, $4, $5)`, [
    e.planId,
    e.action,
    e.actor,
    e.at,
    JSON.stringify(e.details),
  ]);
}

interface PlanRow {
  id: string;
  author: string;
  created_at: Date;
  digest: string;
  body: PlanBody;
  approved_by: string | null;
  approved_at: Date | null;
}

/**
 * The plan with this id, as this database holds it; null when it holds none. `lock`: the
 * row is held until the transaction ends (one apply of a plan at a time).
 */
export async function loadPlan(
  db: Queryable,
  id: string,
  options: { lock?: boolean } = {},
): Promise<StoredPlan | null> {
  const { rows } = await db.query<PlanRow>(
    `SELECT id, author, created_at, digest, body, approved_by, approved_at FROM recon_plans WHERE id = $1
     ${options.lock ? 'FOR UPDATE' : ''}`,
    [id],
  );
  const row = rows[0];
  if (!row) return null;
  // The row is the plan as written: one changed in place since no longer matches its digest.
  if (planDigest(row.body) !== row.digest)
    throw new InvalidPlanError(`plan ${id} in this database no longer matches its digest: it was altered there`);
  const { rows: steps } = await db.query<{
    step: number;
    state: StepState;
    reason: string | null;
    finding_id: string | null;
    decided_at: Date | null;
    decided_by: string | null;
  }>(
    `SELECT step, state, reason, finding_id, decided_at, decided_by FROM recon_plan_steps WHERE plan_id = $1 ORDER BY step`,
    [id],
  );
  return {
    id: row.id,
    author: row.author,
    createdAt: row.created_at,
    digest: row.digest,
    body: row.body,
    approvedBy: row.approved_by,
    approvedAt: row.approved_at,
    steps: new Map(
      steps.map((s) => [
        s.step,
        {
          step: s.step,
          state: s.state,
          reason: s.reason,
          findingId: s.finding_id === null ? null : Number(s.finding_id),
          decidedAt: s.decided_at,
          decidedBy: s.decided_by,
        },
      ]),
    ),
  };
}

/** A plan file checked against this database: it must name a plan made here, with the same digest. */
export async function planOfFile(db: Queryable, file: PlanFile, name: string): Promise<StoredPlan> {
  const plan = await loadPlan(db, file.plan.id);
  if (!plan) {
    throw new InvalidPlanError(
      `${name} is plan ${file.plan.id}, which this database did not make (another database's plan, or one deleted): nothing was applied`,
    );
  }
  if (plan.digest !== file.digest) {
    throw new InvalidPlanError(
      `${name} is not plan ${file.plan.id} as this database made it (the digests differ: the file was altered): nothing was applied`,
    );
  }
  return plan;
}

/** A plan by its id, for `approve` and the review page. */
export async function requirePlan(db: Queryable, id: string): Promise<StoredPlan> {
  const plan = await loadPlan(db, id);
  if (!plan)
    throw new InvalidPlanError(`there is no plan ${id} in this database (sweeper plans are listed on the review page)`);
  return plan;
}

export interface StepDecision {
  step: number;
  state: Exclude<StepState, 'planned'>;
  reason: string | null;
  findingId: number | null;
}

/** The steps an apply decided, in one statement. */
export async function decideSteps(
  db: Queryable,
  planId: string,
  decisions: readonly StepDecision[],
  by: string,
  at: Date,
): Promise<void> {
  if (decisions.length === 0) return;
  await db.query(
    `UPDATE recon_plan_steps s
        SET state = d.state, reason = d.reason, finding_id = coalesce(d.finding_id, s.finding_id),
            decided_at = $3, decided_by = $4
       FROM jsonb_to_recordset($2::jsonb) AS d(step int, state text, reason text, finding_id bigint)
      WHERE s.plan_id = $1 AND s.step = d.step`,
    [
      planId,
      JSON.stringify(
        decisions.map((d) => ({ step: d.step, state: d.state, reason: d.reason, finding_id: d.findingId })),
      ),
      at,
      by,
    ],
  );
}

export interface PlanSummary {
  id: string;
  author: string;
  createdAt: Date;
  mode: string;
  accounts: string[];
  steps: number;
  moneySteps: number;
  approvedBy: string | null;
  applied: number;
  refused: number;
  lastAppliedAt: Date | null;
}

/** The newest plans first, `limit` of them, before `before` (an id) when given: the review page's list. */
export async function listPlans(
  db: Queryable,
  options: { limit: number; before?: { at: Date; id: string } | null },
): Promise<PlanSummary[]> {
  const { rows } = await db.query<{
    id: string;
    author: string;
    created_at: Date;
    mode: string;
    accounts: string[];
    steps: number;
    money_steps: number;
    approved_by: string | null;
    applied: number;
    refused: number;
    last_applied_at: Date | null;
  }>(
    `SELECT p.id, p.author, p.created_at, p.mode, p.accounts, p.steps, p.money_steps, p.approved_by,
            s.applied, s.refused, s.last_applied_at
       FROM recon_plans p
       CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE state = 'applied')::int AS applied,
                                  count(*) FILTER (WHERE state = 'refused')::int AS refused,
                                  max(decided_at) AS last_applied_at
                             FROM recon_plan_steps x WHERE x.plan_id = p.id) s
      WHERE ($2::timestamptz IS NULL OR (p.created_at, p.id) < ($2, $3))
      ORDER BY p.created_at DESC, p.id DESC
      LIMIT $1`,
    [options.limit, options.before?.at ?? null, options.before?.id ?? ''],
  );
  return rows.map((r) => ({
    id: r.id,
    author: r.author,
    createdAt: r.created_at,
    mode: r.mode,
    accounts: r.accounts,
    steps: r.steps,
    moneySteps: r.money_steps,
    approvedBy: r.approved_by,
    applied: r.applied,
    refused: r.refused,
    lastAppliedAt: r.last_applied_at,
  }));
}

export interface PlanEvent {
  action: string;
  actor: string;
  at: Date;
  details: Record<string, unknown>;
}

export async function planEvents(db: Queryable, planId: string): Promise<PlanEvent[]> {
  const { rows } = await db.query<PlanEvent>(
    `SELECT action, actor, at, details FROM recon_plan_events WHERE plan_id = $1 ORDER BY at, id`,
    [planId],
  );
  return rows;
}
