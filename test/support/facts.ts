import type { ChargeFact, ClaimFact, EffectFact, IdentityFacts } from '../../src/sweep/facts.js';
import type { JudgeContext } from '../../src/sweep/judge/index.js';
import type { ChargeRecord } from '../../testkit/stripe-double/charge-store.js';

/**
 * The judgement's inputs (src/sweep/facts.ts), for tests that judge by hand: one key
 * (acme/k1) on the platform account with a completed claim, its succeeded charge ch_1
 * and its payment row, all agreeing, dated an hour before `now`. A test passes only what
 * its case changes; a file with other defaults wraps these with them.
 */

const MIN = 60_000;
const DAY = 86_400_000;

/** Stripe's own word already read for every charge and identity: nothing left to verify. */
export const ALL_VERIFIED: JudgeContext['verified'] = {
  chargeIds: { has: () => true } as unknown as ReadonlySet<string>,
  identities: { has: () => true } as unknown as ReadonlySet<string>,
  unreadableCharges: new Map(),
  unreadableNaming: new Map(),
};

export function factBuilders(now: Date) {
  const minutesAgo = (m: number) => new Date(now.getTime() - m * MIN);
  return {
    minutesAgo,
    /** A week of claim retention, Stripe's day of idempotency, no refunds of duplicates, all verified. */
    context: (over: Partial<JudgeContext> = {}): JudgeContext => ({
      now,
      retentionMs: 7 * DAY,
      refundDuplicates: false,
      providerIdempotencyWindowMs: DAY,
      verified: ALL_VERIFIED,
      ...over,
    }),
    claim: (over: Partial<ClaimFact> = {}): ClaimFact => ({
      tenantId: 'acme',
      key: 'k1',
      accountId: null,
      status: 'completed',
      attempt: 1,
      lockedUntil: null,
      createdAt: minutesAgo(60),
      updatedAt: minutesAgo(59),
      responseStatus: 200,
      responseOutcome: 'success',
      responseChargeId: 'ch_1',
      answerObject: null,
      answerStatus: null,
      answerMapped: null,
      amount: 1000,
      currency: 'usd',
      downstreamKey: 'd',
      ...over,
    }),
    charge: (over: Partial<ChargeFact> = {}): ChargeFact => ({
      id: 'ch_1',
      account: 'platform',
      created: minutesAgo(59),
      amount: 1000,
      amountCaptured: 1000,
      amountRefunded: 0,
      currency: 'usd',
      status: 'succeeded',
      captured: true,
      refunded: false,
      disputed: false,
      paymentIntent: 'pi_1',
      customer: 'cus_1',
      paymentMethod: 'pm_1',
      tenantId: 'acme',
      idempotencyKey: 'k1',
      ...over,
    }),
    effect: (over: Partial<EffectFact> = {}): EffectFact => ({
      chargeId: 'ch_1',
      tenantId: 'acme',
      idempotencyKey: 'k1',
      accountId: null,
      paymentIntentId: 'pi_1',
      amount: 1000,
      currency: 'usd',
      status: 'succeeded',
      amountRefunded: 0,
      disputed: false,
      createdAt: minutesAgo(59),
      ...over,
    }),
    /** The key's identity with no evidence: pass the claim, charges and effects. */
    identity: (over: Partial<IdentityFacts> = {}): IdentityFacts => ({
      account: 'platform',
      tenantId: 'acme',
      key: 'k1',
      claim: null,
      claimAccount: null,
      tenantKnown: true,
      charges: [],
      effects: [],
      ...over,
    }),
  };
}

/** A charge as the Stripe double stores it (testkit/stripe-double): $1, succeeded, no metadata. */
export function doubleChargeRecord(id: string, created: number, account: string | null = null): ChargeRecord {
  return {
    id,
    account,
    created,
    amount: 100,
    amountCaptured: 100,
    amountRefunded: 0,
    currency: 'usd',
    status: 'succeeded',
    captured: true,
    disputed: false,
    paymentIntent: null,
    paymentMethod: null,
    customer: null,
    description: null,
    metadata: {},
    failureCode: null,
    failureMessage: null,
    declineCode: null,
  };
}
