import { accountName, claimKey, identityKey } from '../domain/identity.js';
import type { ChargeFact, IdentityFacts, SliceFacts } from '../sweep/facts.js';
import type { Finding, RepairPlan } from '../sweep/judge/index.js';
import type { StripeRefundFact } from '../sweep/judge/refunds.js';
import type { NormalizedCharge } from '../sweep/provider.js';
import { canonicalJson, sha256Hex, type EvidenceObject } from './format.js';

/**
 * What a plan step read and what it writes (docs/plans.md "Evidence"). Pure: which objects,
 * and the version of a charge. The versions of rows are read by versions.ts, over the same
 * columns at plan and at apply time.
 *
 * A version is the SHA-256 of the content the sweep judges, never a row's physical
 * identity: `xmin` and `ctid` change with a dump and restore, VACUUM FULL or a logical
 * replica, and `updated_at` is not kept by every writer of claims and payment rows.
 */

/** The objects a step read, by id: the claim and payment rows and refund outbox rows by key, the charges with what was read. */
export interface EvidenceRefs {
  claims: Array<{ tenantId: string; key: string }>;
  /** Payment rows (or their absence), by charge id. */
  payments: string[];
  /** Charges, as the judgement read them. */
  charges: ChargeFact[];
  /** Refund outbox rows (recon_refunds), by the charge refunded. */
  intents: string[];
  /** The application's refund rows (payment_refunds), by refund id. */
  refundRows: string[];
  /** Refunds at Stripe, as the judgement read them. */
  refunds: StripeRefundFact[];
}

/** An object as one string, for maps: `claim:tenant␟key`, `payment:ch_…`. */
export function objectKey(object: EvidenceObject, id: string): string {
  return `${object}:${id}`;
}

export function claimObjectId(tenantId: string, key: string): string {
  return claimKey(tenantId, key);
}

/** The fields of a charge the judgement reads (those the mirror keeps): a charge's version is their hash. */
export function chargeVersion(charge: ChargeFact | NormalizedCharge): string {
  const created = typeof charge.created === 'number' ? charge.created : Math.floor(charge.created.getTime() / 1000);
  return sha256Hex(
    canonicalJson([
      charge.id,
      charge.account ?? accountName(null),
      created,
      charge.amount,
      charge.amountCaptured,
      charge.amountRefunded,
      charge.currency,
      charge.status,
      charge.captured,
      charge.refunded,
      charge.disputed,
      charge.paymentIntent,
      charge.customer,
      charge.paymentMethod,
      charge.tenantId,
      charge.idempotencyKey,
      charge.reference ?? null,
      charge.cardFingerprint ?? null,
    ]),
  );
}

/** The fields of a refund at Stripe the refund judgement reads: a refund's version is their hash. */
export function refundVersion(refund: StripeRefundFact): string {
  return sha256Hex(
    canonicalJson([
      refund.id,
      refund.chargeId,
      Math.floor(refund.created.getTime() / 1000),
      refund.amount,
      refund.currency,
      refund.status,
      refund.failureReason,
      refund.tenantId,
      refund.key,
    ]),
  );
}

/** The identities of a batch's facts, by `identityKey()`. */
export function identitiesOf(facts: SliceFacts): Map<string, IdentityFacts> {
  return new Map(facts.identities.map((i) => [identityKey(i.account, i.tenantId, i.key), i]));
}

/** The tenant and key a step is about, when it is about one. */
function keyOf(finding: Finding): { tenantId: string; key: string } | null {
  const repair = finding.repair;
  switch (repair?.kind) {
    case 'complete_claim':
    case 'release_claim':
      return { tenantId: repair.claim.tenantId, key: repair.claim.key };
    case 'recreate_claim':
      return { tenantId: repair.tenantId, key: repair.key };
    case 'record_refund':
      if (repair.claim) return { tenantId: repair.claim.tenantId, key: repair.claim.key };
      break;
    default:
      break;
  }
  return finding.tenantId !== null && finding.idempotencyKey !== null
    ? { tenantId: finding.tenantId, key: finding.idempotencyKey }
    : null;
}

/**
 * What a step read: the claim of its key (or its absence), every payment row and charge the
 * judgement had for the key, and the objects its repair names (the charge it copies, the
 * payment row it inserts or updates, the charges it refunds and their outbox rows, the
 * refund it records and the application's row of it).
 */
export function evidenceOf(
  finding: Finding & { repair: RepairPlan },
  account: string,
  identities: ReadonlyMap<string, IdentityFacts>,
): EvidenceRefs {
  const refs: EvidenceRefs = { claims: [], payments: [], charges: [], intents: [], refundRows: [], refunds: [] };
  const key = keyOf(finding);
  if (key) {
    refs.claims.push(key);
    const identity = identities.get(identityKey(account, key.tenantId, key.key));
    if (identity) {
      refs.payments.push(...identity.effects.map((e) => e.chargeId));
      refs.charges.push(...identity.charges);
    }
  }
  const repair = finding.repair;
  switch (repair.kind) {
    case 'complete_claim':
    case 'recreate_claim':
      refs.payments.push(repair.charge.id);
      refs.charges.push(repair.charge);
      break;
    case 'release_claim':
      break;
    case 'update_effect':
      refs.payments.push(repair.effect.chargeId);
      refs.charges.push(repair.charge);
      break;
    case 'refund_duplicates':
      refs.charges.push(repair.keep, ...repair.refund);
      refs.intents.push(...repair.refund.map((c) => c.id));
      break;
    case 'record_refund':
      refs.refundRows.push(repair.refund.id);
      refs.refunds.push(repair.refund);
      break;
    case 'update_refund':
      refs.refundRows.push(repair.refundId);
      break;
  }
  return dedupe(refs);
}

function dedupe(refs: EvidenceRefs): EvidenceRefs {
  const claims = new Map(refs.claims.map((c) => [claimKey(c.tenantId, c.key), c]));
  return {
    claims: [...claims.values()],
    payments: [...new Set(refs.payments)],
    charges: [...new Map(refs.charges.map((c) => [c.id, c])).values()],
    intents: [...new Set(refs.intents)],
    refundRows: [...new Set(refs.refundRows)],
    refunds: [...new Map(refs.refunds.map((r) => [r.id, r])).values()],
  };
}

/** The objects a step writes when applied: a later step that read one of them follows it. */
export function writesOf(repair: RepairPlan): string[] {
  switch (repair.kind) {
    case 'complete_claim':
      return [
        ...(repair.keepAnswer ? [] : [objectKey('claim', claimKey(repair.claim.tenantId, repair.claim.key))]),
        ...(repair.insertEffect ? [objectKey('payment', repair.charge.id)] : []),
      ];
    case 'release_claim':
      return [objectKey('claim', claimKey(repair.claim.tenantId, repair.claim.key))];
    case 'recreate_claim':
      return [
        ...(repair.withClaim ? [objectKey('claim', claimKey(repair.tenantId, repair.key))] : []),
        ...(repair.insertEffect ? [objectKey('payment', repair.charge.id)] : []),
      ];
    case 'update_effect':
      return [objectKey('payment', repair.effect.chargeId)];
    case 'refund_duplicates':
      return repair.refund.flatMap((c) => [objectKey('charge', c.id), objectKey('refund_intent', c.id)]);
    case 'record_refund':
      return [
        ...(repair.claim ? [objectKey('claim', claimKey(repair.claim.tenantId, repair.claim.key))] : []),
        objectKey('payment_refund', repair.refund.id),
      ];
    case 'update_refund':
      return [objectKey('payment_refund', repair.refundId)];
  }
}

/** Whether applying the repair moves money (a refund): only after a second person approved the plan. */
export function movesMoney(repair: RepairPlan): boolean {
  switch (repair.kind) {
    case 'refund_duplicates':
      return true;
    case 'complete_claim':
    case 'release_claim':
    case 'recreate_claim':
    case 'update_effect':
    case 'record_refund':
    case 'update_refund':
      return false;
  }
}
