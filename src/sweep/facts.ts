import type { PaymentEffect } from '../claims/claim-store.js';
import type { NormalizedCharge } from '../stripe/types.js';

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
  downstreamKey: string;
}

/** A mirrored charge: the lister's NormalizedCharge, with `created` a Date and the platform named. */
export type ChargeFact = Omit<NormalizedCharge, 'created' | 'account' | 'livemode'> & {
  /** `platform` or `acct_…`. */
  account: string;
  created: Date;
};

/** A payment row as the sweep reads it: the same shape the claim library writes. */
export type EffectFact = PaymentEffect;

/** Everything about one (tenant, key): its claim, the charges Stripe has for it, the local effects. */
export interface KeyGroup {
  tenantId: string;
  key: string;
  claim: ClaimFact | null;
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
  groups: KeyGroup[];
  looseCharges: LooseCharge[];
  looseEffects: LooseEffect[];
}
