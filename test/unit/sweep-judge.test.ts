import { describe, expect, it } from 'vitest';
import {
  judgeSlice,
  NOTHING_VERIFIED,
  identityKey,
  type JudgeContext,
  type Judgement,
} from '../../src/sweep/judge/index.js';
import type { ChargeFact, ClaimFact, IdentityFacts } from '../../src/sweep/facts.js';
import { ALL_VERIFIED, factBuilders } from '../support/facts.js';

/**
 * docs/judgement.md "The rules, in order", rule by rule. Every identity here is judged
 * with Stripe's own word already read (ALL_VERIFIED) unless a test is about that word.
 */

const NOW = new Date('2026-11-10T12:00:00Z');
const DAY = 86_400_000;
const SUBJECT = 'acme\u241fk1';

const { minutesAgo, claim, charge, effect, identity, context } = factBuilders(NOW);
const ctx: JudgeContext = context();
const inFlight = (over: Partial<ClaimFact> = {}) =>
  claim({
    status: 'in_flight',
    lockedUntil: minutesAgo(58),
    responseStatus: null,
    responseOutcome: null,
    responseChargeId: null,
    ...over,
  });
const judge = (identities: IdentityFacts[], over: Partial<JudgeContext> = {}) =>
  judgeSlice({ identities, looseCharges: [], looseEffects: [] }, { ...ctx, ...over });
const only = (i: IdentityFacts, over: Partial<JudgeContext> = {}) => {
  const j = judge([i], over);
  expect(j.findings.map((f) => f.category)).toHaveLength(1);
  return j.findings[0]!;
};
const categories = (j: Judgement) => j.findings.map((f) => [f.category, f.repair?.kind ?? null]);

describe('a payment row against its own charge', () => {
  it('agreeing → matched', () => {
    expect(judge([identity({ claim: claim(), charges: [charge()], effects: [effect()] })])).toMatchObject({
      findings: [],
      matched: ['ch_1'],
    });
  });
  it('no charge at Stripe → effect_without_charge, once Stripe itself says so', () => {
    const i = identity({ claim: claim(), effects: [effect()] });
    const before = judge([i], { verified: NOTHING_VERIFIED });
    expect(before).toMatchObject({ findings: [], deferred: ['acme\u241fk1', 'ch_1'] });
    expect(before.needs.charges).toEqual([{ account: 'platform', id: 'ch_1' }]);
    expect(only(i)).toMatchObject({ category: 'effect_without_charge', subject: 'ch_1', repair: null });
  });
  it('a failed row without a charge recorded no money: nothing to say', () => {
    expect(
      judge([
        identity({
          claim: claim({ responseOutcome: 'declined', responseStatus: 402 }),
          effects: [effect({ status: 'failed' })],
        }),
      ]).findings,
    ).toEqual([]);
  });
  it('amount or currency differ → amount_mismatch, nothing repaired', () => {
    expect(
      only(identity({ claim: claim(), charges: [charge({ amount: 999 })], effects: [effect({ amount: 999 - 1 })] })),
    ).toMatchObject({
      category: 'amount_mismatch',
      repair: null,
    });
    expect(
      only(
        identity({ claim: claim({ currency: 'eur' }), charges: [charge({ currency: 'eur' })], effects: [effect()] }),
      ),
    ).toMatchObject({
      category: 'amount_mismatch',
    });
  });
  it('refunded, disputed or another status at Stripe → status_drift, the row updated from Stripe', () => {
    expect(
      only(identity({ claim: claim(), charges: [charge({ amountRefunded: 400 })], effects: [effect()] })),
    ).toMatchObject({
      category: 'status_drift',
      repair: { kind: 'update_effect' },
    });
    expect(
      only(identity({ claim: claim(), charges: [charge({ disputed: true })], effects: [effect()] })),
    ).toMatchObject({ category: 'status_drift' });
  });
});

describe('a key with its claim on this account', () => {
  it('the kept charge without its payment row → claim_without_effect: payment inserted, claim completed', () => {
    for (const c of [inFlight(), claim({ status: 'released', responseStatus: null, responseOutcome: null }), claim()]) {
      expect(only(identity({ claim: c, charges: [charge()] }))).toMatchObject({
        category: 'claim_without_effect',
        subject: SUBJECT,
        repair: { kind: 'complete_claim', insertEffect: true, charge: { id: 'ch_1' } },
      });
    }
  });
  it('a charge made before the claim is still its evidence (a dashboard charge, then a worker died): never released', () => {
    const i = identity({
      claim: inFlight({ createdAt: minutesAgo(3 * 24 * 60) }),
      charges: [charge({ created: minutesAgo(4 * 24 * 60) })],
    });
    expect(only(i)).toMatchObject({ category: 'claim_without_effect', repair: { kind: 'complete_claim' } });
  });
  it('a payment row written before its claim is its evidence: matched, not repaired again', () => {
    const i = identity({
      claim: claim({ createdAt: minutesAgo(60) }),
      charges: [charge({ created: minutesAgo(90) })],
      effects: [effect({ createdAt: minutesAgo(90) })],
    });
    expect(judge([i])).toMatchObject({ findings: [], matched: ['ch_1'] });
  });
  it('evidence more than one retention before the claim belongs to an earlier use of the key', () => {
    const old = new Date(NOW.getTime() - 60 * 60_000 - 8 * DAY);
    const i = identity({
      claim: claim(),
      charges: [charge(), charge({ id: 'ch_old', created: old })],
      effects: [effect(), effect({ chargeId: 'ch_gone', createdAt: old })],
    });
    expect(judge([i])).toMatchObject({ findings: [], matched: ['ch_1'] });
  });
  it('a completed claim with another answer than success but a kept charge → completed from Stripe (claim_without_effect)', () => {
    expect(
      only(
        identity({
          claim: claim({ responseOutcome: 'pending_action', responseStatus: 202, responseChargeId: null }),
          charges: [charge()],
          effects: [effect()],
        }),
      ),
    ).toMatchObject({
      category: 'claim_without_effect',
      repair: { kind: 'complete_claim', insertEffect: false },
    });
  });
  it('a charge that does not match the request never completes the claim: amount_mismatch, claim left alone', () => {
    const f = only(identity({ claim: inFlight({ amount: 5000 }), charges: [charge({ amount: 100 })] }));
    expect(f).toMatchObject({ category: 'amount_mismatch', subject: 'ch_1', repair: null });
    expect(f.covers.claims).toEqual([SUBJECT]);
  });
  it('a claim that records no request is completed only from the only charge naming the key', () => {
    const noRequest = inFlight({ amount: null, currency: null });
    expect(only(identity({ claim: noRequest, charges: [charge()] }))).toMatchObject({
      repair: { kind: 'complete_claim' },
    });
    const two = judge([
      identity({ claim: noRequest, charges: [charge(), charge({ id: 'ch_2', amount: 70, created: minutesAgo(50) })] }),
    ]);
    expect(categories(two)).toEqual([
      ['duplicate_charge', null],
      ['claim_without_effect', null],
    ]);
    expect(two.findings[1]?.reason).toMatch(/no request and more than one charge/);
  });
  it('a decline matching the request on an expired claim → the failure is stored (claim_without_effect)', () => {
    expect(only(identity({ claim: inFlight(), charges: [charge({ status: 'failed' })] }))).toMatchObject({
      category: 'claim_without_effect',
      repair: { kind: 'complete_claim', charge: { status: 'failed' } },
    });
  });
  it('a stored decline with its failed charge → matched', () => {
    expect(
      judge([
        identity({
          claim: claim({ responseStatus: 402, responseOutcome: 'declined' }),
          charges: [charge({ status: 'failed' })],
        }),
      ]),
    ).toMatchObject({
      findings: [],
      matched: ['ch_1'],
    });
  });
  it('no charge at all → stale_claim, released only after Stripe’s own search found nothing', () => {
    const i = identity({ claim: inFlight() });
    const before = judge([i], { verified: NOTHING_VERIFIED });
    expect(before).toMatchObject({
      findings: [],
      deferred: [SUBJECT],
      needs: { identities: [{ account: 'platform', tenantId: 'acme', key: 'k1' }] },
    });
    const verified = {
      chargeIds: new Set<string>(),
      identities: new Set([identityKey('platform', 'acme', 'k1')]),
      unreadableCharges: new Map<string, string>(),
      unreadableNaming: new Map<string, string[]>(),
    };
    expect(only(i, { verified })).toMatchObject({
      category: 'stale_claim',
      repair: { kind: 'release_claim', claim: { attempt: 1 } },
    });
  });
  it("older than Stripe's 24 h idempotency window → stale_claim, never released (and no search needed)", () => {
    const f = only(identity({ claim: inFlight({ createdAt: minutesAgo(25 * 60) }) }), { verified: NOTHING_VERIFIED });
    expect(f).toMatchObject({ category: 'stale_claim', repair: null, reason: expect.stringMatching(/24 h/) });
  });
  it('a released claim with no charge needs nothing (the caller retries with the same downstream key)', () => {
    expect(
      judge([identity({ claim: claim({ status: 'released', responseStatus: null, responseOutcome: null }) })]).findings,
    ).toEqual([]);
  });
  it('a stored success with no charge and no payment → lost_effect, after Stripe’s search and a lookup of the named charge', () => {
    const i = identity({ claim: claim() });
    const before = judge([i], { verified: NOTHING_VERIFIED });
    expect(before.needs).toEqual({
      charges: [{ account: 'platform', id: 'ch_1' }],
      identities: [{ account: 'platform', tenantId: 'acme', key: 'k1' }],
    });
    expect(only(i)).toMatchObject({ category: 'lost_effect', repair: null });
  });
  it('success is read from the outcome, not from one status code: any 2xx naming a charge, for rows without one', () => {
    const legacy = claim({ responseOutcome: null, responseStatus: 201, responseChargeId: 'ch_x' });
    expect(only(identity({ claim: legacy }))).toMatchObject({ category: 'lost_effect' });
    const accepted = claim({ responseOutcome: null, responseStatus: 202, responseChargeId: null });
    expect(judge([identity({ claim: accepted })]).findings).toEqual([]);
  });
  it('a stored success whose only charge was declined → lost_effect (not matched)', () => {
    expect(only(identity({ claim: claim(), charges: [charge({ status: 'failed' })] }))).toMatchObject({
      category: 'lost_effect',
    });
  });
  it('a stored success with a payment row Stripe has no charge for → effect_without_charge, which also accounts for the claim', () => {
    const f = only(identity({ claim: claim(), effects: [effect()] }));
    expect(f).toMatchObject({ category: 'effect_without_charge' });
    expect(f.covers.claims).toEqual([SUBJECT]);
  });
  it('a kept charge whose payment row is recorded under another account is left open (charge ids are unique)', () => {
    expect(only(identity({ claim: inFlight(), charges: [charge({ recordedIn: 'acct_1Other' })] }))).toMatchObject({
      category: 'claim_without_effect',
      repair: null,
      reason: expect.stringMatching(/recorded under account acct_1Other/),
    });
    expect(only(identity({ charges: [charge({ recordedIn: 'acct_1Other' })] }))).toMatchObject({
      category: 'orphan_charge',
      repair: null,
    });
  });
  it('a live lease is not judged at all, and says it deferred', () => {
    const j = judge([
      identity({ claim: inFlight({ lockedUntil: new Date(NOW.getTime() + 1000) }), charges: [charge()] }),
    ]);
    expect(j).toMatchObject({ findings: [], matched: [], deferred: [SUBJECT] });
  });
  it('a lease ending exactly now is judged', () => {
    expect(judge([identity({ claim: inFlight({ lockedUntil: NOW }) })]).findings.map((f) => f.category)).toEqual([
      'stale_claim',
    ]);
  });
});

describe('duplicates', () => {
  const two = (over: Partial<ChargeFact> = {}) => [charge(), charge({ id: 'ch_2', created: minutesAgo(30), ...over })];
  it('two live money charges → duplicate_charge about the extras; the kept one is judged as the key’s charge', () => {
    const j = judge([identity({ claim: claim(), charges: two(), effects: [effect()] })]);
    expect(categories(j)).toEqual([['duplicate_charge', null]]);
    expect(j.findings[0]).toMatchObject({ subject: SUBJECT, chargeId: 'ch_1', details: { kept: 'ch_1', count: 2 } });
    expect(j.findings[0]?.covers.charges).toEqual(['ch_2']);
    expect(j.matched).toEqual(['ch_1']);
  });
  it('the kept charge is the earliest that matches the request, not the earliest', () => {
    const forged = charge({ id: 'ch_0', amount: 100, created: minutesAgo(90) });
    const j = judge(
      [identity({ claim: inFlight({ amount: 5000 }), charges: [forged, charge({ id: 'ch_real', amount: 5000 })] })],
      { refundDuplicates: true },
    );
    expect(categories(j)).toEqual([
      ['duplicate_charge', null],
      ['claim_without_effect', 'complete_claim'],
    ]);
    expect(j.findings[0]).toMatchObject({ details: { kept: 'ch_real', not_refundable: [{ id: 'ch_0' }] } });
    expect(j.findings[1]).toMatchObject({ repair: { charge: { id: 'ch_real' } } });
  });
  it('--refund-duplicates refunds only extras identical to the kept charge (amount, currency, customer, payment method)', () => {
    const identical = judge([identity({ claim: claim(), charges: two(), effects: [effect()] })], {
      refundDuplicates: true,
    });
    expect(identical.findings[0]).toMatchObject({
      repair: { kind: 'refund_duplicates', keep: { id: 'ch_1' }, refund: [{ id: 'ch_2' }] },
    });
    for (const differs of [
      { amount: 999 },
      { currency: 'eur' },
      { customer: 'cus_other' },
      { paymentMethod: 'pm_other' },
      { disputed: true },
      { amountRefunded: 10 },
    ]) {
      const j = judge(
        [identity({ claim: claim({ amount: null, currency: null }), charges: two(differs), effects: [effect()] })],
        { refundDuplicates: true },
      );
      expect(j.findings.find((f) => f.category === 'duplicate_charge')).toMatchObject({
        repair: null,
        reason: expect.stringMatching(/differ/),
      });
    }
  });
  it('no charge matching the request: nothing is kept, nothing refunded, a person decides', () => {
    const j = judge([identity({ claim: claim({ amount: 7 }), charges: two() })], { refundDuplicates: true });
    expect(j.findings.find((f) => f.category === 'duplicate_charge')).toMatchObject({
      repair: null,
      details: { kept: null },
    });
  });
  it('an extra refunded in full settles the duplicate', () => {
    expect(
      judge([
        identity({ claim: claim(), charges: two({ refunded: true, amountRefunded: 1000 }), effects: [effect()] }),
      ]),
    ).toMatchObject({
      findings: [],
      matched: ['ch_1'],
    });
  });
});

describe('a key without a claim on this account', () => {
  it('a payment row and its charge → effect_without_claim: the claim re-created, completed', () => {
    expect(only(identity({ charges: [charge()], effects: [effect()] }))).toMatchObject({
      category: 'effect_without_claim',
      subject: 'ch_1',
      repair: { kind: 'recreate_claim', withClaim: true, insertEffect: false },
    });
  });
  it('an effect older than the retention window has no claim by design: not a finding', () => {
    const old = new Date(NOW.getTime() - 8 * DAY);
    expect(
      judge([identity({ charges: [charge({ created: old })], effects: [effect({ createdAt: old })] })]).findings,
    ).toEqual([]);
  });
  it('the only charge naming a known tenant’s key → orphan_charge: claim and payment created', () => {
    expect(only(identity({ charges: [charge()] }))).toMatchObject({
      category: 'orphan_charge',
      repair: { kind: 'recreate_claim', withClaim: true, insertEffect: true },
    });
  });
  it('an orphan older than the claim retention: payment recorded, claim not re-created', () => {
    const old = new Date(NOW.getTime() - 8 * DAY);
    expect(only(identity({ charges: [charge({ created: old })] }))).toMatchObject({
      repair: { withClaim: false, insertEffect: true },
    });
  });
  it('two charges naming the key: duplicate_charge, and no claim is made from either', () => {
    const j = judge([identity({ charges: [charge(), charge({ id: 'ch_2', created: minutesAgo(30) })] })]);
    expect(categories(j)).toEqual([
      ['duplicate_charge', null],
      ['orphan_charge', null],
    ]);
  });
  it('metadata alone never creates a claim for a tenant with no claim and no payment on this account', () => {
    expect(
      only(identity({ account: 'acct_1Third', tenantKnown: false, charges: [charge({ account: 'acct_1Third' })] })),
    ).toMatchObject({
      category: 'unattributed_charge',
      repair: null,
      reason: expect.stringMatching(/no claim and no payment on account acct_1Third/),
    });
  });
  it('a charge naming a key whose claim is on another account → unattributed_charge; that claim is not touched', () => {
    const j = judge([
      identity({ account: 'acct_1Third', claimAccount: 'platform', charges: [charge({ account: 'acct_1Third' })] }),
    ]);
    expect(categories(j)).toEqual([['unattributed_charge', null]]);
    expect(j.findings[0]?.reason).toMatch(/claim of account platform/);
  });
  it('charges of the key in another account are never used for this one', () => {
    const j = judge([identity({ claim: inFlight(), charges: [charge({ account: 'acct_1Other' })] })]);
    expect(categories(j)).toEqual([['stale_claim', 'release_claim']]);
  });
});

describe('every object judged ends in exactly one place', () => {
  it('matched, a finding, or quiet: never two', () => {
    const j = judge([
      identity({
        claim: claim(),
        charges: [charge({ amountRefunded: 5 }), charge({ id: 'ch_2', created: minutesAgo(30) })],
        effects: [effect()],
      }),
    ]);
    const homes = [...j.matched, ...j.quiet.charges, ...j.findings.flatMap((f) => f.covers.charges)];
    expect(homes.sort()).toEqual(['ch_1', 'ch_2']);
    expect(categories(j)).toEqual([
      ['status_drift', 'update_effect'],
      ['duplicate_charge', null],
    ]);
  });
});

describe('stored answers in other writers’ shapes (docs/judgement.md "Stored answers")', () => {
  const charged = { answerObject: 'charge', answerStatus: 'succeeded', responseOutcome: null } as const;
  it('a stored Charge object with its payment row and charge → matched, nothing repaired', () => {
    const j = judge([
      identity({
        claim: claim({ ...charged, amount: null, currency: null }),
        charges: [charge()],
        effects: [effect()],
      }),
    ]);
    expect(j).toMatchObject({ findings: [], matched: ['ch_1'] });
  });
  it('a stored success without its payment row → the row is inserted and the answer kept as it is', () => {
    expect(only(identity({ claim: claim({ ...charged }), charges: [charge()] }))).toMatchObject({
      category: 'claim_without_effect',
      repair: { kind: 'complete_claim', insertEffect: true, keepAnswer: true },
    });
  });
  it('a stored pending action or transient failure is replaced with Stripe’s answer', () => {
    for (const over of [{ responseStatus: 202 }, { responseStatus: 503 }, { answerStatus: 'requires_action' }]) {
      expect(only(identity({ claim: claim({ responseOutcome: null, ...over }), charges: [charge()] }))).toMatchObject({
        repair: { kind: 'complete_claim', keepAnswer: false },
      });
    }
  });
  it('a stored failure while Stripe took the money → open, the answer not rewritten', () => {
    const f = only(identity({ claim: claim({ responseOutcome: null, responseStatus: 402 }), charges: [charge()] }));
    expect(f).toMatchObject({ category: 'claim_without_effect', repair: null });
    expect(f.reason).toMatch(/stored answer says the request failed \(HTTP 402\).*not rewritten/);
  });
  it("a writer's 201 'paid' with no payment row and no money → lost_effect (after Stripe's search)", () => {
    const paid = claim({ responseOutcome: null, responseStatus: 201, responseChargeId: null });
    expect(judge([identity({ claim: paid })], { verified: NOTHING_VERIFIED }).needs.identities).toHaveLength(1);
    expect(only(identity({ claim: paid }))).toMatchObject({ category: 'lost_effect', repair: null });
  });
  it('a payment row without tenant/key whose charge the stored answer names is judged once, with the key', () => {
    // The claim's request (EUR) does not match the charge (USD): amount_mismatch, and the row is not `matched` too.
    const j = judgeSlice(
      {
        identities: [
          identity({
            claim: claim({ currency: 'eur' }),
            charges: [charge({ tenantId: null, idempotencyKey: null })],
            effects: [effect({ tenantId: null, idempotencyKey: null })],
          }),
        ],
        looseCharges: [],
        looseEffects: [
          {
            effect: effect({ tenantId: null, idempotencyKey: null }),
            charge: charge({ tenantId: null, idempotencyKey: null }),
          },
        ],
      },
      ctx,
    );
    expect(j.matched).toEqual([]);
    expect(categories(j)).toEqual([['amount_mismatch', null]]);
  });
});

describe('evidence Stripe returns unreadable', () => {
  const unreadable = (naming: string[], charges: Record<string, string> = {}) => ({
    verified: {
      ...ALL_VERIFIED,
      unreadableCharges: new Map(Object.entries(charges)),
      unreadableNaming: new Map([[identityKey('platform', 'acme', 'k1'), naming]]),
    },
  });
  it('a search naming the key returns an unreadable charge → the claim is not released: open claim_without_effect', () => {
    const f = only(identity({ claim: inFlight() }), unreadable(['ch_bad'], { ch_bad: 'amount -1 is negative' }));
    expect(f).toMatchObject({
      category: 'claim_without_effect',
      repair: null,
      details: { unreadable: [{ id: 'ch_bad' }] },
    });
    expect(f.reason).toMatch(/cannot read \(ch_bad\).*not released/);
  });
  it('a stored success whose charge is unreadable → not lost_effect', () => {
    const f = only(
      identity({ claim: claim({ responseChargeId: 'ch_bad' }) }),
      unreadable([], { ch_bad: 'missing status' }),
    );
    expect(f).toMatchObject({ category: 'claim_without_effect', repair: null });
  });
  it('a payment row whose charge Stripe returns unreadable → a finding naming the charge, not effect_without_charge', () => {
    const j = judge(
      [identity({ claim: claim(), effects: [effect({ chargeId: 'ch_bad' })] })],
      unreadable([], { ch_bad: 'missing status' }),
    );
    expect(categories(j)).toContainEqual(['unattributed_charge', null]);
    expect(categories(j)).not.toContainEqual(['effect_without_charge', null]);
    expect(j.findings.find((f) => f.category === 'unattributed_charge')).toMatchObject({
      subject: 'ch_bad',
      covers: { effects: ['ch_bad'] },
    });
  });
});

describe('findings list their charges in one order', () => {
  it('oldest first, then by id, whatever order the rows came in', () => {
    const three = [
      charge({ id: 'ch_c', created: minutesAgo(30) }),
      charge({ id: 'ch_b', created: minutesAgo(50) }),
      charge({ id: 'ch_a', created: minutesAgo(30) }),
    ];
    for (const order of [three, [...three].reverse()]) {
      const f = judge([identity({ claim: claim({ responseChargeId: 'ch_b' }), charges: order })]).findings.find(
        (x) => x.category === 'duplicate_charge',
      );
      expect((f?.details.charges as Array<{ id: string }>).map((c) => c.id)).toEqual(['ch_b', 'ch_a', 'ch_c']);
      expect(f?.details.not_refundable).toEqual([]);
      expect(f?.details.refundable).toEqual(['ch_a', 'ch_c']);
    }
  });
});

describe('a decline whose payment row is recorded under another account', () => {
  it('stores the decline on the claim but adds no row: the charge id is taken there', () => {
    const f = only(
      identity({
        claim: inFlight({ amount: null, currency: null }),
        charges: [charge({ status: 'failed', recordedIn: 'acct_1B' })],
      }),
    );
    expect(f).toMatchObject({
      category: 'claim_without_effect',
      repair: { kind: 'complete_claim', insertEffect: false },
    });
  });
});
