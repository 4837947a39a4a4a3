import type { Queryable } from '../db/pool.js';
import type { ChangePointer } from './provider.js';

/**
 * Disputes (docs/judgement.md "Disputes"). A charge says only that it is disputed; where
 * the dispute stands (needs_response, under_review, won, lost, …) is on the dispute, which
 * the account's dispute events carry. Those events are read anyway (Events read, no other
 * permission), so their dispute object is the evidence: the newest event's status wins,
 * and the payment row follows it through status_drift.
 */

/** How far along its life a dispute is: the later of two statuses from events of one second. */
const STAGE: Readonly<Record<string, number>> = {
  warning_needs_response: 1,
  needs_response: 1,
  warning_under_review: 2,
  under_review: 2,
  warning_closed: 3,
  won: 3,
  lost: 3,
  prevented: 3,
};

export function disputeStage(status: string): number {
  return STAGE[status] ?? 0;
}

interface Snapshot {
  disputeId: string;
  chargeId: string;
  status: string;
  asOf: number;
  stage: number;
  eventId: string;
}

/** The newest snapshot of each dispute the pointers carry. */
export function newestDisputes(pointers: readonly ChangePointer[]): Snapshot[] {
  const newest = new Map<string, Snapshot>();
  for (const p of pointers) {
    if (!p.dispute || !p.chargeId) continue;
    const s: Snapshot = {
      disputeId: p.dispute.id,
      chargeId: p.chargeId,
      status: p.dispute.status,
      asOf: p.created,
      stage: disputeStage(p.dispute.status),
      eventId: p.id,
    };
    const held = newest.get(s.disputeId);
    if (!held || compareSnapshots(s, held) > 0) newest.set(s.disputeId, s);
  }
  return [...newest.values()];
}

function compareSnapshots(a: Snapshot, b: Snapshot): number {
  return a.asOf - b.asOf || a.stage - b.stage || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);
}

// Set-based; a snapshot replaces the stored one only when its event is newer (time, stage, id).
const RECORD_SQL = `
INSERT INTO stripe_disputes (account, dispute_id, charge_id, status, as_of, stage, event_id)
SELECT $1, d.dispute_id, d.charge_id, d.status, to_timestamp(d.as_of), d.stage, d.event_id
  FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::smallint[], $7::text[])
       AS d(dispute_id, charge_id, status, as_of, stage, event_id)
ON CONFLICT (dispute_id) DO UPDATE
   SET charge_id = EXCLUDED.charge_id, status = EXCLUDED.status, as_of = EXCLUDED.as_of,
       stage = EXCLUDED.stage, event_id = EXCLUDED.event_id
 WHERE (EXCLUDED.as_of, EXCLUDED.stage, EXCLUDED.event_id)
     > (stripe_disputes.as_of, stripe_disputes.stage, stripe_disputes.event_id)`;

/** Records the disputes a day of events told of; returns how many it read. */
export async function recordDisputes(
  db: Queryable,
  account: string,
  pointers: readonly ChangePointer[],
): Promise<number> {
  const snapshots = newestDisputes(pointers);
  if (snapshots.length === 0) return 0;
  await db.query(RECORD_SQL, [
    account,
    snapshots.map((s) => s.disputeId),
    snapshots.map((s) => s.chargeId),
    snapshots.map((s) => s.status),
    snapshots.map((s) => s.asOf),
    snapshots.map((s) => s.stage),
    snapshots.map((s) => s.eventId),
  ]);
  return snapshots.length;
}
