import type { ChargeFact, ClaimFact, EffectFact, IdentityFacts } from '../facts.js';

/**
 * Pure readings of the evidence, shared by every situation the judgement handles.
 * See docs/judgement.md "Evidence".
 */

/** Charges that took (or are taking) money: succeeded, or pending at Stripe. */
export function isMoney(charge: ChargeFact): boolean {
  return charge.status === 'succeeded' || charge.status === 'pending';
}

/** A money charge refunded in full no longer counts towards a duplicate. */
export function isFullyRefunded(charge: ChargeFact): boolean {
  return charge.refunded || charge.amountRefunded >= charge.amount;
}

export function isLiveLease(claim: ClaimFact, now: Date): boolean {
  return claim.status === 'in_flight' && claim.lockedUntil !== null && claim.lockedUntil.getTime() > now.getTime();
}

export type StoredAnswer = 'none' | 'success' | 'pending_action' | 'failure' | 'transient';

/** PaymentIntent statuses that mean no money yet, waiting on the customer or on the network. */
const PENDING_STATUSES: ReadonlySet<string> = new Set([
  'requires_action',
  'requires_confirmation',
  'processing',
  'pending',
]);
/** PaymentIntent statuses that mean the attempt failed or was given up: no money. */
const PI_FAILED: ReadonlySet<string> = new Set(['requires_payment_method', 'canceled']);
/** HTTP statuses of answers the claim library itself would have released, not stored. */
const TRANSIENT_HTTP: ReadonlySet<number> = new Set([408, 425, 429]);

/**
 * What the claim's stored answer says, read as its writer wrote it (docs/judgement.md
 * "Stored answers"), first rule that applies:
 * 1. not completed: no answer;
 * 2. `response_outcome`, when the claim library (or an import) recorded it;
 * 3. the configured mapping (SWEEPER_STORED_ANSWER), when its field holds a listed value;
 * 4. the HTTP status: 202 is a pending action; 408, 425, 429 and 5xx a transient failure;
 *    any other status outside 2xx a failure;
 * 5. a 2xx Stripe object says it itself: a Charge `failed` is a failure, any other Charge
 *    a success; a PaymentIntent `requires_payment_method` or `canceled` is a failure,
 *    `requires_action`, `requires_confirmation` or `processing` a pending action, any
 *    other a success;
 * 6. any other 2xx whose `status` is `requires_action`, `requires_confirmation`,
 *    `processing` or `pending` is a pending action; every other 2xx is a success.
 */
export function storedAnswer(claim: ClaimFact): StoredAnswer {
  if (claim.status !== 'completed') return 'none';
  switch (claim.responseOutcome) {
    case 'success':
      return 'success';
    case 'pending_action':
      return 'pending_action';
    case 'declined':
    case 'rejected':
      return 'failure';
    case null:
      break;
  }
  if (claim.answerMapped !== null) return claim.answerMapped;
  const http = claim.responseStatus ?? 0;
  if (http === 202) return 'pending_action';
  if (TRANSIENT_HTTP.has(http) || (http >= 500 && http < 600)) return 'transient';
  if (http < 200 || http >= 300) return 'failure';
  const status = claim.answerStatus;
  if (claim.answerObject === 'charge') return status === 'failed' ? 'failure' : 'success';
  if (claim.answerObject === 'payment_intent' && status !== null && PI_FAILED.has(status)) return 'failure';
  if (status !== null && PENDING_STATUSES.has(status)) return 'pending_action';
  return 'success';
}

export interface Request {
  amount: number;
  currency: string;
}

/** The request the claim stands for, when its writer recorded one. */
export function requestOf(claim: ClaimFact | null): Request | null {
  if (!claim || claim.amount === null || claim.currency === null) return null;
  return { amount: claim.amount, currency: claim.currency };
}

export function matchesRequest(charge: ChargeFact, request: Request | null): boolean {
  return request === null || (charge.amount === request.amount && charge.currency === request.currency);
}

/** Oldest first; ties by id, so every run picks the same one. */
export function byCreated(a: ChargeFact, b: ChargeFact): number {
  return a.created.getTime() - b.created.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export function earliest(charges: readonly ChargeFact[]): ChargeFact | null {
  return [...charges].sort(byCreated)[0] ?? null;
}

export function latest(charges: readonly ChargeFact[]): ChargeFact | null {
  return [...charges].sort(byCreated).at(-1) ?? null;
}

/** The evidence of one identity, split the ways every situation reads it. */
export interface Evidence {
  /** Every charge gathered (any account), by id: an effect is checked against its own charge. */
  chargeById: ReadonlyMap<string, ChargeFact>;
  /** Charges in the swept account: the only ones that may complete, release or create this identity's claim. */
  charges: ChargeFact[];
  /** Charges naming the key in another account: never used for this identity. */
  elsewhere: ChargeFact[];
  effects: EffectFact[];
  money: ChargeFact[];
  /** Money charges not refunded in full. */
  live: ChargeFact[];
  failed: ChargeFact[];
}

/**
 * Within the retention window a key names exactly one request, so every charge and
 * payment naming it is evidence whatever its timestamp. Only evidence from more than
 * one retention before the claim (or, without a claim, before the newest evidence)
 * belongs to an earlier use of the key, whose claim expired: it is set aside.
 */
export function evidenceOf(facts: IdentityFacts, retentionMs: number): Evidence {
  const times = [...facts.charges.map((c) => c.created.getTime()), ...facts.effects.map((e) => e.createdAt.getTime())];
  const anchor = facts.claim ? facts.claim.createdAt.getTime() : Math.max(...times, 0);
  const since = anchor - retentionMs;
  const chargeById = new Map<string, ChargeFact>();
  for (const c of facts.charges) if (c.created.getTime() >= since) chargeById.set(c.id, c);
  const effectById = new Map<string, EffectFact>();
  for (const e of facts.effects) if (e.createdAt.getTime() >= since) effectById.set(e.chargeId, e);
  // Oldest first (then by id), so what a finding lists does not follow the database's row order.
  const all = [...chargeById.values()].sort(byCreated);
  const charges = all.filter((c) => c.account === facts.account);
  const money = charges.filter(isMoney);
  return {
    chargeById,
    charges,
    elsewhere: all.filter((c) => c.account !== facts.account),
    effects: [...effectById.values()],
    money,
    live: money.filter((c) => !isFullyRefunded(c)),
    failed: charges.filter((c) => c.status === 'failed'),
  };
}

/**
 * The charge the key is judged by: the earliest money charge matching the request,
 * preferring one not refunded in full. Null when no money charge matches.
 */
export function keptCharge(evidence: Evidence, request: Request | null): ChargeFact | null {
  return (
    earliest(evidence.live.filter((c) => matchesRequest(c, request))) ??
    earliest(evidence.money.filter((c) => matchesRequest(c, request)))
  );
}
