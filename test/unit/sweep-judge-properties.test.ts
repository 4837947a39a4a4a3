import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChargeFact, ClaimFact, EffectFact, IdentityFacts } from '../../src/sweep/facts.js';
import { judgeSlice, type JudgeContext, type Judgement } from '../../src/sweep/judge/index.js';
import { factBuilders } from '../support/facts.js';
import { checkProperty } from '../support/properties.js';

/**
 * The judgement's rules as invariants over many random identities (pure, no I/O: thousands
 * per second). The same rules run through the real schema and sweep in
 * test/integration/sweep-properties.test.ts. Seeds and sizes: test/support/properties.ts.
 */

const NOW = new Date('2026-11-10T12:00:00Z');
const MIN = 60_000;
const ctx = (refundDuplicates: boolean): JudgeContext => factBuilders(NOW).context({ refundDuplicates });
const ago = (m: number) => new Date(NOW.getTime() - m * MIN);
const ACCOUNTS = ['platform', 'acct_1B'];

const chargeArb = (i: number) =>
  fc.record({
    id: fc.constant(`ch_${i}`),
    account: fc.constantFrom(...ACCOUNTS),
    created: fc.integer({ min: 1, max: 3 * 24 * 60 }).map(ago),
    amount: fc.constantFrom(1000, 1000, 2000, 100),
    amountCaptured: fc.constant(0),
    amountRefunded: fc.constantFrom(0, 0, 0, 1, 1000),
    currency: fc.constantFrom('usd', 'usd', 'eur'),
    status: fc.constantFrom('succeeded', 'succeeded', 'pending', 'failed'),
    captured: fc.boolean(),
    refunded: fc.boolean(),
    disputed: fc.constantFrom(false, false, true),
    paymentIntent: fc.constant(null),
    customer: fc.constantFrom('cus_1', 'cus_2', null),
    paymentMethod: fc.constantFrom('pm_1', 'pm_2'),
    tenantId: fc.constant('t'),
    idempotencyKey: fc.constant('k'),
  }) as fc.Arbitrary<ChargeFact>;

const identityArb: fc.Arbitrary<IdentityFacts> = fc
  .record({
    account: fc.constantFrom(...ACCOUNTS),
    claim: fc.option(
      fc.record({
        accountId: fc.constantFrom(null, 'acct_1B'),
        status: fc.constantFrom('in_flight', 'completed', 'released'),
        live: fc.constantFrom(false, false, false, true),
        createdMinutes: fc.integer({ min: 5, max: 3 * 24 * 60 }),
        responseOutcome: fc.constantFrom('success', 'declined', 'pending_action', null),
        responseStatus: fc.constantFrom(200, 201, 202, 402),
        responseChargeId: fc.constantFrom(null, 'ch_0', 'ch_9'),
        amount: fc.constantFrom(null, 1000, 2000),
        currency: fc.constantFrom('usd', 'eur'),
      }),
    ),
    claimElsewhere: fc.boolean(),
    tenantKnown: fc.boolean(),
    charges: fc
      .integer({ min: 0, max: 4 })
      .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => chargeArb(i)))),
    effectFor: fc.array(
      fc.record({
        index: fc.integer({ min: 0, max: 5 }),
        amountDelta: fc.constantFrom(0, 0, 0, 7),
        status: fc.constantFrom('as', 'failed', 'succeeded'),
      }),
      {
        maxLength: 3,
      },
    ),
  })
  .map((r) => {
    const claim: ClaimFact | null = r.claim
      ? {
          tenantId: 't',
          key: 'k',
          accountId: r.claim.accountId,
          status: r.claim.status as ClaimFact['status'],
          attempt: 1,
          lockedUntil:
            r.claim.status === 'in_flight'
              ? r.claim.live
                ? new Date(NOW.getTime() + MIN)
                : ago(r.claim.createdMinutes - 2)
              : null,
          createdAt: ago(r.claim.createdMinutes),
          updatedAt: ago(r.claim.createdMinutes),
          responseStatus: r.claim.status === 'completed' ? r.claim.responseStatus : null,
          responseOutcome:
            r.claim.status === 'completed' ? (r.claim.responseOutcome as ClaimFact['responseOutcome']) : null,
          responseChargeId: r.claim.responseChargeId,
          answerObject: null,
          answerStatus: null,
          answerMapped: null,
          amount: r.claim.amount,
          currency: r.claim.amount === null ? null : r.claim.currency,
          downstreamKey: 'd',
        }
      : null;
    const onAccount = claim && (claim.accountId ?? 'platform') === r.account ? claim : null;
    const charges = (r.charges as ChargeFact[]).map((c) => ({
      ...c,
      amountCaptured: c.status === 'succeeded' && c.captured ? c.amount : 0,
      refunded: c.amountRefunded >= c.amount,
    }));
    const effects: EffectFact[] = [];
    for (const e of r.effectFor) {
      const c = charges[e.index];
      const chargeId = c?.id ?? `ch_ghost_${e.index}`;
      if (effects.some((x) => x.chargeId === chargeId)) continue;
      effects.push({
        chargeId,
        tenantId: 't',
        idempotencyKey: 'k',
        accountId: r.account === 'platform' ? null : r.account,
        paymentIntentId: null,
        amount: (c?.amount ?? 1000) + e.amountDelta,
        currency: c?.currency ?? 'usd',
        status: e.status === 'as' ? (c?.status ?? 'succeeded') : (e.status as EffectFact['status']),
        amountRefunded: 0,
        disputed: false,
        createdAt: c?.created ?? ago(30),
      });
    }
    return {
      account: r.account,
      tenantId: 't',
      key: 'k',
      claim: onAccount,
      claimAccount:
        claim && !onAccount ? (claim.accountId ?? 'platform') : r.claimElsewhere && !claim ? 'acct_1Z' : null,
      tenantKnown: r.tenantKnown || effects.length > 0 || onAccount !== null,
      charges,
      effects,
    };
  });

const money = (c: ChargeFact) => c.status === 'succeeded' || c.status === 'pending';
const live = (c: ChargeFact) => money(c) && !(c.refunded || c.amountRefunded >= c.amount);
const earlier = (a: ChargeFact, b: ChargeFact) => a.created < b.created || (+a.created === +b.created && a.id < b.id);

function check(i: IdentityFacts, j: Judgement): void {
  const here = i.charges.filter((c) => c.account === i.account);
  const request =
    i.claim && i.claim.amount !== null && i.claim.currency !== null
      ? { amount: i.claim.amount, currency: i.claim.currency }
      : null;
  const matches = (c: ChargeFact) => !request || (c.amount === request.amount && c.currency === request.currency);
  if (j.deferred.length > 0) {
    expect(j.findings).toEqual([]);
    return;
  }
  // One home for every object.
  const homes = new Map<string, number>();
  const put = (what: string) => homes.set(what, (homes.get(what) ?? 0) + 1);
  j.matched.forEach((id) => put(`charge ${id}`));
  j.quiet.charges.forEach((id) => put(`charge ${id}`));
  j.quiet.claims.forEach((id) => put(`claim ${id}`));
  for (const f of j.findings) {
    f.covers.charges.forEach((id) => put(`charge ${id}`));
    f.covers.claims.forEach((id) => put(`claim ${id}`));
  }
  expect(
    [...homes].filter(([, n]) => n > 1),
    'two homes',
  ).toEqual([]);
  for (const c of here) expect(homes.has(`charge ${c.id}`), `${c.id} has no home`).toBe(true);
  if (i.claim) expect(homes.has('claim t\u241fk'), 'the claim has no home').toBe(true);

  for (const f of j.findings) {
    const r = f.repair;
    if (!r) continue;
    switch (r.kind) {
      case 'release_claim':
        expect(here.filter(money), 'released beside a money charge').toEqual([]);
        break;
      case 'complete_claim':
        expect(r.charge.account).toBe(i.account);
        expect(matches(r.charge), 'completed from a charge not matching the request').toBe(true);
        if (!request) expect(here.filter(money).length <= 1 || !money(r.charge)).toBe(true);
        break;
      case 'recreate_claim':
        expect(i.claim).toBeNull();
        expect(i.claimAccount).toBeNull();
        expect(i.tenantKnown).toBe(true);
        expect(r.charge.account).toBe(i.account);
        expect(here.filter(money).length).toBeLessThanOrEqual(1);
        break;
      case 'refund_duplicates': {
        expect(r.refund.map((c) => c.id)).not.toContain(r.keep.id);
        expect(matches(r.keep)).toBe(true);
        expect(
          here.filter((c) => live(c) && matches(c) && earlier(c, r.keep)),
          'a live matching charge earlier than the kept one',
        ).toEqual([]);
        for (const x of r.refund) {
          expect([x.amount, x.currency, x.customer, x.paymentMethod]).toEqual([
            r.keep.amount,
            r.keep.currency,
            r.keep.customer,
            r.keep.paymentMethod,
          ]);
          expect(x.disputed || x.amountRefunded > 0 || x.status !== 'succeeded').toBe(false);
        }
        break;
      }
      case 'update_effect':
        expect(r.charge.account).toBe(i.account);
        break;
    }
  }
}

describe('the judgement over random identities', () => {
  it('gives every object one home, and repairs only what the rules allow', async () => {
    await checkProperty(
      'sweep-judge-properties: judgement',
      { normal: 2_000, deep: 40_000 },
      [identityArb, fc.boolean()],
      (identity, refunds) => {
        check(identity, judgeSlice({ identities: [identity], looseCharges: [], looseEffects: [] }, ctx(refunds)));
      },
    );
  }, 600_000);
});
