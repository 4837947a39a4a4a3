import type { Queryable } from '../db/pool.js';
import { claimSubject } from '../domain/identity.js';
import { closeHealedFindings, recordFindings } from './findings-store.js';
import type { Finding } from './judge/index.js';

/**
 * From symptom to cause (docs/judgement.md "Unstable keys"): a tenant whose orders were
 * paid twice (duplicate_effect findings first seen within the lookback, not closed as not a
 * duplicate) while the claim library, taking its claims (`created` counted), saw none of its
 * keys again (no `replayed` outcome in claim_outcomes over the same days) almost certainly
 * mints a key per attempt. One open
 * `unstable_keys` finding per such tenant and account, closed by the sweeper when either
 * no longer holds.
 */

const TENANTS = `
WITH dup AS (
  SELECT f.tenant_id, count(*)::int AS duplicates, min(f.first_seen_at) AS since
    FROM recon_findings f
   WHERE f.account = $1 AND f.category = 'duplicate_effect' AND f.first_seen_at >= $2 AND f.tenant_id IS NOT NULL
     AND f.details->>'verdict' IS DISTINCT FROM 'not_duplicate'
   GROUP BY f.tenant_id)
SELECT dup.tenant_id, dup.duplicates, dup.since,
       coalesce(sum(o.count) FILTER (WHERE o.outcome = 'replayed'), 0)::int AS replayed,
       coalesce(sum(o.count) FILTER (WHERE o.outcome = 'created'), 0)::int AS created
  FROM dup LEFT JOIN claim_outcomes o ON o.tenant_id = dup.tenant_id AND o.day >= $2::date
 GROUP BY dup.tenant_id, dup.duplicates, dup.since`;

const OPEN = `SELECT subject FROM recon_findings WHERE account = $1 AND category = 'unstable_keys' AND state = 'open'`;

export async function judgeUnstableKeys(
  db: Queryable,
  args: { account: string; runId: string; now: Date; lookbackMs: number },
): Promise<{ recorded: Array<{ firstThisRun: boolean }> }> {
  const since = new Date(args.now.getTime() - args.lookbackMs);
  const { rows } = await db.query<{
    tenant_id: string;
    duplicates: number;
    since: Date;
    replayed: number;
    created: number;
  }>(TENANTS, [args.account, since]);
  const findings: Finding[] = rows
    // Without counts (claims taken by other code), nothing says how its keys behave.
    .filter((r) => r.replayed === 0 && r.created > 0)
    .map((r) => ({
      category: 'unstable_keys',
      subject: claimSubject(r.tenant_id, '*'),
      chargeId: null,
      tenantId: r.tenant_id,
      idempotencyKey: null,
      repair: null,
      reason:
        `${r.duplicates} order(s) of tenant ${r.tenant_id} paid more than once since ${since.toISOString().slice(0, 10)}, ` +
        `and none of its ${r.created} claim(s) was ever retried with the same key: its caller likely mints a key per attempt`,
      details: { duplicate_effects: r.duplicates, replayed: r.replayed, created: r.created, since: r.since },
      covers: { claims: [], charges: [], effects: [] },
    }));
  const recorded = await recordFindings(db, { ...args, findings, repairs: new Map() });
  const open = (await db.query<{ subject: string }>(OPEN, [args.account])).rows.map((r) => r.subject);
  await closeHealedFindings(db, { ...args, judgedSubjects: open, findings });
  return { recorded };
}
