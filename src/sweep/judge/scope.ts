import type { ChargeFact, EffectFact, IdentityFacts } from '../facts.js';
import type { Evidence } from './evidence.js';
import type { PairVerdict } from './pairs.js';
import type { JudgeContext, Judgement } from './types.js';

/** One identity being judged: its facts, its evidence and the verdicts of its payment rows. */
export interface IdentityScope {
  facts: IdentityFacts;
  evidence: Evidence;
  ctx: JudgeContext;
  out: Judgement;
  ids: { tenantId: string; key: string };
  subject: string;
  /** The verdict on each payment row of the identity, by charge id. */
  pairs: ReadonlyMap<string, PairVerdict>;
}

export function effectOf(scope: IdentityScope, charge: ChargeFact): EffectFact | null {
  return scope.evidence.effects.find((e) => e.chargeId === charge.id) ?? null;
}

/** The charge's payment row has a finding of its own, which accounts for the charge. */
export function homedByPair(scope: IdentityScope, chargeId: string): boolean {
  const verdict = scope.pairs.get(chargeId);
  return verdict === 'amount_mismatch' || verdict === 'status_drift' || verdict === 'unreadable';
}

/** The charge ids among `charges` that no payment-row finding accounts for. */
export function unhomed(scope: IdentityScope, charges: readonly ChargeFact[]): string[] {
  return charges.map((c) => c.id).filter((id) => !homedByPair(scope, id));
}

/** The payment row of `charge`, when it exists and no finding of its own accounts for it. */
export function unhomedEffect(scope: IdentityScope, charge: ChargeFact): string[] {
  const effect = effectOf(scope, charge);
  return effect && scope.pairs.get(effect.chargeId) === 'agrees' ? [effect.chargeId] : [];
}
