import { accountName } from '../../domain/identity.js';
import { MALFORMED_CHARGE_CATEGORY } from '../categories.js';
import type { ChargeFact, EffectFact } from '../facts.js';
import { chargeSummary, effectSummary, finding } from './build.js';
import type { JudgeContext, Judgement } from './types.js';

/**
 * A payment row against its own charge (by id): the checks every path shares.
 * - no charge in the row's own account: a failed row recorded no money (nothing to
 *   say); any other row is `effect_without_charge`, raised only once Stripe itself
 *   said the charge does not exist there (looked up by id this run), never from the
 *   mirror alone; a charge Stripe returned unreadable is a finding naming it instead;
 * - amount or currency differ: `amount_mismatch` (Stripe shows what was charged);
 * - refund, dispute or status differ: `status_drift`, repaired from the charge.
 */
export type PairVerdict =
  'agrees' | 'amount_mismatch' | 'status_drift' | 'effect_without_charge' | 'unreadable' | 'quiet' | 'deferred';

export function judgePair(
  effect: EffectFact,
  found: ChargeFact | null,
  ctx: JudgeContext,
  out: Judgement,
): PairVerdict {
  const ids = { tenantId: effect.tenantId, key: effect.idempotencyKey };
  // A row recorded in account B for a charge Stripe has in account A: B has no such charge.
  const charge = found && found.account === accountName(effect.accountId) ? found : null;
  out.judgedSubjects.push(effect.chargeId);
  if (!charge) {
    if (effect.status === 'failed') {
      out.quiet.effects.push(effect.chargeId);
      return 'quiet';
    }
    if (!ctx.verified.chargeIds.has(effect.chargeId)) {
      out.needs.charges.push({ account: accountName(effect.accountId), id: effect.chargeId });
      out.deferred.push(effect.chargeId);
      return 'deferred';
    }
    const problem = ctx.verified.unreadableCharges.get(effect.chargeId);
    if (problem !== undefined) {
      // Stripe has the charge but it cannot be read: not a missing charge, and nothing to compare.
      out.findings.push(
        finding({
          category: MALFORMED_CHARGE_CATEGORY,
          ...ids,
          charge: null,
          chargeId: effect.chargeId,
          reason: `Stripe returned this charge without what the sweep needs (${problem}); it cannot be judged`,
          details: { malformed: problem, effect: effectSummary(effect) },
          covers: { effects: [effect.chargeId], charges: [effect.chargeId] },
        }),
      );
      return 'unreadable';
    }
    out.findings.push(
      finding({
        category: 'effect_without_charge',
        ...ids,
        charge: null,
        chargeId: effect.chargeId,
        reason: 'Stripe has no charge with this id (looked up by id)',
        details: { effect: effectSummary(effect) },
        covers: { effects: [effect.chargeId] },
      }),
    );
    return 'effect_without_charge';
  }
  const covers = { effects: [effect.chargeId], charges: [charge.id] };
  if (charge.amount !== effect.amount || charge.currency !== effect.currency) {
    out.findings.push(
      finding({
        category: 'amount_mismatch',
        ...ids,
        charge,
        reason: 'the payment row and the charge disagree on amount or currency',
        details: { effect: effectSummary(effect), charge: chargeSummary(charge) },
        covers,
      }),
    );
    return 'amount_mismatch';
  }
  if (stateDiffers(charge, effect)) {
    out.findings.push(
      finding({
        category: 'status_drift',
        ...ids,
        charge,
        repair: { kind: 'update_effect', effect, charge },
        details: { effect: effectSummary(effect), charge: chargeSummary(charge) },
        covers,
      }),
    );
    return 'status_drift';
  }
  return 'agrees';
}

/** Refunded, disputed or captured since; or the newest dispute event says the dispute stands elsewhere. */
function stateDiffers(charge: ChargeFact, effect: EffectFact): boolean {
  const dispute = charge.disputeStatus ?? null;
  return (
    charge.amountRefunded !== effect.amountRefunded ||
    charge.disputed !== effect.disputed ||
    charge.status !== effect.status ||
    (dispute !== null && dispute !== (effect.disputeStatus ?? null))
  );
}
