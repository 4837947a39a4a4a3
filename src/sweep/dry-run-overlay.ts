import type { ChargeFact, ClaimFact, EffectFact, IdentityFacts, SliceFacts } from './facts.js';
import { accountIdOf, accountName, claimKey } from '../domain/identity.js';
import type { Finding } from './judge/index.js';
import { responseFromCharge, type RepairOutcome } from './repairs.js';

/**
 * A dry run undoes each slice's repairs at once (so no lock outlives the slice), but
 * a later slice of the same run must see what a real run would see there: the claims
 * completed, released or re-created, the payments recorded, the refunds made. This
 * keeps the would-be repairs in memory (one entry per repair, not per charge) and lays
 * them over the facts of later slices, so a dry run counts exactly as a real run.
 */
export class DryRunOverlay {
  private readonly claims = new Map<string, ClaimFact>();
  private readonly effects = new Map<string, EffectFact>();
  private readonly refunded = new Set<string>();

  /**
   * One overlay per dry run, whatever its accounts (claims are unique per tenant and key
   * across accounts). `account`: the account the batch judged; every claim it completes
   * or releases is on that account.
   */
  record(repairs: ReadonlyMap<Finding, RepairOutcome>, refunds: readonly Finding[], now: Date, account: string): void {
    const accountId = accountIdOf(account);
    for (const finding of repairs.keys()) this.recordOne(finding, now, accountId);
    for (const finding of refunds) {
      if (finding.repair?.kind === 'refund_duplicates') for (const c of finding.repair.refund) this.refunded.add(c.id);
    }
  }

  /**
   * Whether a repair acts on a claim or payment row that exists only in this overlay
   * (re-created, completed or inserted by an earlier batch of this dry run, rolled back
   * since): the database cannot run it, so the dry run counts it as a real run would
   * have run it, on the row the earlier repair left.
   */
  holdsTargetOf(finding: Finding): boolean {
    const repair = finding.repair;
    switch (repair?.kind) {
      case 'complete_claim':
      case 'release_claim':
        return this.claims.has(claimKey(repair.claim.tenantId, repair.claim.key));
      case 'recreate_claim':
        return this.claims.has(claimKey(repair.tenantId, repair.key)) || this.effects.has(repair.charge.id);
      case 'update_effect':
        return this.effects.has(repair.effect.chargeId);
      default:
        return false;
    }
  }

  apply(facts: SliceFacts): SliceFacts {
    if (this.claims.size === 0 && this.effects.size === 0 && this.refunded.size === 0) return facts;
    return {
      ...facts,
      identities: facts.identities.map((i) => this.applyIdentity(i)),
      looseCharges: facts.looseCharges.map((l) => ({
        charge: this.charge(l.charge),
        effect: l.effect ? this.effect(l.effect) : (this.effects.get(l.charge.id) ?? null),
      })),
      looseEffects: facts.looseEffects.map((l) => ({
        effect: this.effect(l.effect),
        charge: l.charge ? this.charge(l.charge) : null,
      })),
    };
  }

  private recordOne(finding: Finding, now: Date, accountId: string | null): void {
    const repair = finding.repair;
    if (!repair) return;
    switch (repair.kind) {
      // A completed or released claim is still in the database (only this batch's writes
      // were undone), so later batches read it and take from here only what changed
      // (changedFields): a placeholder's own times never show.
      case 'complete_claim': {
        if (repair.keepAnswer) {
          // The claim stays exactly as read; only its payment row is added.
          if (repair.insertEffect)
            this.effects.set(repair.charge.id, effectFrom(repair.charge, repair.claim.tenantId, repair.claim.key));
          return;
        }
        const key = claimKey(repair.claim.tenantId, repair.claim.key);
        const claim = this.claims.get(key);
        const response = responseFromCharge(repair.charge);
        this.claims.set(key, {
          ...(claim ?? {
            ...placeholderClaim(repair.claim.tenantId, repair.claim.key, repair.charge, now),
            accountId,
          }),
          status: 'completed',
          lockedUntil: null,
          responseStatus: response.status,
          responseOutcome: response.outcome,
          responseChargeId: repair.charge.id,
          answerObject: null,
          answerStatus: null,
          answerMapped: null,
          updatedAt: now,
        });
        if (repair.insertEffect)
          this.effects.set(repair.charge.id, effectFrom(repair.charge, repair.claim.tenantId, repair.claim.key));
        return;
      }
      case 'release_claim': {
        const key = claimKey(repair.claim.tenantId, repair.claim.key);
        this.claims.set(key, {
          ...(this.claims.get(key) ?? released(repair.claim, accountId, now)),
          status: 'released',
          lockedUntil: null,
          updatedAt: now,
        });
        return;
      }
      case 'recreate_claim': {
        if (repair.withClaim) {
          const response = responseFromCharge(repair.charge);
          this.claims.set(claimKey(repair.tenantId, repair.key), {
            ...placeholderClaim(repair.tenantId, repair.key, repair.charge, repair.createdAt),
            accountId: repair.accountId,
            responseStatus: response.status,
            responseOutcome: response.outcome,
          });
        }
        if (repair.insertEffect)
          this.effects.set(repair.charge.id, effectFrom(repair.charge, repair.tenantId, repair.key));
        return;
      }
      case 'update_effect':
        this.effects.set(repair.effect.chargeId, {
          ...repair.effect,
          status: repair.charge.status,
          amountRefunded: repair.charge.amountRefunded,
          disputed: repair.charge.disputed,
          disputeStatus: repair.charge.disputeStatus ?? repair.effect.disputeStatus ?? null,
        });
        return;
      case 'refund_duplicates':
      case 'record_refund':
      case 'update_refund':
        return;
    }
  }

  private applyIdentity(identity: IdentityFacts): IdentityFacts {
    const overlaid = this.claims.get(claimKey(identity.tenantId, identity.key));
    let { claim, claimAccount, tenantKnown } = identity;
    if (overlaid) {
      const here = accountName(overlaid.accountId) === identity.account;
      // The overlay knows only what a repair changed; the rest of a claim is what was read.
      claim = here ? { ...(claim ?? overlaid), ...changedFields(overlaid) } : claim;
      if (!here && !claim) claimAccount = accountName(overlaid.accountId);
    }
    if (!tenantKnown) {
      tenantKnown = [...this.claims.values()].some(
        (c) => c.tenantId === identity.tenantId && accountName(c.accountId) === identity.account,
      );
    }
    const effects = new Map(identity.effects.map((e) => [e.chargeId, this.effect(e)]));
    for (const [id, effect] of this.effects) {
      const named =
        effect.tenantId === identity.tenantId &&
        effect.idempotencyKey === identity.key &&
        accountName(effect.accountId) === identity.account;
      if (named && !effects.has(id)) effects.set(id, effect);
    }
    return {
      ...identity,
      claim,
      claimAccount,
      tenantKnown,
      charges: identity.charges.map((c) => this.charge(c)),
      effects: [...effects.values()],
    };
  }

  private effect(e: EffectFact): EffectFact {
    return this.effects.get(e.chargeId) ?? e;
  }

  private charge(c: ChargeFact): ChargeFact {
    return this.refunded.has(c.id) ? { ...c, refunded: true, amountRefunded: c.amount } : c;
  }
}

/** The fields a repair changes; the others stay as read. */
function changedFields(c: ClaimFact): Partial<ClaimFact> {
  return {
    status: c.status,
    lockedUntil: c.lockedUntil,
    responseStatus: c.responseStatus,
    responseOutcome: c.responseOutcome,
    responseChargeId: c.responseChargeId,
    answerObject: c.answerObject,
    answerStatus: c.answerStatus,
    answerMapped: c.answerMapped,
    updatedAt: c.updatedAt,
  };
}

function placeholderClaim(tenantId: string, key: string, charge: ChargeFact, createdAt: Date): ClaimFact {
  return {
    tenantId,
    key,
    accountId: accountIdOf(charge.account),
    status: 'completed',
    attempt: 1,
    lockedUntil: null,
    createdAt,
    updatedAt: createdAt,
    responseStatus: 200,
    responseOutcome: 'success',
    responseChargeId: charge.id,
    answerObject: null,
    answerStatus: null,
    answerMapped: null,
    amount: charge.amount,
    currency: charge.currency,
    downstreamKey: '',
  };
}

function released(
  claim: { tenantId: string; key: string; attempt: number },
  accountId: string | null,
  createdAt: Date,
): ClaimFact {
  return {
    tenantId: claim.tenantId,
    key: claim.key,
    accountId,
    status: 'released',
    attempt: claim.attempt,
    lockedUntil: null,
    createdAt,
    updatedAt: createdAt,
    responseStatus: null,
    responseOutcome: null,
    responseChargeId: null,
    answerObject: null,
    answerStatus: null,
    answerMapped: null,
    amount: null,
    currency: null,
    downstreamKey: '',
  };
}

function effectFrom(charge: ChargeFact, tenantId: string, key: string): EffectFact {
  return {
    chargeId: charge.id,
    tenantId,
    idempotencyKey: key,
    accountId: accountIdOf(charge.account),
    paymentIntentId: charge.paymentIntent,
    amount: charge.amount,
    currency: charge.currency,
    status: charge.status,
    amountRefunded: charge.amountRefunded,
    disputed: charge.disputed,
    createdAt: charge.created,
  };
}
