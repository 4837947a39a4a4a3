import type { PaymentEffect, ResponseOutcome } from '../claims/claim-store.js';
import type { OutcomeFacts } from './outcome-facts.js';
import type { NormalizedCharge } from './provider.js';

/** What the sweep knows about one claim, charge or effect when it judges them. */

export interface ClaimFact {
  tenantId: string;
  key: string;
  accountId: string | null;
  status: 'in_flight' | 'completed' | 'released';
  attempt: number;
  lockedUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
  responseStatus: number | null;
  /** `response_outcome`; null on rows written before it existed or by other writers. */
  responseOutcome: ResponseOutcome | null;
  /** The charge the stored answer names, in any shape writers store (docs/judgement.md "Stored answers"). */
  responseChargeId: string | null;
  /** The stored body's own `object` and `status` fields (a Stripe Charge or PaymentIntent says what it is). */
  answerObject: string | null;
  answerStatus: string | null;
  /** What the configured mapping (SWEEPER_STORED_ANSWER) reads from the body; null when it has no say. */
  answerMapped: 'success' | 'pending_action' | 'failure' | null;
  /** The request the claim stands for; null when its writer did not record it. */
  amount: number | null;
  currency: string | null;
  downstreamKey: string;
}

/** A mirrored charge: the lister's NormalizedCharge, with `created` a Date and the platform named. */
export type ChargeFact = Omit<NormalizedCharge, 'created' | 'account' | 'livemode'> & {
  /** `platform` or `acct_…`. */
  account: string;
  created: Date;
  /**
   * A payment row for this charge exists under another account than the charge's
   * (charge ids are unique, so no row can be added here): that account's name.
   */
  recordedIn?: string | null;
  /** Where its dispute stands, as the newest dispute event told (stripe_disputes); null: no dispute event seen. */
  disputeStatus?: string | null;
};

/** A payment row as the sweep reads it: the same shape the claim library writes. */
export type EffectFact = PaymentEffect;

/**
 * Everything about one identity (account, tenant, key): its claim if the claim is on
 * this account, and every charge and payment naming the key or linked to it by a
 * local record, wherever they lie in time (the judgement sets aside only evidence
 * from an earlier use of the key, more than one retention before it).
 */
export interface IdentityFacts {
  /** `platform` or `acct_…`: the account being swept. */
  account: string;
  tenantId: string;
  key: string;
  claim: ClaimFact | null;
  /** The key's claim belongs to another account (claims are unique per tenant and key). */
  claimAccount: string | null;
  /** The key's claim stands for a refund, not a charge: a charge naming it cannot be its. */
  claimIsRefund?: boolean;
  /** The tenant has a claim or a payment row on this account: its metadata is not the only word. */
  tenantKnown: boolean;
  charges: ChargeFact[];
  effects: EffectFact[];
}

/** A charge without usable attribution metadata, with its effect if one records it. */
export interface LooseCharge {
  charge: ChargeFact;
  effect: EffectFact | null;
}

/** An effect without tenant/key, with the charge it names if the mirror has it. */
export interface LooseEffect {
  effect: EffectFact;
  charge: ChargeFact | null;
}

export interface SliceFacts {
  identities: IdentityFacts[];
  looseCharges: LooseCharge[];
  looseEffects: LooseEffect[];
  /** The outcome of the batch's charges: payments per reference, suspected duplicates (outcome-facts.ts). */
  outcomes?: OutcomeFacts;
}
