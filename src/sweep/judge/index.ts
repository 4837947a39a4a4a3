import type { LooseCharge, LooseEffect, SliceFacts } from '../facts.js';
import { chargeSummary, emptyJudgement, finding } from './build.js';
import { findingKey, identityKey } from '../../domain/identity.js';
import { isMoney } from './evidence.js';
import { judgeIdentity } from './identity.js';
import { judgeReference, judgeSuspects } from './outcomes.js';
import { judgePair } from './pairs.js';
import type { Finding, JudgeContext, Judgement } from './types.js';

/**
 * The decision itself: facts in, findings, planned repairs and the reads still
 * needed from Stripe out. No I/O and no clock of its own. docs/judgement.md "The
 * rules, in order" is the table this implements; each situation has its own module:
 * pairs.ts (a payment row against its charge), claimed.ts, unclaimed.ts,
 * duplicates.ts; build.ts makes every finding.
 */
export function judgeSlice(facts: SliceFacts, ctx: JudgeContext): Judgement {
  const out = emptyJudgement();
  // A charge without metadata that a claim's stored answer links to its key is that
  // key's evidence: judged with it (or deferred with it), not a second time as loose.
  const withIdentity = new Set<string>();
  for (const identity of facts.identities) for (const id of judgeIdentity(identity, ctx, out)) withIdentity.add(id);
  for (const loose of facts.looseCharges) if (!withIdentity.has(loose.charge.id)) judgeLooseCharge(loose, ctx, out);
  // Likewise a payment row without tenant/key whose charge was judged with a key (linked
  // by the key's stored answer): that identity judged the row with its charge.
  for (const loose of facts.looseEffects)
    if (!withIdentity.has(loose.effect.chargeId)) judgeLooseEffect(loose, ctx, out);
  if (facts.outcomes && ctx.outcomes) judgeOutcomes(facts.outcomes, ctx.outcomes, out);
  out.findings = dedupe(out.findings);
  out.matched = [...new Set(out.matched)];
  out.needs = {
    charges: [...new Map(out.needs.charges.map((n) => [`${n.account}\u001f${n.id}`, n])).values()],
    identities: [...new Map(out.needs.identities.map((n) => [identityKey(n.account, n.tenantId, n.key), n])).values()],
  };
  return out;
}

/** A charge without tenant/key metadata: its payment row is checked; money without one is `unattributed_charge`. */
function judgeLooseCharge({ charge, effect }: LooseCharge, ctx: JudgeContext, out: Judgement): void {
  out.judgedSubjects.push(charge.id);
  if (effect) {
    if (judgePair(effect, charge, ctx, out) === 'agrees') out.matched.push(charge.id);
    return;
  }
  if (!isMoney(charge)) {
    out.quiet.charges.push(charge.id);
    return;
  }
  out.findings.push(
    finding({
      category: 'unattributed_charge',
      tenantId: charge.tenantId,
      key: charge.idempotencyKey,
      charge,
      reason: 'no tenant/key metadata: cannot tell which claim it belongs to',
      details: { charge: chargeSummary(charge) },
      covers: { charges: [charge.id] },
    }),
  );
}

/** A payment row without tenant/key: checked against its own charge only. */
function judgeLooseEffect({ effect, charge }: LooseEffect, ctx: JudgeContext, out: Judgement): void {
  if (judgePair(effect, charge, ctx, out) === 'agrees' && charge) out.matched.push(charge.id);
}

/** The outcome: payments per reference (duplicate_effect), and suspected duplicates without one. */
function judgeOutcomes(
  facts: NonNullable<SliceFacts['outcomes']>,
  ctx: NonNullable<JudgeContext['outcomes']>,
  out: Judgement,
): void {
  for (const group of facts.references) {
    judgeReference(group, facts.verdicts, ctx, out);
    out.outcomesJudged.references.push({ tenantId: group.tenantId, reference: group.reference });
  }
  judgeSuspects(facts.suspects, facts.verdicts, ctx, out);
  out.outcomesJudged.suspectCharges.push(...facts.suspects.map((c) => c.id));
}

/** One finding per (category, subject): an object reached twice (by a key and as loose) is reported once. */
function dedupe(findings: Finding[]): Finding[] {
  const seen = new Map<string, Finding>();
  for (const f of findings) {
    const id = findingKey(f.category, f.subject);
    const first = seen.get(id);
    if (!first) {
      seen.set(id, f);
      continue;
    }
    first.covers.claims.push(...f.covers.claims.filter((c) => !first.covers.claims.includes(c)));
    first.covers.charges.push(...f.covers.charges.filter((c) => !first.covers.charges.includes(c)));
    first.covers.effects.push(...f.covers.effects.filter((c) => !first.covers.effects.includes(c)));
  }
  return [...seen.values()];
}

export { NOTHING_VERIFIED } from './types.js';
export type {
  ClaimVersion,
  Covers,
  Finding,
  FindingCategory,
  JudgeContext,
  Judgement,
  RepairPlan,
  Verified,
  VerificationNeeds,
} from './types.js';
export { isLiveLease } from './evidence.js';
export { identityKey } from '../../domain/identity.js';
