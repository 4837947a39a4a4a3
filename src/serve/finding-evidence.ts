import type { Queryable } from '../db/pool.js';

/**
 * Everything one finding's page shows, read from where it lives now: the finding and its
 * details (what the sweep saw when it judged), the claim of its key, the payment rows,
 * the charges in the mirror (and as the details summarise them), the sweep's refunds,
 * and the audit trail. A handful of statements, each by key or index.
 */
export interface FindingRecord {
  id: number;
  category: string;
  account: string;
  subject: string;
  charge_id: string | null;
  tenant_id: string | null;
  idempotency_key: string | null;
  reference: string | null;
  state: string;
  details: Record<string, unknown>;
  first_seen_run: string;
  last_seen_run: string;
  first_seen_at: Date;
  last_seen_at: Date;
  closed_at: Date | null;
  closed_by: string | null;
  note: string | null;
}

export type Row = Record<string, unknown>;

/** A charge the finding names: its mirror row (null when the mirror no longer has it) and its summary in the details. */
export interface ChargeEvidence {
  id: string;
  /** How the finding names it: its own charge, a duplicate's kept or extra one, a decline, a member of the set. */
  role: 'charge' | 'kept' | 'extra' | 'declined' | 'member' | 'payment row';
  mirror: Row | null;
  summary: Row | null;
}

export interface AuditRow {
  id: number;
  action: string;
  actor: string;
  at: Date;
  run_id: string | null;
  before: unknown;
  after: unknown;
}

export interface FindingEvidence {
  finding: FindingRecord;
  claim: Row | null;
  payments: Row[];
  charges: ChargeEvidence[];
  refunds: Row[];
  audit: AuditRow[];
}

const isRow = (value: unknown): value is Row => typeof value === 'object' && value !== null && !Array.isArray(value);
const rows = (value: unknown): Row[] => (Array.isArray(value) ? value.filter(isRow) : []);
const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

/** The charges a finding names, each once, in the order its page shows them, with their summaries. */
export function namedCharges(
  finding: FindingRecord,
  members: readonly string[],
): Map<string, Omit<ChargeEvidence, 'mirror'>> {
  const d = finding.details;
  const named = new Map<string, Omit<ChargeEvidence, 'mirror'>>();
  const add = (id: string | null, role: ChargeEvidence['role'], summary: Row | null) => {
    if (id === null) return;
    const known = named.get(id);
    if (known) known.summary ??= summary;
    else named.set(id, { id, role, summary });
  };
  const kept = text(d.kept);
  const extras = Array.isArray(d.extras) ? d.extras.map(text) : [];
  const summaries = rows(d.charges);
  const summaryOf = (id: string | null) => summaries.find((s) => s.id === id) ?? null;
  if (isRow(d.charge)) add(text(d.charge.id), 'charge', d.charge);
  add(kept, 'kept', summaryOf(kept));
  for (const id of extras) add(id, 'extra', summaryOf(id));
  for (const s of summaries) add(text(s.id), 'member', s);
  for (const s of rows(d.declined)) add(text(s.id), 'declined', s);
  for (const id of members) add(id, 'member', null);
  add(finding.charge_id, 'charge', null);
  if (isRow(d.effect)) add(text(d.effect.charge_id), 'payment row', null);
  return named;
}

export async function readFindingEvidence(db: Queryable, id: number): Promise<FindingEvidence | null> {
  const found = await db.query<FindingRecord>(
    `SELECT id, category, account, subject, charge_id, tenant_id, idempotency_key, reference, state, details,
            first_seen_run, last_seen_run, first_seen_at, last_seen_at, closed_at, closed_by, note
       FROM recon_findings WHERE id = $1`,
    [id],
  );
  const finding = found.rows[0];
  if (!finding) return null;
  finding.id = Number(finding.id);
  const members = await db.query<{ charge_id: string }>(
    'SELECT charge_id FROM recon_finding_charges WHERE finding_id = $1 ORDER BY charge_id',
    [id],
  );
  const named = namedCharges(
    finding,
    members.rows.map((m) => m.charge_id),
  );
  const ids = [...named.keys()];
  const [claim, payments, mirror, refunds, audit] = await Promise.all([
    readClaim(db, finding),
    db.query<Row>(
      `SELECT id, charge_id, tenant_id, idempotency_key, payment_intent_id, account, amount, currency, status,
              amount_refunded, disputed, reference, created_at, updated_at
         FROM payments
        WHERE charge_id = ANY($1::text[]) OR (tenant_id = $2 AND idempotency_key = $3)
        ORDER BY created_at, id`,
      [ids, finding.tenant_id, finding.idempotency_key],
    ),
    db.query<Row>(
      `SELECT charge_id, account, created, amount, amount_captured, amount_refunded, currency, status, captured,
              refunded, disputed, payment_intent_id, tenant_id, idempotency_key, reference, livemode, customer,
              payment_method, card_fingerprint, fetched_at
         FROM stripe_charges WHERE charge_id = ANY($1::text[]) ORDER BY created, charge_id`,
      [ids],
    ),
    db.query<Row>(
      `SELECT charge_id, kept_charge_id, amount, currency, state, stripe_refund_id, idempotency_key, reason, run_id,
              created_at, updated_at
         FROM recon_refunds WHERE finding_id = $1 OR charge_id = ANY($2::text[]) ORDER BY created_at, charge_id`,
      [id, ids],
    ),
    db.query<AuditRow>(
      'SELECT id, action, actor, at, run_id, before, after FROM recon_repairs WHERE finding_id = $1 ORDER BY at, id',
      [id],
    ),
  ]);
  const byId = new Map(mirror.rows.map((r) => [String(r.charge_id), r]));
  return {
    finding,
    claim,
    payments: payments.rows,
    charges: [...named.values()].map((c) => ({ ...c, mirror: byId.get(c.id) ?? null })),
    refunds: refunds.rows,
    audit: audit.rows.map((r) => ({ ...r, id: Number(r.id) })),
  };
}

/** The claim of the finding's key, found through the directory (one probe, then its day's partition). */
async function readClaim(db: Queryable, finding: FindingRecord): Promise<Row | null> {
  if (finding.tenant_id === null || finding.idempotency_key === null) return null;
  const { rows: found } = await db.query<Row>(
    `SELECT k.tenant_id, k.key, k.status, k.attempt, k.account, k.amount, k.currency, k.reference, k.created_at,
            k.updated_at, k.completed_at, k.locked_until, k.response_status, k.response_outcome, k.response_body
       FROM idempotency_key_directory d
       JOIN idempotency_keys k ON k.tenant_id = d.tenant_id AND k.key = d.key AND k.created_at = d.created_at
      WHERE d.tenant_id = $1 AND d.key = $2`,
    [finding.tenant_id, finding.idempotency_key],
  );
  return found[0] ?? null;
}
