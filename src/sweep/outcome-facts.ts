import type { Queryable } from '../db/pool.js';
import { named } from '../db/named.js';
import type { ChargeFact } from './facts.js';
import { CHARGE_COLUMNS, chargeFact } from './charge-rows.js';
import type { ReferenceGroup } from './judge/outcomes.js';
import { suspectSets } from './judge/outcomes.js';
import { isCovered, readCoverage } from './coverage.js';
import type { TimeWindow } from './window.js';

/**
 * The facts of the outcome (docs/judgement.md "Duplicate payments for one order"): for the
 * charges a batch judges, every retained charge of each business reference they name (one
 * probe per reference in stripe_charge_references, wherever in time its charges fall), the
 * charges without a reference by the same customers or cards around them, and the sets of
 * charges a person already closed as not duplicates.
 */

export interface OutcomeFacts {
  references: ReferenceGroup[];
  /**
   * The batch's live charges without a reference (by a customer or card), and every charge
   * of a suspected set that holds one of them, however far the set reaches.
   */
  suspects: ChargeFact[];
  /** The charges of every duplicate finding a person closed that names one of these charges. */
  verdicts: Array<Set<string>>;
}

/**
 * Which charges a batch judges: those created in a window (a slice's listing), or by id
 * (the charges events named). `listed`: the charges a slice listed created in its window,
 * when the mirror holds exactly those there (listed-facts.ts): read from the listing
 * instead of from the mirror.
 */
export type OutcomeSelection =
  { window: TimeWindow; listed?: readonly ChargeFact[] } | { chargeIds: readonly string[] };

const select = (s: OutcomeSelection) =>
  'window' in s
    ? { where: 'sc.created >= $2 AND sc.created < $3', args: [s.window.from, s.window.to] }
    : { where: 'sc.charge_id = ANY($2::text[])', args: [s.chargeIds] };

/** A window's references from the mirror ($2, $3: the window). */
const windowRefs = (
  where: string,
) => `SELECT DISTINCT coalesce(sc.tenant_id, '') AS tenant_id, sc.reference FROM stripe_charges sc
               WHERE sc.account = $1 AND ${where} AND sc.reference IS NOT NULL`;
/** A reference (alias refs) that more than one charge of the account names: one probe of its entries. */
const SEVERAL = `(SELECT count(*) FROM (SELECT 1 FROM stripe_charge_references cr
                    WHERE cr.account = $1 AND cr.tenant_id = refs.tenant_id
                      AND cr.reference = refs.reference LIMIT 2) two) > 1`;

/** Every retained charge of a reference (alias refs), by its entries; the metadata checked on the charge itself. */
const MEMBERS = `SELECT x.* FROM stripe_charge_references cr
  CROSS JOIN LATERAL (SELECT * FROM stripe_charges x WHERE x.charge_id = cr.charge_id AND x.created = cr.created
                         AND x.account = $1 AND x.reference = refs.reference
                         AND coalesce(x.tenant_id, '') = refs.tenant_id OFFSET 0) x
 WHERE cr.account = $1 AND cr.tenant_id = refs.tenant_id AND cr.reference = refs.reference`;

/**
 * The listing's references ($2, $3: tenants and references, each once) that more than one
 * charge names, with every retained charge of each: as windowReferencesSql, but a lone
 * reference returns no row at all (the caller knows which it sent). One probe per reference.
 */
const LISTED_REFERENCES = `
WITH refs AS (SELECT * FROM unnest($2::text[], $3::text[]) AS r(tenant_id, reference)),
several AS (SELECT refs.tenant_id, refs.reference FROM refs WHERE ${SEVERAL})
SELECT refs.tenant_id AS group_tenant, refs.reference AS group_reference, ${CHARGE_COLUMNS}
  FROM several refs
  CROSS JOIN LATERAL (${MEMBERS} OFFSET 0) sc`;

const referencesSql = (where: string) => `
WITH refs AS (SELECT DISTINCT coalesce(sc.tenant_id, '') AS tenant_id, sc.reference FROM stripe_charges sc
               WHERE sc.account = $1 AND ${where} AND sc.reference IS NOT NULL)
SELECT refs.tenant_id AS group_tenant, refs.reference AS group_reference, ${CHARGE_COLUMNS}
  FROM refs
  JOIN stripe_charge_references cr ON cr.account = $1 AND cr.tenant_id = refs.tenant_id AND cr.reference = refs.reference
  -- A primary-key probe per charge, in its own day's partition; the metadata checked on the charge itself.
  CROSS JOIN LATERAL (SELECT * FROM stripe_charges x WHERE x.charge_id = cr.charge_id AND x.created = cr.created
                         AND x.account = $1 AND x.reference = refs.reference
                         AND coalesce(x.tenant_id, '') = refs.tenant_id OFFSET 0) sc`;

/**
 * The same for a window, where nearly every reference has one charge, the batch's own: a
 * reference with one entry in stripe_charge_references is that charge alone (a charge is
 * never without its entry), which cannot be paid twice. It comes back as its group with no
 * charge read (the columns null): judged, so an open duplicate_effect finding of it is
 * closed as healed, without reading back a row the batch itself just landed.
 */
const windowReferencesSql = (where: string) => `
WITH refs AS (${windowRefs(where)}),
shared AS (SELECT refs.tenant_id, refs.reference, ${SEVERAL} AS several FROM refs)
SELECT refs.tenant_id AS group_tenant, refs.reference AS group_reference, ${CHARGE_COLUMNS}
  FROM shared refs
  LEFT JOIN LATERAL (${MEMBERS} AND refs.several) sc ON true`;

const suspectSeedsSql = (where: string) => `
SELECT ${CHARGE_COLUMNS} FROM stripe_charges sc
 WHERE sc.account = $1 AND ${where} AND sc.reference IS NULL AND sc.status IN ('succeeded', 'pending')
   AND (sc.customer IS NOT NULL OR sc.card_fingerprint IS NOT NULL)`;

const SUSPECTS_AROUND = `
SELECT ${CHARGE_COLUMNS} FROM stripe_charges sc
 WHERE sc.account = $1 AND sc.created >= $2 AND sc.created <= $3 AND sc.reference IS NULL
   AND sc.status IN ('succeeded', 'pending')
   AND (sc.customer = ANY($4::text[]) OR sc.card_fingerprint = ANY($5::text[]))`;

const VERDICTS = `
SELECT f.id, array_agg(all_members.charge_id) AS charges
  FROM (SELECT DISTINCT finding_id FROM recon_finding_charges WHERE account = $1 AND charge_id = ANY($2::text[])) mine
  JOIN recon_findings f ON f.id = mine.finding_id AND f.state IN ('resolved', 'ignored') AND f.closed_by <> 'sweeper'
  JOIN recon_finding_charges all_members ON all_members.finding_id = f.id
 GROUP BY f.id`;

/** Rounds of widening around the suspects: a chain of charges each moments after the last ends somewhere. */
const MAX_WIDENINGS = 8;

export async function loadOutcomeFacts(
  db: Queryable,
  account: string,
  selection: OutcomeSelection,
  suspectWindowMs: number,
): Promise<OutcomeFacts> {
  const { where, args } = select(selection);
  const inBatch = 'window' in selection ? selection.window : null;
  const listed = 'window' in selection ? selection.listed : undefined;
  const found = listed
    ? await loadListedReferences(db, account, listed)
    : await loadReferences(db, account, inBatch ? windowReferencesSql(where) : referencesSql(where), args);
  const references = await sweptMembersOnly(db, account, found, inBatch);
  let suspects: ChargeFact[] = [];
  if (suspectWindowMs > 0) {
    const seeds = listed
      ? listed.filter(isSuspectSeed)
      : (await db.query<Record<string, unknown>>(named(suspectSeedsSql(where), [account, ...args]))).rows.map(
          chargeFact,
        );
    suspects = await loadSuspects(db, account, seeds, suspectWindowMs);
  }
  const ids = [...references.flatMap((g) => g.charges.map((c) => c.id)), ...suspects.map((c) => c.id)];
  const verdicts =
    ids.length === 0
      ? []
      : (await db.query<{ charges: string[] }>(named(VERDICTS, [account, ids]))).rows.map((r) => new Set(r.charges));
  return { references, suspects, verdicts };
}

/** The listed charges' references (each once), then as windowReferencesSql reads a window's. */
async function loadListedReferences(db: Queryable, account: string, listed: readonly ChargeFact[]) {
  const refs = new Map<string, [string, string]>();
  for (const c of listed) {
    const reference = c.reference ?? null;
    if (reference !== null) refs.set(`${c.tenantId ?? ''}\u001f${reference}`, [c.tenantId ?? '', reference]);
  }
  if (refs.size === 0) return [];
  const pairs = [...refs.values()];
  const args = [pairs.map(([t]) => t), pairs.map(([, r]) => r)];
  const shared = await loadReferences(db, account, LISTED_REFERENCES, args);
  // A reference sent that came back with no charge is the listed charge's alone (lone).
  const back = new Set(shared.map((g) => `${g.tenantId}\u001f${g.reference}`));
  const lone: LoneGroup[] = [...refs]
    .filter(([id]) => !back.has(id))
    .map(([, [tenantId, reference]]) => ({ account, tenantId, reference, charges: [], lone: true }));
  return [...shared, ...lone];
}

/** As suspectSeedsSql selects: live, no reference, a customer or a card to compare by. */
function isSuspectSeed(c: ChargeFact): boolean {
  return (
    (c.reference ?? null) === null &&
    (c.status === 'succeeded' || c.status === 'pending') &&
    (c.customer !== null || (c.cardFingerprint ?? null) !== null)
  );
}

/** A reference of the batch with one charge, the batch's own (windowReferencesSql): judged with none read. */
type LoneGroup = ReferenceGroup & { lone: true };

async function loadReferences(
  db: Queryable,
  account: string,
  sql: string,
  args: unknown[],
): Promise<Array<ReferenceGroup | LoneGroup>> {
  const { rows } = await db.query<Record<string, unknown>>(named(sql, [account, ...args]));
  const groups = new Map<string, ReferenceGroup | LoneGroup>();
  for (const r of rows) {
    const tenantId = String(r.group_tenant);
    const reference = String(r.group_reference);
    const id = `${tenantId}\u001f${reference}`;
    let group = groups.get(id);
    if (r.charge_id === null) {
      groups.set(id, { account, tenantId, reference, charges: [], lone: true });
      continue;
    }
    if (!group) groups.set(id, (group = { account, tenantId, reference, charges: [] }));
    group.charges.push(chargeFact(r));
  }
  return [...groups.values()];
}

/**
 * A group's charges created where some run has judged, or in the batch itself: a charge the
 * mirror holds from a read by id (a payment row named it) but no run has swept is never part
 * of a finding (docs/judgement.md "What has been swept"); its backfill judges it.
 */
async function sweptMembersOnly(
  db: Queryable,
  account: string,
  all: Array<ReferenceGroup | LoneGroup>,
  batch: TimeWindow | null,
): Promise<ReferenceGroup[]> {
  // A lone group's charge was created in the batch: swept.
  const lone: ReferenceGroup[] = [];
  const groups: ReferenceGroup[] = [];
  for (const g of all) {
    if ('lone' in g) lone.push({ account: g.account, tenantId: g.tenantId, reference: g.reference, charges: [] });
    else groups.push(g);
  }
  const times = groups.flatMap((g) => g.charges.map((c) => c.created.getTime()));
  if (times.length === 0) return [...groups, ...lone];
  const range = { from: new Date(Math.min(...times)), to: new Date(Math.max(...times) + 1) };
  const coverage = await readCoverage(db, account, range);
  const swept = (c: ChargeFact) =>
    isCovered(coverage, c.created) || (batch !== null && c.created >= batch.from && c.created < batch.to);
  return [
    ...groups.map((g) => ({ ...g, charges: g.charges.filter(swept) })).filter((g) => g.charges.length > 0),
    ...lone,
  ];
}

/**
 * The batch's charges without a reference, and those around them by the same customers or
 * cards: widened until every set that holds one of the batch's charges lies inside what was
 * read, so the sets do not depend on where a slice happens to end.
 */
async function loadSuspects(
  db: Queryable,
  account: string,
  seeds: ChargeFact[],
  windowMs: number,
): Promise<ChargeFact[]> {
  if (seeds.length === 0) return [];
  const seedIds = new Set(seeds.map((c) => c.id));
  let from = Math.min(...seeds.map((c) => c.created.getTime())) - windowMs;
  let to = Math.max(...seeds.map((c) => c.created.getTime())) + windowMs;
  let charges: ChargeFact[] = seeds;
  let reaching: ChargeFact[][] = [];
  for (let round = 0; round < MAX_WIDENINGS; round += 1) {
    const customers = [...new Set(charges.flatMap((c) => (c.customer ? [c.customer] : [])))];
    const cards = [...new Set(charges.flatMap((c) => (c.cardFingerprint ? [c.cardFingerprint] : [])))];
    const { rows } = await db.query<Record<string, unknown>>(
      named(SUSPECTS_AROUND, [account, new Date(from), new Date(to), customers, cards]),
    );
    charges = rows.map(chargeFact);
    reaching = suspectSets(charges, windowMs).filter((set) => set.some((c) => seedIds.has(c.id)));
    const times = reaching.flat().map((c) => c.created.getTime());
    const first = Math.min(...times, from + windowMs);
    const last = Math.max(...times, to - windowMs);
    if (first - windowMs >= from && last + windowMs <= to) break;
    from = Math.min(from, first - windowMs);
    to = Math.max(to, last + windowMs);
  }
  // Only the sets that hold one of the batch's charges: a set at the edge of what was read
  // is judged by the batch that holds one of its own.
  const kept = new Map([...seeds, ...reaching.flat()].map((c) => [c.id, c]));
  return [...kept.values()];
}
