import { accountIdOf, accountName, claimKey } from '../domain/identity.js';
import type { ChargeFact, ClaimFact, EffectFact, IdentityFacts } from './facts.js';

/**
 * Builds a batch's identities from what its gather read, whichever way it read them (from
 * the mirror: facts-sql.ts; from the listing itself: listed-facts.ts): the keys with their
 * claims first, then their charges and payment rows, each charge and row once per identity,
 * and which charges a local record links to an identity (a payment row's charge id, the
 * charge its claim's stored answer names) that no lookup by metadata brought yet.
 */
export class IdentityGather {
  readonly identities = new Map<string, IdentityFacts>();
  readonly accountId: string | null;
  // charge id → identities linking it. Nearly always one: an array, not a Set per linked
  // charge (14,000 of them in a dense slice, kept to the gather's end).
  private readonly links = new Map<string, string[]>();

  constructor(readonly account: string) {
    this.accountId = accountIdOf(account);
  }

  /** One key with its claim, as the claims statement found it (`claim` null: none on this account). */
  addKey(tenantId: string, key: string, claim: ClaimFact | null, claimAccount: string | null, claimIsRefund: boolean) {
    const id = claimKey(tenantId, key);
    this.identities.set(id, {
      account: this.account,
      tenantId,
      key,
      claim,
      claimAccount,
      claimIsRefund,
      tenantKnown: false,
      charges: [],
      effects: [],
    });
    if (claim?.responseChargeId) this.link(claim.responseChargeId, id);
  }

  link(chargeId: string, id: string): void {
    const ids = this.links.get(chargeId);
    if (ids === undefined) this.links.set(chargeId, [id]);
    else if (!ids.includes(id)) ids.push(id);
  }

  /** The identities' tenants (each once) and their tenants and keys, in one order, for the statements' arrays. */
  arrays(): { tenants: string[]; keyTenants: string[]; keyKeys: string[] } {
    const all = [...this.identities.values()];
    const keyTenants = all.map((i) => i.tenantId);
    return { tenants: [...new Set(keyTenants)], keyTenants, keyKeys: all.map((i) => i.key) };
  }

  markKnown(known: ReadonlySet<string>): void {
    for (const identity of this.identities.values()) identity.tenantKnown = known.has(identity.tenantId);
  }

  /** A charge of the identity `id`, with its payment row when that row is this account's. */
  addCharge(id: string, charge: ChargeFact, payment: EffectFact | null): void {
    const identity = this.identities.get(id);
    if (!identity || identity.charges.some((c) => c.id === charge.id)) return;
    identity.charges.push(charge);
    const effect = payment !== null && payment.accountId === this.accountId ? payment : null;
    if (effect && !identity.effects.some((e) => e.chargeId === effect.chargeId)) identity.effects.push(effect);
  }

  /** A payment row of this account naming the identity's tenant and key: its effect, and a link to its charge. */
  addNamedEffect(effect: EffectFact): void {
    if (effect.tenantId === null || effect.idempotencyKey === null) return;
    const id = claimKey(effect.tenantId, effect.idempotencyKey);
    const identity = this.identities.get(id);
    if (!identity) return;
    if (!identity.effects.some((e) => e.chargeId === effect.chargeId)) identity.effects.push(effect);
    this.link(effect.chargeId, id);
  }

  /** Linked charges some identity does not hold yet: each with the identities that link it. */
  missingLinks(): Map<string, string[]> {
    const missing = new Map<string, string[]>();
    for (const [chargeId, ids] of this.links) {
      if (ids.some((id) => !this.identities.get(id)?.charges.some((c) => c.id === chargeId)))
        missing.set(chargeId, ids);
    }
    return missing;
  }
}

/** `recordedIn`: the account of a charge's payment row when it is not the charge's own. */
export function recordedIn(charge: { account: string }, payment: EffectFact | null): string | null {
  if (payment === null) return null;
  const paymentAccount = accountName(payment.accountId);
  return paymentAccount !== charge.account ? paymentAccount : null;
}
