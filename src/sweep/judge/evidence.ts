import type { ChargeFact, ClaimFact, EffectFact, IdentityFacts } from '../facts.js';

/**
 * Pure readings of the evidence, shared by every situation the judgement handles.
 * See README "How a key is judged".
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

export type StoredAnswer = 'none' | 'success' | 'failure' | 'pending_action';

/**
 * What the claim's stored answer says: from `response_outcome` when the writer
 * recorded it; otherwise any 2xx whose body names a charge is a success, another
 * 2xx is an answer still waiting on the customer, anything else a failure.
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
  const status = claim.responseStatus ?? 0;
  if (status >= 200 && status < 300) return claim.responseChargeId ? 'success' : 'pending_action';
  return 'failure';
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
  const all = [...chargeById.values()];
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
