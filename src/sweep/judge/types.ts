import type { Category } from '../categories.js';
import type { ChargeFact, ClaimFact, EffectFact } from '../facts.js';
import type { RefundStatus, StripeRefundFact } from './refunds.js';

export interface JudgeContext {
  now: Date;
  /** Claims and the mirror are kept this long; evidence more than this before a claim is an earlier use of its key. */
  retentionMs: number;
  refundDuplicates: boolean;
  /** Stripe's idempotency window: a claim older than this is never released (a retry could charge again). */
  providerIdempotencyWindowMs: number;
  /** What this run already re-read from Stripe itself (see docs/judgement.md "Stripe's own word"). */
  verified: Verified;
  /** How far duplicates of the outcome reach (duplicate_effect, suspected_duplicate); unset: not judged. */
  outcomes?: { duplicateLookbackMs: number; suspectWindowMs: number };
}

/** Re-reads from Stripe made this run; found charges are in the mirror by the time the judgement sees this. */
export interface Verified {
  /** Charge ids looked up by id (found or not). */
  chargeIds: ReadonlySet<string>;
  /** Identities whose charges were searched for by metadata, as `identityKey()`. */
  identities: ReadonlySet<string>;
  /** Charges Stripe answered that cannot be read, by id: the problem. */
  unreadableCharges: ReadonlyMap<string, string>;
  /** Per identity searched: the ids of unreadable charges the search returned (they name its key). */
  unreadableNaming: ReadonlyMap<string, readonly string[]>;
}

export const NOTHING_VERIFIED: Verified = {
  chargeIds: new Set(),
  identities: new Set(),
  unreadableCharges: new Map(),
  unreadableNaming: new Map(),
};

/** What must be re-read from Stripe before a verdict can stand. */
export interface VerificationNeeds {
  charges: Array<{ account: string; id: string }>;
  identities: Array<{ account: string; tenantId: string; key: string }>;
}

/**
 * The claim as it was read: a repair's compare-and-swap expects exactly this. Never
 * its created_at (src/sweep/repairs.ts): a Date keeps milliseconds, the row may not.
 */
export interface ClaimVersion {
  tenantId: string;
  key: string;
  attempt: number;
  status: ClaimFact['status'];
}

export type RepairPlan =
  /**
   * Complete the claim with the charge's answer; insert the effect unless it exists.
   * `keepAnswer`: the claim already stores a success, which stays as it is (only the
   * effect is inserted; the claim row is not written).
   */
  | { kind: 'complete_claim'; claim: ClaimVersion; charge: ChargeFact; insertEffect: boolean; keepAnswer: boolean }
  /** Let the caller's retry run: the claim's attempt died before Stripe saw it. */
  | { kind: 'release_claim'; claim: ClaimVersion }
  /** Re-create a completed claim from the key's only charge; insert the effect too when asked. */
  | {
      kind: 'recreate_claim';
      tenantId: string;
      key: string;
      accountId: string | null;
      createdAt: Date;
      charge: ChargeFact;
      insertEffect: boolean;
      /** False when the charge is older than the claim retention: only the effect is recorded. */
      withClaim: boolean;
    }
  /** Stripe owns refund, dispute and capture state: copy it onto the effect. */
  | { kind: 'update_effect'; effect: EffectFact; charge: ChargeFact }
  /** Refund extras identical to the kept charge (through the refund outbox, after the slice commits). */
  | { kind: 'refund_duplicates'; keep: ChargeFact; refund: ChargeFact[] }
  /**
   * Record a refund the application made: its payment_refunds row, and the claim completed
   * with Stripe's refund as its answer (`claim` null: the claim already stores it).
   */
  | { kind: 'record_refund'; refund: StripeRefundFact; claim: ClaimVersion | null }
  /** Stripe owns a refund's state: the row takes it (compare-and-swap on the state read). */
  | { kind: 'update_refund'; refundId: string; from: RefundStatus; to: RefundStatus };

/** What a finding (or `matched`) accounts for: every judged object has exactly one home. */
export interface Covers {
  /** Claims, by their identity subject (`tenant␟key`). */
  claims: string[];
  /** Charges, by id. */
  charges: string[];
  /** Payment rows, by charge id. */
  effects: string[];
}

export type FindingCategory = Exclude<Category, 'matched'>;

export interface Finding {
  category: FindingCategory;
  subject: string;
  chargeId: string | null;
  tenantId: string | null;
  idempotencyKey: string | null;
  repair: RepairPlan | null;
  /** Why no repair, when the category normally has one. */
  reason?: string;
  details: Record<string, unknown>;
  covers: Covers;
  /** duplicate_effect: the business reference its charges name. */
  reference?: string;
  /** Findings about a set of charges (duplicate_effect, suspected_duplicate): the set. */
  members?: string[];
  /** Repaired, yet open for a person (a refund that failed after it was recorded: the row is corrected, the customer is not refunded). */
  keepOpen?: boolean;
}

export interface Judgement {
  findings: Finding[];
  /** Charges that agree everywhere (by id). */
  matched: string[];
  /** Judged objects with nothing to report that are not counted as matched (e.g. a decline outside the library). */
  quiet: Covers;
  /** Every subject looked at: open findings among them that are no longer found get closed. */
  judgedSubjects: string[];
  /** Subjects not judged now: a writer holds them in a live lease, or Stripe's word is still needed. */
  deferred: string[];
  needs: VerificationNeeds;
  /**
   * What the outcome's duplicates were judged over: the references, and the charges whose
   * suspected sets were judged. Open duplicate findings about them no longer found are closed.
   */
  outcomesJudged: { references: Array<{ tenantId: string; reference: string }>; suspectCharges: string[] };
}
