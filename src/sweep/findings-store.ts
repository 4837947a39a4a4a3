import type { Queryable } from '../db/pool.js';
import { findingKey } from '../domain/identity.js';
import type { Finding } from './judge/index.js';
import { CATEGORIES, type Category } from './categories.js';
import type { RepairOutcome } from './repairs.js';

/**
 * Records a slice's findings: one row per (category, account, subject), created the
 * first time and updated by every later run that sees it again. A person's verdict
 * (`resolved`, `ignored`) is kept; the audit rows of the slice's repairs are
 * appended in the same statement's transaction.
 */
/** A recorded finding: its row id, and whether this run had not seen it before (it is counted once per run). */
export interface RecordedFinding {
  id: number;
  category: string;
  subject: string;
  firstThisRun: boolean;
}

export async function recordFindings(
  db: Queryable,
  args: {
    account: string;
    runId: string;
    now: Date;
    findings: Finding[];
    repairs: Map<Finding, RepairOutcome>;
    /** Who repaired (the audit's actor, and who closed a repaired finding): the sweep, or the person applying a plan. */
    actor?: string;
  },
): Promise<RecordedFinding[]> {
  if (args.findings.length === 0) return [];
  const rows = args.findings.map((f) => ({
    category: f.category,
    subject: f.subject,
    charge_id: f.chargeId,
    tenant_id: f.tenantId,
    idempotency_key: f.idempotencyKey,
    reference: f.reference ?? null,
    members: f.members ?? null,
    state: args.repairs.has(f) && !f.keepOpen ? 'repaired' : 'open',
    details: { ...f.details, ...(f.reason ? { reason: f.reason } : {}) },
    repair: args.repairs.get(f) ?? null,
  }));
  const { rows: recorded } = await db.query<RecordedFinding>(
    `WITH input AS (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(category text, subject text, charge_id text, tenant_id text,
              idempotency_key text, reference text, members text[], state text, details jsonb, repair jsonb)
     ), prior AS (
       -- Read before the upsert (one snapshot): was it already seen by this run?
       SELECT f.category, f.subject, f.last_seen_run FROM recon_findings f JOIN input USING (category, subject)
        WHERE f.account = $2
     ), upserted AS (
       INSERT INTO recon_findings AS f (category, account, subject, charge_id, tenant_id, idempotency_key, reference,
                                        state, details, first_seen_run, last_seen_run, first_seen_at, last_seen_at,
                                        closed_at, closed_by)
       SELECT category, $2, subject, charge_id, tenant_id, idempotency_key, reference, state, details, $3, $3, $4, $4,
              CASE WHEN state = 'repaired' THEN $4::timestamptz END, CASE WHEN state = 'repaired' THEN $5 END
         FROM input
       ON CONFLICT (category, account, subject) DO UPDATE
          SET last_seen_run = EXCLUDED.last_seen_run, last_seen_at = EXCLUDED.last_seen_at, details = EXCLUDED.details,
              charge_id = EXCLUDED.charge_id,
              -- A person's verdict sticks; the sweeper's own "healed" closure does not.
              state = CASE WHEN f.state IN ('resolved', 'ignored') AND f.closed_by <> 'sweeper' THEN f.state ELSE EXCLUDED.state END,
              closed_at = CASE WHEN f.state IN ('resolved', 'ignored') AND f.closed_by <> 'sweeper' THEN f.closed_at ELSE EXCLUDED.closed_at END,
              closed_by = CASE WHEN f.state IN ('resolved', 'ignored') AND f.closed_by <> 'sweeper' THEN f.closed_by ELSE EXCLUDED.closed_by END
       RETURNING f.id, f.category, f.subject
     ), members AS (
       -- The charges a duplicate finding names: how a person's verdict on the set is found again.
       INSERT INTO recon_finding_charges (finding_id, account, charge_id)
       SELECT u.id, $2, m.charge_id FROM input JOIN upserted u USING (category, subject)
        CROSS JOIN LATERAL unnest(input.members) AS m(charge_id)
       ON CONFLICT DO NOTHING
     ), audit AS (
       INSERT INTO recon_repairs (finding_id, run_id, action, before, after, actor, at)
       SELECT u.id, $3, input.repair->>'action', input.repair->'before', input.repair->'after', $5, $4
         FROM input JOIN upserted u USING (category, subject)
        WHERE input.repair IS NOT NULL
     )
     SELECT u.id, u.category, u.subject, (p.last_seen_run IS DISTINCT FROM $3) AS "firstThisRun"
       FROM upserted u LEFT JOIN prior p USING (category, subject)`,
    [
      JSON.stringify(
        rows.map(({ repair, ...r }) => ({
          ...r,
          repair: repair && { action: repair.action, before: repair.before, after: repair.after },
        })),
      ),
      args.account,
      args.runId,
      args.now,
      args.actor ?? 'sweeper',
    ],
  );
  return recorded;
}

/**
 * The payouts step's categories (payout-step.ts): their subjects are a payout, a balance
 * transaction, and a charge (unpaid_effect), which a charge's batch judges too, by other
 * rules. Only the payouts step judges them, so only it closes them.
 */
const PAYOUT_CATEGORIES: readonly Category[] = ['payout_mismatch', 'unrecorded_balance_transaction', 'unpaid_effect'];

/**
 * Open findings about subjects this slice looked at that it no longer finds have
 * healed (a late writer completed its claim, Stripe settled a charge): they are
 * closed as resolved by the sweeper, so alerts clear without a person. Only findings
 * of the categories the caller judges: a step never closes another step's finding about
 * the same subject (a charge's unpaid_effect is not healed by its charge matching).
 */
export async function closeHealedFindings(
  db: Queryable,
  args: {
    account: string;
    runId: string;
    now: Date;
    judgedSubjects: string[];
    findings: Finding[];
    /** Charges read from Stripe for this batch: an unreadable charge's finding heals only once one reads well. */
    freshlyRead?: readonly string[];
    /** Categories whose findings only a person closes, found again or not. */
    keepCategories?: readonly string[];
    /** The categories this step judges (the payouts step's); default: every category but the payouts step's. */
    categories?: readonly Category[];
  },
): Promise<number> {
  if (args.judgedSubjects.length === 0) return 0;
  const keep = args.categories ? CATEGORIES.filter((c) => !args.categories?.includes(c)) : PAYOUT_CATEGORIES;
  // findingKey() is the string the statement builds as category || chr(31) || subject.
  const stillFound = args.findings.map((f) => findingKey(f.category, f.subject));
  // The open findings are found from the subjects (a probe each in recon_findings_open_subject,
  // by its expression: the one index a planner without statistics cannot mistake for it),
  // never by reading every open finding of the account: their number grows
  // with the history, the subjects of a batch do not. `f.state` is stated again on the row
  // updated: a finding a person closed meanwhile is rechecked there and stays as they left it
  // (account, category and subject never change), as `IS NOT DISTINCT FROM` (state is never
  // null): `=` would let that planner fetch the rows through an index of open findings, all
  // of them, instead of by id. `= ANY(ARRAY(…))` makes the probes one initplan: as `IN (…)`,
  // a planner with an empty table's statistics re-ran them per open finding.
  const result = await db.query(
    `UPDATE recon_findings f
        SET state = 'resolved', closed_at = $4, closed_by = 'sweeper', last_seen_run = $5,
            note = 'no longer found by run ' || $5
      WHERE f.id = ANY(ARRAY(SELECT o.id FROM unnest($2::text[]) AS j(subject)
                              CROSS JOIN LATERAL (SELECT x.id FROM recon_findings x
                                                   WHERE x.account || chr(31) || x.subject = $1 || chr(31) || j.subject
                                                     AND x.state = 'open'
                                                  OFFSET 0) o))
        AND f.state IS NOT DISTINCT FROM 'open'
        AND NOT (f.category || chr(31) || f.subject = ANY($3::text[]))
        -- Judged from the mirror's older read, a charge Stripe returned unreadable has not healed.
        AND NOT (f.details ? 'malformed' AND NOT f.subject = ANY($6::text[]))
        AND NOT f.category = ANY($7::text[])`,
    [
      args.account,
      [...new Set(args.judgedSubjects)],
      stillFound,
      args.now,
      args.runId,
      args.freshlyRead ?? [],
      [...(args.keepCategories ?? []), ...keep],
    ],
  );
  return result.rowCount ?? 0;
}

/**
 * The outcome's duplicates that no longer hold: open duplicate_effect findings of the
 * references judged, and open suspected_duplicate findings holding a charge judged, that
 * this batch did not find again (the extras were refunded, or a new charge joined the set and
 * its finding names them all) are closed as resolved by the sweeper.
 */
export async function closeHealedDuplicates(
  db: Queryable,
  args: {
    account: string;
    runId: string;
    now: Date;
    judged: { references: Array<{ tenantId: string; reference: string }>; suspectCharges: string[] };
    findings: Finding[];
  },
): Promise<number> {
  const { references, suspectCharges } = args.judged;
  if (references.length === 0 && suspectCharges.length === 0) return 0;
  const stillFound = args.findings.map((f) => findingKey(f.category, f.subject));
  const result = await db.query(
    `UPDATE recon_findings f
        SET state = 'resolved', closed_at = $5, closed_by = 'sweeper', last_seen_run = $6,
            note = 'no longer found by run ' || $6
      WHERE f.id IN (SELECT x.id FROM recon_findings x
                       JOIN unnest($2::text[], $3::text[]) AS g(tenant_id, reference)
                         ON x.reference = g.reference AND coalesce(x.tenant_id, '') = g.tenant_id
                      WHERE x.account = $1 AND x.category = 'duplicate_effect' AND x.state = 'open'
                     UNION
                     SELECT x.id FROM recon_finding_charges fc JOIN recon_findings x ON x.id = fc.finding_id
                      WHERE fc.account = $1 AND fc.charge_id = ANY($4::text[])
                        AND x.category = 'suspected_duplicate' AND x.state = 'open')
        AND f.state = 'open'
        AND NOT (f.category || chr(31) || f.subject = ANY($7::text[]))`,
    [
      args.account,
      references.map((r) => r.tenantId),
      references.map((r) => r.reference),
      suspectCharges,
      args.now,
      args.runId,
      stillFound,
    ],
  );
  return result.rowCount ?? 0;
}
