import { accountName, claimSubject } from '../../domain/identity.js';
import type { ChargeFact, ClaimFact, EffectFact } from '../facts.js';
import type { ClaimVersion, Covers, Finding, FindingCategory, Judgement, RepairPlan } from './types.js';

/**
 * The one place findings are built: every situation hands over a category, what it
 * is about and what it accounts for; subjects, summaries and covers follow one rule.
 * Claim-level categories are about the key (subject `tenant␟key`), the others about
 * a charge (subject: the charge id).
 */

const KEY_LEVEL: ReadonlySet<FindingCategory> = new Set([
  'claim_without_effect',
  'stale_claim',
  'lost_effect',
  'duplicate_charge',
]);

export interface FindingInput {
  category: FindingCategory;
  tenantId: string | null;
  key: string | null;
  /** The charge the finding is about (key-level: the charge it is judged by, if any). */
  charge: ChargeFact | null;
  /** For charge-level findings without a charge (effect_without_charge): the effect's charge id. */
  chargeId?: string;
  repair?: RepairPlan | null;
  reason?: string;
  details?: Record<string, unknown>;
  covers: Partial<Covers>;
  /** Findings about a set of charges (duplicate_effect, suspected_duplicate): their subject names the set. */
  subject?: string;
  reference?: string;
  members?: string[];
}

export function finding(input: FindingInput): Finding {
  const chargeId = input.charge?.id ?? input.chargeId ?? null;
  const keyLevel = KEY_LEVEL.has(input.category);
  if (keyLevel && (input.tenantId === null || input.key === null))
    throw new Error(`${input.category} needs a tenant and key`);
  if (!keyLevel && chargeId === null && input.subject === undefined)
    throw new Error(`${input.category} needs a charge id`);
  return {
    ...(input.reference === undefined ? {} : { reference: input.reference }),
    ...(input.members === undefined ? {} : { members: input.members }),
    category: input.category,
    subject:
      input.subject ?? (keyLevel ? claimSubject(input.tenantId as string, input.key as string) : (chargeId as string)),
    chargeId,
    tenantId: input.tenantId,
    idempotencyKey: input.key,
    repair: input.repair ?? null,
    ...(input.reason ? { reason: input.reason } : {}),
    details: input.details ?? {},
    covers: {
      claims: input.covers.claims ?? [],
      charges: input.covers.charges ?? [],
      effects: input.covers.effects ?? [],
    },
  };
}

export function emptyJudgement(): Judgement {
  return {
    findings: [],
    matched: [],
    quiet: { claims: [], charges: [], effects: [] },
    judgedSubjects: [],
    deferred: [],
    needs: { charges: [], identities: [] },
    outcomesJudged: { references: [], suspectCharges: [] },
  };
}

export function versionOf(claim: ClaimFact): ClaimVersion {
  return { tenantId: claim.tenantId, key: claim.key, attempt: claim.attempt, status: claim.status };
}

export function chargeSummary(c: ChargeFact) {
  return {
    id: c.id,
    account: c.account,
    created: c.created.toISOString(),
    amount: c.amount,
    amount_refunded: c.amountRefunded,
    currency: c.currency,
    status: c.status,
    disputed: c.disputed,
    dispute_status: c.disputeStatus ?? null,
    payment_intent: c.paymentIntent,
    customer: c.customer,
    payment_method: c.paymentMethod,
  };
}

export function effectSummary(e: EffectFact) {
  return {
    charge_id: e.chargeId,
    amount: e.amount,
    amount_refunded: e.amountRefunded,
    currency: e.currency,
    status: e.status,
    disputed: e.disputed,
    dispute_status: e.disputeStatus ?? null,
    created_at: e.createdAt.toISOString(),
  };
}

export function claimSummary(c: ClaimFact) {
  return {
    status: c.status,
    attempt: c.attempt,
    account: accountName(c.accountId),
    created_at: c.createdAt.toISOString(),
    locked_until: c.lockedUntil?.toISOString() ?? null,
    response_status: c.responseStatus,
    response_outcome: c.responseOutcome,
    request: c.amount === null || c.currency === null ? null : { amount: c.amount, currency: c.currency },
  };
}
