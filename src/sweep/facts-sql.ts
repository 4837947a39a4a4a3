import type { Queryable } from '../db/pool.js';
import { named } from '../db/named.js';
import type { ResponseOutcome } from '../claims/claim-store.js';
import { accountName, claimKey } from '../domain/identity.js';
import type { ClaimFact, EffectFact, LooseEffect, SliceFacts } from './facts.js';
import { IdentityGather } from './facts-builder.js';
import { mappedOutcome } from './stored-answer.js';
import { answerChargeSql, answerOutcomeSql, answeredBySql, type StoredAnswerMapping } from './stored-answer.js';
import { CHARGE_COLUMNS, chargeFact, date, dateOrNull, numberOrNull, textOrNull } from './charge-rows.js';
import { loadOutcomeFacts } from './outcome-facts.js';
import type { TimeWindow } from './window.js';

/**
 * Gathers everything a batch is judged on, set-based: a fixed handful of statements
 * however many charges it holds, each one flat rows (no per-key subquery, no JSON
 * aggregation), assembled per identity here. An identity (account, tenant, key) is in
 * a slice when one of its charges was created, its claim last changed, or its payment
 * row was created there (or, for late changes, when a charge named by an event is its
 * charge); it then carries its claim and every charge and payment naming the key or
 * linked to it by a local record (a payment's charge id, the charge its claim's stored
 * answer names), wherever they lie in time. Which of them count is judged in
 * judge/evidence.ts.
 */

/**
 * The keys of this account whose claim stored an answer naming one of the selected
 * charges that carry no attribution metadata: such a charge is that key's evidence,
 * judged with it, in the same slice as the charge (index idempotency_keys_answer_charge).
 */
const answeredKeys = (selection: string, mapping: StoredAnswerMapping | null) =>
  answeredBySql(mapping)
    .map(
      (on) => `
SELECT c.tenant_id, c.key FROM stripe_charges sc
  JOIN idempotency_keys c ON ${on} AND c.account = $1
 WHERE sc.account = $1 AND ${selection} AND (sc.tenant_id IS NULL OR sc.idempotency_key IS NULL)`,
    )
    .join('\nUNION');

/** The keys whose claim last changed, or whose payment row was created, in a slice ($1: account; $2, $3: the slice). */
export const KEYS_CHANGED_IN_SLICE = `SELECT tenant_id, key FROM idempotency_keys
 WHERE account = $1 AND updated_at >= $2 AND updated_at < $3 AND NOT sweeper_claim_is_refund(operation, response_body)
UNION
SELECT tenant_id, idempotency_key FROM payments
 WHERE account = $1 AND created_at >= $2 AND created_at < $3
   AND tenant_id IS NOT NULL AND idempotency_key IS NOT NULL`;

/**
 * The identities whose claim last changed or payment row was created in a slice ($2,
 * $3), or whose charge was created in what the slice listed ($4, $5: the slice with its
 * lease margins). The margins matter: a charge listed there, beyond the slice, is in the
 * mirror from now on, so the identities it names are judged with it in this run, not
 * first by a later run that would find more than this one did.
 */
const sliceKeys = (mapping: StoredAnswerMapping | null) => `
SELECT tenant_id, idempotency_key AS key FROM stripe_charges
 WHERE account = $1 AND created >= $4 AND created < $5 AND tenant_id IS NOT NULL AND idempotency_key IS NOT NULL
UNION
${KEYS_CHANGED_IN_SLICE}
UNION
-- A charge without metadata that a payment row of this account attributes to a key is
-- that key's charge: judged with it in the slice that listed it (the loose path leaves it).
SELECT p.tenant_id, p.idempotency_key FROM stripe_charges sc
  JOIN payments p ON p.charge_id = sc.charge_id AND p.account = $1
 WHERE sc.account = $1 AND sc.created >= $4 AND sc.created < $5 AND (sc.tenant_id IS NULL OR sc.idempotency_key IS NULL)
   AND p.tenant_id IS NOT NULL AND p.idempotency_key IS NOT NULL
UNION
${answeredKeys('sc.created >= $4 AND sc.created < $5', mapping)}`;

/** The identities of the charges $2 (ids): their metadata, or a payment row of this account naming a key. */
const chargesKeys = (mapping: StoredAnswerMapping | null) => `
SELECT tenant_id, idempotency_key AS key FROM stripe_charges
 WHERE account = $1 AND charge_id = ANY($2::text[]) AND tenant_id IS NOT NULL AND idempotency_key IS NOT NULL
UNION
SELECT tenant_id, idempotency_key FROM payments
 WHERE account = $1 AND charge_id = ANY($2::text[])
   AND tenant_id IS NOT NULL AND idempotency_key IS NOT NULL
UNION
${answeredKeys('sc.charge_id = ANY($2::text[])', mapping)}`;

/** Each key with the key's claim, whatever its account (claims are unique per tenant and key). */
export const claimsSql = (keys: string, mapping: StoredAnswerMapping | null) => `
WITH keys AS MATERIALIZED (${keys})
SELECT k.tenant_id, k.key, c.key AS claim_key, c.account_id, c.status, c.attempt, c.locked_until, c.created_at, c.updated_at,
       c.response_status, c.response_outcome, c.amount, c.currency, c.downstream_key,
       ${answerChargeSql('c', mapping)} AS response_charge_id,
       CASE WHEN jsonb_typeof(c.response_body) = 'object' THEN c.response_body->>'object' END AS answer_object,
       CASE WHEN jsonb_typeof(c.response_body) = 'object' THEN c.response_body->>'status' END AS answer_status,
       ${answerOutcomeSql('c', mapping)} AS answer_mapped,
       sweeper_claim_is_refund(c.operation, c.response_body) AS is_refund
  -- The key's day from the directory (idempotency_key_directory), then its claim by primary key in that
  -- day's partition only. LATERAL with OFFSET 0: a probe per key, whatever the size of the
  -- store (a hash join would scan it all). A stale entry (claim gone) finds no claim. A key
  -- with no entry at all is looked for in every partition: a claim loaded with the triggers
  -- off (session_replication_role = replica) has none, and must never look missing (its
  -- key would be re-created beside it).
  FROM keys k
  LEFT JOIN LATERAL (SELECT d.created_at FROM idempotency_key_directory d
                      WHERE d.tenant_id = k.tenant_id AND d.key = k.key OFFSET 0) d ON true
  LEFT JOIN LATERAL (SELECT * FROM idempotency_keys c
                      WHERE c.tenant_id = k.tenant_id AND c.key = k.key AND c.created_at = d.created_at
                     UNION ALL
                     SELECT * FROM idempotency_keys c
                      WHERE d.created_at IS NULL AND c.tenant_id = k.tenant_id AND c.key = k.key
                     LIMIT 1) c ON true`;

export const EFFECT_COLUMNS = `p.charge_id AS p_charge_id, p.tenant_id AS p_tenant_id, p.idempotency_key AS p_idempotency_key,
  p.payment_intent_id AS p_payment_intent_id, p.account_id AS p_account_id, p.amount AS p_amount, p.currency AS p_currency,
  p.status AS p_status, p.amount_refunded AS p_amount_refunded, p.disputed AS p_disputed, p.dispute_status AS p_dispute_status,
  p.created_at AS p_created_at`;

/**
 * The keys' charges in this account by metadata, each with its payment row if any (any
 * account: see `recordedIn`). One probe per key in stripe_charge_keys,
 * then each charge by its primary key, pruned to its own day's partition at run time;
 * the metadata is checked on the charge itself (an entry may be stale, never missing).
 * `entries`: which of the keys' entries to follow (a slice's: those outside its window).
 */
export const attributedChargesSql = (entries = 'true') => `
SELECT ${CHARGE_COLUMNS}, ${EFFECT_COLUMNS}
  FROM unnest($2::text[], $3::text[]) AS k(tenant_id, key)
  JOIN stripe_charge_keys ck ON ck.tenant_id = k.tenant_id AND ck.idempotency_key = k.key AND ck.account = $1
   AND ${entries}
  -- LATERAL with OFFSET 0 (kept a subquery, not flattened into a join): a primary-key probe
  -- per charge in one partition, never a hash join over the whole mirror.
  CROSS JOIN LATERAL (SELECT * FROM stripe_charges x
                       WHERE x.charge_id = ck.charge_id AND x.created = ck.created
                         AND x.tenant_id = k.tenant_id AND x.idempotency_key = k.key AND x.account = $1 OFFSET 0) sc
  LEFT JOIN payments p ON p.charge_id = sc.charge_id`;

/**
 * The same for a slice ($4, $5: what it listed), in two parts. The charges created in that
 * window come from one range scan of it: every charge there naming a key names one of the
 * slice's keys (SLICE_KEYS takes them all), so none is missed and none is foreign. Only
 * a key's charges outside the window (the key index says which: `created`) are probed
 * one by one, instead of a probe per charge (docs/performance.md "The throughput design").
 */
const SLICE_ATTRIBUTED_CHARGES = `
SELECT ${CHARGE_COLUMNS}, ${EFFECT_COLUMNS}
  FROM stripe_charges sc
  -- A probe per charge (payments.charge_id is unique), never a hash of every payment row.
  LEFT JOIN LATERAL (SELECT * FROM payments x WHERE x.charge_id = sc.charge_id OFFSET 0) p ON true
 WHERE sc.account = $1 AND sc.created >= $4 AND sc.created < $5
   AND sc.tenant_id IS NOT NULL AND sc.idempotency_key IS NOT NULL
UNION ALL
${attributedChargesSql('(ck.created < $4 OR ck.created >= $5)')}`;

/** Charges by id (links from payment rows and stored answers), each with its payment row if any. */
const CHARGES_BY_ID = `
SELECT ${CHARGE_COLUMNS}, ${EFFECT_COLUMNS}
  FROM stripe_charges sc LEFT JOIN payments p ON p.charge_id = sc.charge_id
 WHERE sc.charge_id = ANY($1::text[])`;

/**
 * The keys' payment rows in this account ($4: its account_id): a probe per key of
 * payments_tenant_key. The account is compared with IS NOT DISTINCT FROM, which no index
 * can answer, so the probe's shape does not hang on statistics: on a table bulk-loaded
 * and not yet analysed, an indexable account test made payments_tenant_account (every
 * row of the tenant) look as good, and a slice read the tenant's rows once per key.
 */
const NAMED_EFFECTS = `
SELECT ${EFFECT_COLUMNS}
  FROM unnest($2::text[], $3::text[]) AS k(tenant_id, key)
  CROSS JOIN LATERAL (SELECT * FROM payments x WHERE x.tenant_id = k.tenant_id AND x.idempotency_key = k.key
                         AND x.account_id IS NOT DISTINCT FROM $4::text OFFSET 0) p
 WHERE $1::text IS NOT NULL`;

/** Tenants with a claim or a payment row on this account ($2: account_id): known here, not only by metadata. */
const KNOWN_TENANTS = `
SELECT t.tenant_id
  FROM unnest($1::text[]) AS t(tenant_id)
 WHERE EXISTS (SELECT 1 FROM idempotency_keys c WHERE c.tenant_id = t.tenant_id
                  AND (c.account_id = $2 OR ($2::text IS NULL AND c.account_id IS NULL)))
    OR EXISTS (SELECT 1 FROM payments p WHERE p.tenant_id = t.tenant_id
                  AND (p.account_id = $2 OR ($2::text IS NULL AND p.account_id IS NULL)))`;

/** Charges without attribution metadata that no payment row of this account attributes to a key. */
const looseChargesSql = (selection: string) => `
SELECT ${CHARGE_COLUMNS}, ${EFFECT_COLUMNS}
  FROM stripe_charges sc
  LEFT JOIN payments p ON p.charge_id = sc.charge_id AND p.account = $1
 WHERE sc.account = $1 AND ${selection}
   AND (sc.tenant_id IS NULL OR sc.idempotency_key IS NULL)
   -- A payment row naming a tenant and key makes the charge that key's: judged with it.
   AND (p.charge_id IS NULL OR p.tenant_id IS NULL OR p.idempotency_key IS NULL)`;

// Payment rows without attribution (nor a charge naming a key), with their charge if
// the mirror has it. Every object is judged on exactly one path: with its identity,
// or here as loose.
export const looseEffectsSql = (selection: string) => `
SELECT ${EFFECT_COLUMNS}, ${CHARGE_COLUMNS}
  FROM payments p
  LEFT JOIN LATERAL (SELECT * FROM stripe_charges x WHERE x.charge_id = p.charge_id LIMIT 1) sc ON true
 WHERE p.account = $1 AND ${selection}
   AND (p.tenant_id IS NULL OR p.idempotency_key IS NULL)
   -- A charge naming a tenant and key makes the row that key's: judged with it.
   AND NOT (sc.account IS NOT DISTINCT FROM $1 AND sc.tenant_id IS NOT NULL AND sc.idempotency_key IS NOT NULL)`;

const sliceQueries = (mapping: StoredAnswerMapping | null) => ({
  claims: claimsSql(sliceKeys(mapping), mapping),
  attributed: SLICE_ATTRIBUTED_CHARGES,
  looseCharges: looseChargesSql('sc.created >= $2 AND sc.created < $3'),
  looseEffects: looseEffectsSql('p.created_at >= $2 AND p.created_at < $3'),
});
const changedQueries = (mapping: StoredAnswerMapping | null) => ({
  claims: claimsSql(chargesKeys(mapping), mapping),
  attributed: attributedChargesSql(),
  looseCharges: looseChargesSql('sc.charge_id = ANY($2::text[])'),
  looseEffects: looseEffectsSql('p.charge_id = ANY($2::text[])'),
});
type Queries = ReturnType<typeof sliceQueries>;

/** The statements for one stored-answer mapping, built once (a run has one mapping). */
export function memoized<Q>(build: (mapping: StoredAnswerMapping | null) => Q) {
  const built = new Map<string, Q>();
  return (mapping: StoredAnswerMapping | null): Q => {
    const id = JSON.stringify(mapping);
    let queries = built.get(id);
    if (!queries) built.set(id, (queries = build(mapping)));
    return queries;
  };
}
const SLICE = memoized(sliceQueries);
const CHANGED = memoized(changedQueries);

/** The statements of one slice's gather, for EXPLAIN in the benchmarks (bench/sweep-attributed.ts). */
export const SLICE_FACTS_SQL = {
  ...SLICE(null),
  knownTenants: KNOWN_TENANTS,
  namedEffects: NAMED_EFFECTS,
};

/** The facts of one slice of time; `listed`: the window its listing covered (default: the slice). */
/** How a batch's facts are read: the stored-answer mapping, and how far suspected duplicates reach (0: not at all). */
export interface FactOptions {
  storedAnswer: StoredAnswerMapping | null;
  suspectWindowMs: number;
}

export const NO_OPTIONS: FactOptions = { storedAnswer: null, suspectWindowMs: 0 };

export async function loadSliceFacts(
  db: Queryable,
  account: string,
  slice: TimeWindow,
  listed: TimeWindow = slice,
  options: FactOptions = NO_OPTIONS,
): Promise<SliceFacts> {
  const facts = await loadFacts(db, account, SLICE(options.storedAnswer), options.storedAnswer, {
    keys: [account, slice.from, slice.to, listed.from, listed.to],
    attributed: [listed.from, listed.to],
    loose: [account, slice.from, slice.to],
  });
  // The outcome of the charges created in the slice itself (each charge's once, whatever the margins).
  facts.outcomes = await loadOutcomeFacts(db, account, { window: slice }, options.suspectWindowMs);
  return facts;
}

/** The facts of the identities some charges belong to (the charges Stripe's events point at), whatever their age. */
export async function loadChangedFacts(
  db: Queryable,
  account: string,
  chargeIds: readonly string[],
  options: FactOptions = NO_OPTIONS,
): Promise<SliceFacts> {
  const mapping = options.storedAnswer;
  const facts = await loadFacts(db, account, CHANGED(mapping), mapping, {
    keys: [account, chargeIds],
    attributed: [],
    loose: [account, chargeIds],
  });
  facts.outcomes = await loadOutcomeFacts(db, account, { chargeIds }, options.suspectWindowMs);
  return facts;
}

type Row = Record<string, unknown>;

async function loadFacts(
  db: Queryable,
  account: string,
  queries: Queries,
  mapping: StoredAnswerMapping | null,
  /** `attributed`: the parameters after the keys' tenants and keys ($4, $5 of a slice's window). */
  selection: { keys: unknown[]; attributed: unknown[]; loose: unknown[] },
): Promise<SliceFacts> {
  const gather = await gatherKeys(db, account, queries.claims, selection.keys, mapping);
  const { keyTenants, keyKeys } = gather.arrays();
  const addRow = (id: string, r: Row) => gather.addCharge(id, chargeFact(r), paymentOf(r));
  if (gather.identities.size > 0) {
    await markKnownTenants(db, gather);
    const attributed = await db.query<Row>(
      named(queries.attributed, [account, keyTenants, keyKeys, ...selection.attributed]),
    );
    for (const r of attributed.rows) addRow(claimKey(String(r.tenant_id), String(r.idempotency_key)), r);
    const byKey = await db.query<Row>(named(NAMED_EFFECTS, [account, keyTenants, keyKeys, gather.accountId]));
    for (const r of byKey.rows) gather.addNamedEffect(effectFact(r));
    await addLinkedById(db, gather, gather.missingLinks());
  }
  const looseCharges = await db.query<Row>(named(queries.looseCharges, selection.loose));
  return {
    identities: [...gather.identities.values()],
    looseCharges: looseCharges.rows.map((r) => ({ charge: chargeFact(r), effect: paymentOf(r) })),
    looseEffects: await loadLooseEffects(db, queries.looseEffects, selection.loose),
  };
}

/** The batch's keys with their claims (the claims statement `sql`), as the gather's identities. */
export async function gatherKeys(
  db: Queryable,
  account: string,
  sql: string,
  params: unknown[],
  mapping: StoredAnswerMapping | null,
): Promise<IdentityGather> {
  const gather = new IdentityGather(account);
  const { rows } = await db.query<Row>(named(sql, params));
  for (const r of rows) {
    // A refund's claim is not this charge's: the refund judgement has it (refunds.ts).
    const isRefund = r.is_refund === true;
    const hasClaim = r.claim_key !== null && r.claim_key !== undefined && !isRefund;
    const here = hasClaim && accountName(textOrNull(r.account_id)) === account;
    const claimAccount = hasClaim && !here ? accountName(textOrNull(r.account_id)) : null;
    gather.addKey(String(r.tenant_id), String(r.key), here ? claimFact(r, mapping) : null, claimAccount, isRefund);
  }
  return gather;
}

export async function markKnownTenants(db: Queryable, gather: IdentityGather): Promise<void> {
  const known = await db.query<{ tenant_id: string }>(
    named(KNOWN_TENANTS, [gather.arrays().tenants, gather.accountId]),
  );
  gather.markKnown(new Set(known.rows.map((r) => r.tenant_id)));
}

/** Linked charges no lookup by metadata brought (few): read by id, each added to every identity linking it. */
export async function addLinkedById(db: Queryable, gather: IdentityGather, missing: Map<string, string[]>) {
  if (missing.size === 0) return;
  const byId = await db.query<Row>(named(CHARGES_BY_ID, [[...missing.keys()]]));
  for (const r of byId.rows) {
    for (const id of missing.get(String(r.charge_id)) ?? []) gather.addCharge(id, chargeFact(r), paymentOf(r));
  }
}

export async function loadLooseEffects(db: Queryable, sql: string, params: unknown[]): Promise<LooseEffect[]> {
  const { rows } = await db.query<Row>(named(sql, params));
  return rows.map((r) => ({ effect: effectFact(r), charge: r.charge_id === null ? null : chargeFact(r) }));
}

/** The row's payment columns (`p_…`) as an effect, null when it joined none. */
function paymentOf(r: Row): EffectFact | null {
  return r.p_charge_id === null || r.p_charge_id === undefined ? null : effectFact(r);
}

export function claimFact(r: Row, mapping: StoredAnswerMapping | null): ClaimFact {
  return {
    tenantId: String(r.tenant_id),
    key: String(r.key),
    accountId: textOrNull(r.account_id),
    status: r.status as ClaimFact['status'],
    attempt: Number(r.attempt),
    lockedUntil: dateOrNull(r.locked_until),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
    responseStatus: numberOrNull(r.response_status),
    responseOutcome: textOrNull(r.response_outcome) as ResponseOutcome | null,
    responseChargeId: textOrNull(r.response_charge_id),
    answerObject: textOrNull(r.answer_object),
    answerStatus: textOrNull(r.answer_status),
    answerMapped: mappedOutcome(mapping, textOrNull(r.answer_mapped)),
    amount: numberOrNull(r.amount),
    currency: textOrNull(r.currency),
    downstreamKey: String(r.downstream_key),
  };
}

/** A payment row, from the `p_…` columns. */
export function effectFact(r: Row): EffectFact {
  return {
    chargeId: String(r.p_charge_id),
    tenantId: textOrNull(r.p_tenant_id),
    idempotencyKey: textOrNull(r.p_idempotency_key),
    accountId: textOrNull(r.p_account_id),
    paymentIntentId: textOrNull(r.p_payment_intent_id),
    amount: Number(r.p_amount),
    currency: String(r.p_currency).trim(),
    status: r.p_status as EffectFact['status'],
    amountRefunded: Number(r.p_amount_refunded),
    disputed: Boolean(r.p_disputed),
    disputeStatus: textOrNull(r.p_dispute_status),
    createdAt: date(r.p_created_at),
  };
}
