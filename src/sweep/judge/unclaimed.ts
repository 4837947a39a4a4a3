import { accountIdOf } from '../../domain/identity.js';
import type { ChargeFact } from '../facts.js';
import { chargeSummary, effectSummary, finding } from './build.js';
import { judgeDuplicates } from './duplicates.js';
import { keptCharge, latest } from './evidence.js';
import { effectOf, homedByPair, unhomed, unhomedEffect, type IdentityScope } from './scope.js';

/**
 * An identity with no claim on the swept account. Metadata is written by whoever
 * charges (a connected account can write any), so it alone never makes a claim:
 * - the key's claim is on another account → its charges here are
 *   `unattributed_charge`, a payment row here is `effect_without_claim`, left open;
 * - the tenant has no claim and no payment on this account → `unattributed_charge`;
 * - otherwise the key's only charge makes the claim: with a payment row
 *   `effect_without_claim`, without one `orphan_charge` (claim + payment); with two
 *   or more charges `duplicate_charge`, and the kept one is left open for a person.
 */
export function judgeUnclaimed(scope: IdentityScope): void {
  const { facts } = scope;
  if (facts.claimAccount !== null) {
    return untrusted(
      scope,
      `metadata names a claim of account ${facts.claimAccount}, but the charge is in ${facts.account}`,
    );
  }
  if (facts.claimIsRefund) {
    return untrusted(scope, "metadata names a key whose claim is a refund's, not a charge's: a person decides");
  }
  if (!facts.tenantKnown) {
    return untrusted(
      scope,
      `tenant ${facts.tenantId} has no claim and no payment on account ${facts.account}: metadata alone never creates a claim`,
    );
  }
  const kept = keptCharge(scope.evidence, null);
  judgeDuplicates(
    scope.ids,
    scope.evidence,
    kept,
    new Set(scope.evidence.live.map((c) => c.id).filter((id) => homedByPair(scope, id))),
    scope.ctx,
    scope.out,
  );
  if (kept) return judgeOwnCharge(scope, kept, scope.evidence.money.length === 1);
  // Only declines: a declined payment row gets its claim back too (it replays the decline).
  const decline = latest(scope.evidence.failed.filter((c) => effectOf(scope, c)));
  if (decline) judgeOwnCharge(scope, decline, true);
}

/** The key's charge makes its claim again, when it is the only one and the claim is still within retention. */
function judgeOwnCharge(scope: IdentityScope, charge: ChargeFact, only: boolean): void {
  const { ctx, out } = scope;
  const effect = effectOf(scope, charge);
  const retentionStart = ctx.now.getTime() - ctx.retentionMs;
  const withinRetention = (effect?.createdAt ?? charge.created).getTime() >= retentionStart;
  const covers = { charges: unhomed(scope, [charge]), effects: unhomedEffect(scope, charge) };
  if (effect) {
    if (!withinRetention) return; // its claim expired as designed: not a finding
    // A payment row that disagrees with its charge on the amount says nothing a claim could stand for.
    const disagrees = scope.pairs.get(effect.chargeId) === 'amount_mismatch';
    const reason = !only
      ? 'more than one charge names the key: a person decides which one the claim stands for'
      : disagrees
        ? 'the payment row and its charge disagree on the amount: the claim is re-created once they agree'
        : undefined;
    out.findings.push(
      finding({
        category: 'effect_without_claim',
        ...scope.ids,
        charge,
        repair: reason ? null : recreate(scope, charge, effect.createdAt, { insertEffect: false, withClaim: true }),
        ...(reason ? { reason } : {}),
        details: { effect: effectSummary(effect), charge: chargeSummary(charge) },
        covers,
      }),
    );
    return;
  }
  if (charge.status === 'failed') return;
  const reason = !only
    ? 'more than one charge names the key: a person decides which one the claim stands for'
    : charge.recordedIn
      ? `the charge's payment row is recorded under account ${charge.recordedIn}: a person moves it`
      : !withinRetention
        ? 'charge older than the claim retention window: payment recorded, claim not re-created'
        : undefined;
  const repairable = only && !charge.recordedIn;
  out.findings.push(
    finding({
      category: 'orphan_charge',
      ...scope.ids,
      charge,
      repair: repairable
        ? recreate(scope, charge, charge.created, { insertEffect: true, withClaim: withinRetention })
        : null,
      ...(reason ? { reason } : {}),
      details: { charge: chargeSummary(charge) },
      covers,
    }),
  );
}

/** `createdAt`: the re-created claim's, the payment row's time when there is one, else the charge's. */
function recreate(
  scope: IdentityScope,
  charge: ChargeFact,
  createdAt: Date,
  what: { insertEffect: boolean; withClaim: boolean },
) {
  return {
    kind: 'recreate_claim' as const,
    ...scope.ids,
    accountId: accountIdOf(scope.facts.account),
    createdAt,
    charge,
    ...what,
  };
}

/** Charges whose metadata cannot be trusted here: reported, never used to make a claim. */
function untrusted(scope: IdentityScope, reason: string): void {
  for (const charge of scope.evidence.money) {
    const effect = effectOf(scope, charge);
    if (effect) {
      scope.out.findings.push(
        finding({
          category: 'effect_without_claim',
          ...scope.ids,
          charge,
          reason: `${reason}; the payment row stays without a claim until a person decides`,
          details: { effect: effectSummary(effect), charge: chargeSummary(charge) },
          covers: { charges: unhomed(scope, [charge]), effects: unhomedEffect(scope, charge) },
        }),
      );
      continue;
    }
    scope.out.findings.push(
      finding({
        category: 'unattributed_charge',
        ...scope.ids,
        charge,
        reason,
        details: { charge: chargeSummary(charge) },
        covers: { charges: unhomed(scope, [charge]) },
      }),
    );
  }
}
