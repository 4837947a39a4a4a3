import { claimSubject } from '../../domain/identity.js';
import type { IdentityFacts } from '../facts.js';
import { judgeClaimed } from './claimed.js';
import { judgeDuplicates } from './duplicates.js';
import { evidenceOf, isLiveLease, keptCharge, requestOf, storedAnswer } from './evidence.js';
import { judgePair, type PairVerdict } from './pairs.js';
import { homedByPair, type IdentityScope } from './scope.js';
import { judgeUnclaimed } from './unclaimed.js';
import type { JudgeContext, Judgement } from './types.js';

/**
 * One identity (account, tenant, key), from all of its evidence: first each payment
 * row against its own charge, then the key itself (with a claim, or without), then
 * everything no finding accounts for is `matched` or quiet. If any part waits on a
 * live writer or on Stripe's own word, the whole identity is deferred: nothing of it
 * is recorded or repaired on partial knowledge. Returns the ids of the charges in the
 * swept account it judged (or deferred).
 */
export function judgeIdentity(facts: IdentityFacts, ctx: JudgeContext, out: Judgement): string[] {
  const subject = claimSubject(facts.tenantId, facts.key);
  if (facts.claim && isLiveLease(facts.claim, ctx.now)) {
    out.deferred.push(subject);
    return facts.charges.filter((c) => c.account === facts.account).map((c) => c.id);
  }
  const local: Judgement = {
    ...out,
    findings: [],
    matched: [],
    quiet: { claims: [], charges: [], effects: [] },
    judgedSubjects: [],
    deferred: [],
  };
  local.judgedSubjects.push(subject);
  const evidence = evidenceOf(facts, ctx.retentionMs);
  const pairs = new Map<string, PairVerdict>();
  for (const effect of evidence.effects) {
    pairs.set(effect.chargeId, judgePair(effect, evidence.chargeById.get(effect.chargeId) ?? null, ctx, local));
  }
  const scope: IdentityScope = {
    facts,
    evidence,
    ctx,
    out: local,
    ids: { tenantId: facts.tenantId, key: facts.key },
    subject,
    pairs,
  };
  if (facts.claim) {
    const kept = keptCharge(evidence, requestOf(facts.claim));
    const homed = new Set(evidence.live.map((c) => c.id).filter((id) => homedByPair(scope, id)));
    judgeDuplicates(scope.ids, evidence, kept, homed, ctx, local);
    judgeClaimed(scope, facts.claim);
  } else {
    judgeUnclaimed(scope);
  }
  const judged = evidence.charges.map((c) => c.id);
  if (local.deferred.length > 0) {
    out.deferred.push(subject, ...local.deferred.filter((s) => s !== subject));
    return judged;
  }
  accountForTheRest(scope);
  out.findings.push(...local.findings);
  out.matched.push(...local.matched);
  out.quiet.claims.push(...local.quiet.claims);
  out.quiet.charges.push(...local.quiet.charges);
  out.quiet.effects.push(...local.quiet.effects);
  out.judgedSubjects.push(...local.judgedSubjects);
  return judged;
}

/**
 * Every object judged ends in exactly one place. What no finding accounts for is
 * `matched` when it is a charge whose payment row agrees with it (or a decline the
 * claim stored), and quiet otherwise (a released claim, a refunded extra, a decline
 * outside the library).
 */
function accountForTheRest(scope: IdentityScope): void {
  const { out, evidence, facts } = scope;
  const covered = { claims: new Set<string>(), charges: new Set<string>(), effects: new Set<string>() };
  for (const f of out.findings) {
    f.covers.claims.forEach((c) => covered.claims.add(c));
    f.covers.charges.forEach((c) => covered.charges.add(c));
    f.covers.effects.forEach((e) => covered.effects.add(e));
  }
  if (facts.claim && !covered.claims.has(scope.subject)) out.quiet.claims.push(scope.subject);
  const answer = facts.claim === null ? 'none' : storedAnswer(facts.claim);
  const declineStored = answer === 'failure' || answer === 'transient';
  for (const charge of evidence.charges) {
    if (covered.charges.has(charge.id)) continue;
    out.judgedSubjects.push(charge.id);
    const agrees = scope.pairs.get(charge.id) === 'agrees';
    if (agrees || (charge.status === 'failed' && declineStored && !scope.pairs.has(charge.id)))
      out.matched.push(charge.id);
    else out.quiet.charges.push(charge.id);
  }
  for (const effect of evidence.effects) {
    if (covered.effects.has(effect.chargeId)) continue;
    const verdict = scope.pairs.get(effect.chargeId);
    if (verdict === 'agrees' && evidence.charges.some((c) => c.id === effect.chargeId)) continue; // counted with its charge
    if (verdict === 'quiet' || verdict === 'agrees') out.quiet.effects.push(effect.chargeId);
  }
}
