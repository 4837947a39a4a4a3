import { claimSubject, type Category } from './categories.js';
import type { ChargeFact, ClaimFact, EffectFact, KeyGroup, LooseCharge, LooseEffect, SliceFacts } from './facts.js';

/**
 * The decision itself: facts in, findings and planned repairs out. No I/O, no clock
 * of its own; everything it needs is in the arguments. See README "Finding
 * categories" for the table this implements.
 */

export const STRIPE_IDEMPOTENCY_WINDOW_MS = 24 * 3_600_000;

export interface JudgeContext {
  now: Date;
  /** The longest claim lease: how long before its claim a key's charge can be. */
  leaseMs: number;
  /** Claims older than this are legitimately expired; a missing claim is not a finding. */
  retentionStart: Date;
  refundDuplicates: boolean;
}

/** The claim as it was read: a repair's compare-and-swap expects exactly this. */
export interface ClaimVersion {
  tenantId: string;
  key: string;
  createdAt: Date;
  attempt: number;
  status: ClaimFact['status'];
}

export type RepairPlan =
  /** Insert the effect from the charge and complete the claim with a replayable answer. */
  | { kind: 'complete_claim'; claim: ClaimVersion; charge: ChargeFact }
  /** Let the caller's retry run: the claim's attempt died before Stripe saw it. */
  | { kind: 'release_claim'; claim: ClaimVersion }
  /** Re-create a completed claim; with `charge`, also insert the effect (orphan charge). */
  | {
      kind: 'recreate_claim';
      tenantId: string;
      key: string;
      accountId: string | null;
      createdAt: Date;
      source: ChargeFact | EffectFact;
      insertEffectFrom: ChargeFact | null;
      withClaim: boolean;
    }
  /** Stripe owns refund, dispute and capture state: copy it onto the effect. */
  | { kind: 'update_effect'; effect: EffectFact; charge: ChargeFact }
  | { kind: 'refund_duplicates'; keep: ChargeFact; refund: ChargeFact[] };

export interface Finding {
  category: Exclude<Category, 'matched'>;
  subject: string;
  chargeId: string | null;
  tenantId: string | null;
  idempotencyKey: string | null;
  repair: RepairPlan | null;
  /** Why no repair, when the category normally has one. */
  reason?: string;
  details: Record<string, unknown>;
}

export interface Judgement {
  findings: Finding[];
  /** Charges that agree everywhere (by id, so a run can count each once across slices). */
  matched: string[];
  /** Every subject looked at: open findings among them that are no longer found get closed. */
  judgedSubjects: string[];
  /** Keys not judged because a writer holds them in a live lease: to be judged again later. */
  deferred: string[];
}

const MONEY: ReadonlySet<ChargeFact['status']> = new Set(['succeeded', 'pending']);

export function judgeSlice(facts: SliceFacts, ctx: JudgeContext): Judgement {
  const out: Judgement = { findings: [], matched: [], judgedSubjects: [], deferred: [] };
  for (const group of facts.groups) judgeGroup(group, ctx, out);
  for (const loose of facts.looseCharges) judgeLooseCharge(loose, out);
  for (const loose of facts.looseEffects) judgeLooseEffect(loose, out);
  return out;
}

export function isLiveLease(claim: ClaimFact, now: Date): boolean {
  return claim.status === 'in_flight' && claim.lockedUntil !== null && claim.lockedUntil.getTime() > now.getTime();
}

function judgeGroup(whole: KeyGroup, ctx: JudgeContext, out: Judgement): void {
  const { tenantId, key, claim } = whole;
  const subject = claimSubject(tenantId, key);
  // A live writer owns this key right now; judging it would race the writer.
  if (claim && isLiveLease(claim, ctx.now)) {
    out.deferred.push(subject);
    return;
  }
  out.judgedSubjects.push(subject);
  const group = claim ? ownedByClaim(whole, claim, ctx, out) : whole;

  const moneyCharges = group.charges.filter((c) => MONEY.has(c.status));
  const failedCharges = group.charges.filter((c) => c.status === 'failed');
  const effectFor = (charge: ChargeFact) => group.effects.find((e) => e.chargeId === charge.id) ?? null;
  const ids = { tenantId, idempotencyKey: key };
  let clean = true;

  for (const effect of group.effects) {
    const charge = whole.charges.find((c) => c.id === effect.chargeId) ?? null;
    out.judgedSubjects.push(effect.chargeId);
    if (!judgeEffectAgainstCharge(effect, charge, out)) clean = false;
  }

  let money = moneyCharges[0] ?? null;
  if (moneyCharges.length >= 2) {
    const keep = moneyCharges.find((c) => effectFor(c)) ?? earliest(moneyCharges);
    const refund = moneyCharges.filter((c) => c !== keep && !c.refunded);
    for (const c of moneyCharges) out.judgedSubjects.push(c.id);
    if (refund.length > 0) {
      out.findings.push({
        category: 'duplicate_charge',
        subject,
        chargeId: keep.id,
        ...ids,
        repair: ctx.refundDuplicates ? { kind: 'refund_duplicates', keep, refund } : null,
        reason: ctx.refundDuplicates ? undefined : 'refunds only with --refund-duplicates',
        details: { charges: moneyCharges.map(chargeSummary), kept: keep.id },
      });
      return;
    }
    // Every extra charge is refunded in full: the duplicate is settled. Judge the key by the charge kept.
    money = keep;
  }
  if (money) out.judgedSubjects.push(money.id);

  if (!claim) {
    const effectWithCharge = group.effects.find((e) => group.charges.some((c) => c.id === e.chargeId));
    if (effectWithCharge) {
      const charge = group.charges.find((c) => c.id === effectWithCharge.chargeId) as ChargeFact;
      if (effectWithCharge.createdAt.getTime() < ctx.retentionStart.getTime()) return; // claim expired, as designed
      out.findings.push({
        category: 'effect_without_claim',
        subject: effectWithCharge.chargeId,
        chargeId: effectWithCharge.chargeId,
        ...ids,
        repair: {
          kind: 'recreate_claim',
          tenantId,
          key,
          accountId: effectWithCharge.accountId,
          createdAt: effectWithCharge.createdAt,
          source: charge,
          insertEffectFrom: null,
          withClaim: true,
        },
        details: { effect: effectSummary(effectWithCharge) },
      });
      return;
    }
    if (money && !effectFor(money)) {
      const withinRetention = money.created.getTime() >= ctx.retentionStart.getTime();
      out.findings.push({
        category: 'orphan_charge',
        subject: money.id,
        chargeId: money.id,
        ...ids,
        repair: {
          kind: 'recreate_claim',
          tenantId,
          key,
          accountId: accountIdOf(money),
          createdAt: money.created,
          source: money,
          insertEffectFrom: money,
          withClaim: withinRetention,
        },
        reason: withinRetention ? undefined : 'charge older than the claim retention window: effect recorded, claim not re-created',
        details: { charge: chargeSummary(money) },
      });
      return;
    }
    if (clean && money) out.matched.push(money.id);
    return;
  }

  const claimVersion: ClaimVersion = {
    tenantId,
    key,
    createdAt: claim.createdAt,
    attempt: claim.attempt,
    status: claim.status,
  };

  // Stripe has the charge, the claim does not have its effect: record it, complete the claim.
  const claimWithoutEffect = (charge: ChargeFact): Finding => ({
    category: 'claim_without_effect',
    subject,
    chargeId: charge.id,
    ...ids,
    repair: { kind: 'complete_claim', claim: claimVersion, charge },
    details: { claim: claimSummary(claim), charge: chargeSummary(charge) },
  });

  if (money) {
    if (effectFor(money)) {
      if (clean) out.matched.push(money.id);
      return;
    }
    out.findings.push(claimWithoutEffect(money));
    return;
  }

  const failed = latest(failedCharges);
  if (failed && claim.status === 'in_flight' && !effectFor(failed)) {
    out.findings.push(claimWithoutEffect(failed));
    return;
  }
  if (failed) {
    if (clean) out.matched.push(failed.id); // a decline, stored on the claim and replayed
    return;
  }

  // Stripe has no charge for this key.
  if (claim.status === 'in_flight') {
    const age = ctx.now.getTime() - claim.createdAt.getTime();
    const safe = age < STRIPE_IDEMPOTENCY_WINDOW_MS;
    out.findings.push({
      category: 'stale_claim',
      subject,
      chargeId: null,
      ...ids,
      repair: safe ? { kind: 'release_claim', claim: claimVersion } : null,
      reason: safe
        ? undefined
        : "claim is older than Stripe's 24 h idempotency window: a retry now could charge twice, so it is not released",
      details: { claim: claimSummary(claim) },
    });
    return;
  }
  const storedSuccess = claim.status === 'completed' && claim.responseStatus === 200;
  if (storedSuccess && group.effects.length === 0) {
    out.findings.push({
      category: 'lost_effect',
      subject,
      chargeId: null,
      ...ids,
      repair: null,
      details: { claim: claimSummary(claim) },
    });
  }
}

/** Effect-level checks shared by every path; false when a finding was made. */
function judgeEffectAgainstCharge(effect: EffectFact, charge: ChargeFact | null, out: Judgement): boolean {
  const base = { chargeId: effect.chargeId, tenantId: effect.tenantId, idempotencyKey: effect.idempotencyKey };
  if (!charge) {
    if (effect.status === 'failed') return true; // no money recorded, none taken
    out.findings.push({
      category: 'effect_without_charge',
      subject: effect.chargeId,
      ...base,
      repair: null,
      details: { effect: effectSummary(effect) },
    });
    return false;
  }
  if (charge.amount !== effect.amount || charge.currency !== effect.currency) {
    out.findings.push({
      category: 'amount_mismatch',
      subject: effect.chargeId,
      ...base,
      repair: null,
      details: { effect: effectSummary(effect), charge: chargeSummary(charge) },
    });
    return false;
  }
  if (
    charge.amountRefunded !== effect.amountRefunded ||
    charge.disputed !== effect.disputed ||
    charge.status !== effect.status
  ) {
    out.findings.push({
      category: 'status_drift',
      subject: effect.chargeId,
      ...base,
      repair: { kind: 'update_effect', effect, charge },
      details: { effect: effectSummary(effect), charge: chargeSummary(charge) },
    });
    return false;
  }
  return true;
}

function judgeLooseCharge({ charge, effect }: LooseCharge, out: Judgement): void {
  out.judgedSubjects.push(charge.id);
  if (effect) {
    if (judgeEffectAgainstCharge(effect, charge, out)) out.matched.push(charge.id);
    return;
  }
  if (!MONEY.has(charge.status)) return;
  out.findings.push({
    category: 'unattributed_charge',
    subject: charge.id,
    chargeId: charge.id,
    tenantId: charge.tenantId,
    idempotencyKey: charge.idempotencyKey,
    repair: null,
    reason: 'no tenant/key metadata: cannot tell which claim it belongs to',
    details: { charge: chargeSummary(charge) },
  });
}

function judgeLooseEffect({ effect, charge }: LooseEffect, out: Judgement): void {
  out.judgedSubjects.push(effect.chargeId);
  if (judgeEffectAgainstCharge(effect, charge, out) && charge) out.matched.push(charge.id);
}

/**
 * The part of a key's history that belongs to its current claim. Charges in another
 * Stripe account than the claim's cannot be its charges (whoever can charge in a
 * connected account can write any metadata): they are reported, never used to
 * repair. Charges and effects from before the claim belong to an earlier use of the
 * key whose claim has expired, and were judged back then.
 */
function ownedByClaim(group: KeyGroup, claim: ClaimFact, ctx: JudgeContext, out: Judgement): KeyGroup {
  const account = claim.accountId ?? 'platform';
  const since = claim.createdAt.getTime() - ctx.leaseMs;
  const current = (at: Date) => at.getTime() >= since;
  for (const c of group.charges) {
    if (c.account === account || !MONEY.has(c.status) || group.effects.some((e) => e.chargeId === c.id)) continue;
    out.judgedSubjects.push(c.id);
    out.findings.push({
      category: 'unattributed_charge',
      subject: c.id,
      chargeId: c.id,
      tenantId: c.tenantId,
      idempotencyKey: c.idempotencyKey,
      repair: null,
      reason: `metadata names a claim of account ${account}, but the charge is in ${c.account}`,
      details: { charge: chargeSummary(c) },
    });
  }
  return {
    ...group,
    charges: group.charges.filter((c) => c.account === account && current(c.created)),
    effects: group.effects.filter((e) => current(e.createdAt)),
  };
}

function accountIdOf(charge: ChargeFact): string | null {
  return charge.account === 'platform' ? null : charge.account;
}

function earliest(charges: ChargeFact[]): ChargeFact {
  return charges.reduce((a, b) => (b.created < a.created || (+b.created === +a.created && b.id < a.id) ? b : a));
}

function latest(charges: ChargeFact[]): ChargeFact | null {
  if (charges.length === 0) return null;
  return charges.reduce((a, b) => (b.created > a.created || (+b.created === +a.created && b.id > a.id) ? b : a));
}

function chargeSummary(c: ChargeFact) {
  return {
    id: c.id,
    created: c.created.toISOString(),
    amount: c.amount,
    amount_refunded: c.amountRefunded,
    currency: c.currency,
    status: c.status,
    disputed: c.disputed,
    payment_intent: c.paymentIntent,
  };
}

function effectSummary(e: EffectFact) {
  return {
    charge_id: e.chargeId,
    amount: e.amount,
    amount_refunded: e.amountRefunded,
    currency: e.currency,
    status: e.status,
    disputed: e.disputed,
    created_at: e.createdAt.toISOString(),
  };
}

function claimSummary(c: ClaimFact) {
  return {
    status: c.status,
    attempt: c.attempt,
    created_at: c.createdAt.toISOString(),
    locked_until: c.lockedUntil?.toISOString() ?? null,
    response_status: c.responseStatus,
  };
}
