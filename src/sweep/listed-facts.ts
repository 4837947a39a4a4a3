import type { Queryable } from '../db/pool.js';
import { named } from '../db/named.js';
import { accountName, claimKey } from '../domain/identity.js';
import type { ChargeFact, EffectFact, LooseCharge, SliceFacts } from './facts.js';
import { IdentityGather, recordedIn } from './facts-builder.js';
import {
  addLinkedById,
  attributedChargesSql,
  claimsSql,
  EFFECT_COLUMNS,
  effectFact,
  type FactOptions,
  gatherKeys,
  KEYS_CHANGED_IN_SLICE,
  loadLooseEffects,
  loadSliceFacts,
  looseEffectsSql,
  markKnownTenants,
  memoized,
  NO_OPTIONS,
} from './facts-sql.js';
import { chargeFact } from './charge-rows.js';
import { loadOutcomeFacts } from './outcome-facts.js';
import type { NormalizedCharge } from './provider.js';
import { answeredBySql, type StoredAnswerMapping } from './stored-answer.js';
import type { TimeWindow } from './window.js';

/**
 * A slice judged from what it listed (docs/performance.md "Judged from the listing"): its
 * charges are in memory, and the batch has just landed them in the mirror. When the mirror
 * holds exactly those in the listed window, each as this listing read it, reading them back
 * would return what the sweep already has: the gather takes them from the listing and reads
 * only what the listing cannot tell (claims, payment rows, disputes, a key's charges outside
 * the window). Otherwise (a charge the database refused, an older read of one the listing
 * could not read, a newer read landed since: Stripe's own word on a second pass) the slice
 * is gathered from the mirror as before (facts-sql.ts). Both ways give the same facts.
 */

/** What a slice listed: every charge its listing read, at `fetchedAt` (the mirror's read time). */
export interface Listing {
  charges: readonly NormalizedCharge[];
  fetchedAt: Date;
}

type Row = Record<string, unknown>;

/** How many charges the mirror holds in the window, and how many of them this listing wrote. */
const MIRROR_IN_WINDOW = `
SELECT count(*)::int AS held, count(*) FILTER (WHERE fetched_at = $4)::int AS ours
  FROM stripe_charges WHERE account = $1 AND created >= $2 AND created < $3`;

/**
 * The keys of a slice judged from its listing: the listed charges' own ($4, $5), those whose
 * claim last changed or payment row was created in the slice ($2, $3), and those a payment
 * row or a stored answer gives the listed charges without metadata ($6), as sliceKeys in
 * facts-sql.ts reads them from the mirror.
 */
const listedKeys = (mapping: StoredAnswerMapping | null) => `
SELECT * FROM unnest($4::text[], $5::text[]) AS l(tenant_id, key)
UNION
${KEYS_CHANGED_IN_SLICE}
UNION
SELECT p.tenant_id, p.idempotency_key FROM payments p
 WHERE p.charge_id = ANY($6::text[]) AND p.account = $1 AND p.tenant_id IS NOT NULL AND p.idempotency_key IS NOT NULL
${answeredBySql(mapping)
  .map(
    (on) => `UNION
SELECT c.tenant_id, c.key FROM unnest($6::text[]) AS sc(charge_id) JOIN idempotency_keys c ON ${on} AND c.account = $1`,
  )
  .join('\n')}`;

/**
 * The payment rows of this account ($4: account_id) naming one of the keys ($2, $3), and
 * those of the listed charges ($5: ids, whatever their account) that the keys did not
 * bring: each row once. A probe per key, and one per listed charge whose row does not
 * name its key (a matched charge's row came with its key: no second probe).
 */
const PAYMENTS = `
WITH by_key AS MATERIALIZED (
  SELECT p.* FROM unnest($2::text[], $3::text[]) AS k(tenant_id, key)
   CROSS JOIN LATERAL (SELECT * FROM payments x WHERE x.tenant_id = k.tenant_id AND x.idempotency_key = k.key
                          AND x.account_id IS NOT DISTINCT FROM $4::text OFFSET 0) p),
rest AS (SELECT i.charge_id FROM unnest($5::text[]) AS i(charge_id)
          WHERE NOT EXISTS (SELECT 1 FROM by_key b WHERE b.charge_id = i.charge_id))
SELECT ${EFFECT_COLUMNS} FROM by_key p WHERE $1::text IS NOT NULL
UNION ALL
SELECT ${EFFECT_COLUMNS} FROM rest
 CROSS JOIN LATERAL (SELECT * FROM payments x WHERE x.charge_id = rest.charge_id OFFSET 0) p`;

/** Where the newest dispute event left each listed charge's dispute (as CHARGE_COLUMNS reads it). */
const DISPUTES = `
SELECT DISTINCT ON (d.charge_id) d.charge_id, d.status FROM stripe_disputes d
 WHERE d.charge_id = ANY($1::text[])
 ORDER BY d.charge_id, d.as_of DESC, d.stage DESC, d.event_id DESC`;

const LISTED = memoized((mapping) => ({
  claims: claimsSql(listedKeys(mapping), mapping),
  payments: PAYMENTS,
  outside: attributedChargesSql('(ck.created < $4 OR ck.created >= $5)'),
  looseEffects: looseEffectsSql('p.created_at >= $2 AND p.created_at < $3'),
}));

/**
 * The facts of one part of a slice (`slice`, listing `listed`), from its listing when the
 * mirror holds exactly what the listing read there; else from the mirror (loadSliceFacts).
 */
export async function loadListedSliceFacts(
  db: Queryable,
  account: string,
  part: { slice: TimeWindow; listed: TimeWindow },
  listing: Listing,
  options: FactOptions = NO_OPTIONS,
): Promise<SliceFacts> {
  return (
    (await factsFromListing(db, account, part, listing, options)) ??
    loadSliceFacts(db, account, part.slice, part.listed, options)
  );
}

/** The facts from the listing; null when the mirror does not hold just what the listing read in the window. */
export async function factsFromListing(
  db: Queryable,
  account: string,
  part: { slice: TimeWindow; listed: TimeWindow },
  listing: Listing,
  options: FactOptions = NO_OPTIONS,
): Promise<SliceFacts | null> {
  const { slice, listed } = part;
  const [from, to] = [listed.from.getTime(), listed.to.getTime()];
  const inWindow = listing.charges.filter((c) => c.created * 1000 >= from && c.created * 1000 < to);
  const { rows } = await db.query<{ held: number; ours: number }>(
    named(MIRROR_IN_WINDOW, [account, listed.from, listed.to, listing.fetchedAt]),
  );
  const held = rows[0];
  if (!held || held.held !== inWindow.length || held.ours !== inWindow.length) return null;
  return gatherListed(db, account, slice, listed, inWindow.map(listedFact), options);
}

async function gatherListed(
  db: Queryable,
  account: string,
  slice: TimeWindow,
  listed: TimeWindow,
  charges: ChargeFact[],
  options: FactOptions,
): Promise<SliceFacts> {
  const queries = LISTED(options.storedAnswer);
  const attributed = charges.filter((c) => c.tenantId !== null && c.idempotencyKey !== null);
  const loose = charges.filter((c) => c.tenantId === null || c.idempotencyKey === null);
  const gather = await gatherKeys(
    db,
    account,
    queries.claims,
    [
      account,
      slice.from,
      slice.to,
      attributed.map((c) => c.tenantId),
      attributed.map((c) => c.idempotencyKey),
      loose.map((c) => c.id),
    ],
    options.storedAnswer,
  );
  const payments = await readPayments(db, gather, charges);
  await readDisputes(db, charges);
  for (const c of charges) c.recordedIn = recordedIn(c, payments.get(c.id) ?? null);
  if (gather.identities.size > 0) {
    await markKnownTenants(db, gather);
    for (const c of attributed)
      gather.addCharge(claimKey(c.tenantId as string, c.idempotencyKey as string), c, payments.get(c.id) ?? null);
    const { keyTenants, keyKeys } = gather.arrays();
    const outside = await db.query<Row>(named(queries.outside, [account, keyTenants, keyKeys, listed.from, listed.to]));
    for (const r of outside.rows) {
      gather.addCharge(claimKey(String(r.tenant_id), String(r.idempotency_key)), chargeFact(r), paymentOfRow(r));
    }
    for (const p of payments.values()) if (p.accountId === gather.accountId) gather.addNamedEffect(p);
    await addLinked(db, gather, charges, payments);
  }
  const inSlice = charges.filter((c) => c.created >= slice.from && c.created < slice.to);
  const facts: SliceFacts = {
    identities: [...gather.identities.values()],
    looseCharges: looseCharges(inSlice, payments, gather.accountId),
    looseEffects: await loadLooseEffects(db, queries.looseEffects, [account, slice.from, slice.to]),
  };
  facts.outcomes = await loadOutcomeFacts(db, account, { window: slice, listed: inSlice }, options.suspectWindowMs);
  return facts;
}

/** The payment rows of the listed charges and of the keys (PAYMENTS), by charge id. */
async function readPayments(db: Queryable, gather: IdentityGather, charges: readonly ChargeFact[]) {
  const { keyTenants, keyKeys } = gather.arrays();
  const ids = charges.map((c) => c.id);
  const { rows } = await db.query<Row>(named(PAYMENTS, [gather.account, keyTenants, keyKeys, gather.accountId, ids]));
  return new Map(rows.map((r) => [String(r.p_charge_id), effectFact(r)]));
}

async function readDisputes(db: Queryable, charges: ChargeFact[]): Promise<void> {
  const { rows } = await db.query<{ charge_id: string; status: string }>(named(DISPUTES, [charges.map((c) => c.id)]));
  if (rows.length === 0) return;
  const status = new Map(rows.map((r) => [r.charge_id, r.status]));
  for (const c of charges) c.disputeStatus = status.get(c.id) ?? null;
}

/** Charges a payment row or stored answer links to an identity: from the listing when it has them, else by id. */
async function addLinked(
  db: Queryable,
  gather: IdentityGather,
  charges: readonly ChargeFact[],
  payments: ReadonlyMap<string, EffectFact>,
): Promise<void> {
  const missing = gather.missingLinks();
  if (missing.size === 0) return;
  const byId = new Map(charges.map((c) => [c.id, c]));
  for (const [chargeId, ids] of missing) {
    const charge = byId.get(chargeId);
    if (!charge) continue;
    for (const id of ids) gather.addCharge(id, charge, payments.get(chargeId) ?? null);
    missing.delete(chargeId);
  }
  await addLinkedById(db, gather, missing);
}

/**
 * The slice's charges without attribution metadata that no payment row of this account
 * attributes to a key, each with its payment row if that row is this account's (as
 * looseChargesSql in facts-sql.ts joins only this account's rows: `recordedIn` stays null).
 */
function looseCharges(
  charges: readonly ChargeFact[],
  payments: ReadonlyMap<string, EffectFact>,
  accountId: string | null,
): LooseCharge[] {
  const out: LooseCharge[] = [];
  for (const c of charges) {
    if (c.tenantId !== null && c.idempotencyKey !== null) continue;
    const payment = payments.get(c.id);
    const effect = payment !== undefined && payment.accountId === accountId ? payment : null;
    if (effect !== null && effect.tenantId !== null && effect.idempotencyKey !== null) continue;
    out.push({ charge: { ...c, recordedIn: null }, effect });
  }
  return out;
}

function paymentOfRow(r: Row): EffectFact | null {
  return r.p_charge_id === null || r.p_charge_id === undefined ? null : effectFact(r);
}

/** A listed charge as the mirror's row reads (charge-rows.ts), before its payment row and dispute are known. */
function listedFact(c: NormalizedCharge): ChargeFact {
  return {
    id: c.id,
    account: accountName(c.account),
    created: new Date(c.created * 1000),
    amount: c.amount,
    amountCaptured: c.amountCaptured,
    amountRefunded: c.amountRefunded,
    currency: c.currency,
    status: c.status,
    captured: c.captured,
    refunded: c.refunded,
    disputed: c.disputed,
    paymentIntent: c.paymentIntent,
    customer: c.customer,
    paymentMethod: c.paymentMethod,
    tenantId: c.tenantId,
    idempotencyKey: c.idempotencyKey,
    reference: c.reference ?? null,
    cardFingerprint: c.cardFingerprint ?? null,
    disputeStatus: null,
    recordedIn: null,
  };
}

/** The statements of a slice judged from its listing, for EXPLAIN in the benchmarks. */
export const LISTED_SQL = LISTED(null);
