import { describe, expect, it } from 'vitest';
import { judgeSlice, type JudgeContext } from '../../src/sweep/classify.js';
import type { ChargeFact, ClaimFact, EffectFact, KeyGroup } from '../../src/sweep/facts.js';

const NOW = new Date('2026-11-10T12:00:00Z');
const ctx: JudgeContext = { now: NOW, leaseMs: 120_000, retentionStart: new Date('2026-11-03T12:00:00Z'), refundDuplicates: false };
const minutesAgo = (m: number) => new Date(NOW.getTime() - m * 60_000);

function claim(over: Partial<ClaimFact> = {}): ClaimFact {
  return {
    tenantId: 'acme',
    key: 'k1',
    accountId: null,
    status: 'completed',
    attempt: 1,
    lockedUntil: null,
    createdAt: minutesAgo(60),
    updatedAt: minutesAgo(59),
    responseStatus: 200,
    downstreamKey: 'd',
    ...over,
  };
}
function charge(over: Partial<ChargeFact> = {}): ChargeFact {
  return {
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
    tenantId: 'acme',
    idempotencyKey: 'k1',
    ...over,
  };
}
function effect(over: Partial<EffectFact> = {}): EffectFact {
  return {
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
  };
}
const group = (g: Partial<KeyGroup>): KeyGroup => ({ tenantId: 'acme', key: 'k1', claim: null, charges: [], effects: [], ...g });
const judge = (groups: KeyGroup[], over: Partial<JudgeContext> = {}) =>
  judgeSlice({ groups, looseCharges: [], looseEffects: [] }, { ...ctx, ...over });
const only = (groups: KeyGroup[], over: Partial<JudgeContext> = {}) => {
  const j = judge(groups, over);
  expect(j.findings).toHaveLength(1);
  return j.findings[0]!;
};

describe('judgeSlice: one row of the category table each', () => {
  it('matched: completed claim, effect, agreeing charge', () => {
    const j = judge([group({ claim: claim(), charges: [charge()], effects: [effect()] })]);
    expect(j).toMatchObject({ findings: [], matched: ['ch_1'] });
  });

  it('claim_without_effect: expired in-flight claim and a succeeded charge → record effect, complete claim', () => {
    const f = only([group({ claim: claim({ status: 'in_flight', lockedUntil: minutesAgo(58), responseStatus: null }), charges: [charge()] })]);
    expect(f).toMatchObject({ category: 'claim_without_effect', subject: 'acme\u241fk1', repair: { kind: 'complete_claim' } });
  });

  it('claim_without_effect: completed claim whose effect is missing but the charge exists', () => {
    expect(only([group({ claim: claim(), charges: [charge()] })])).toMatchObject({ category: 'claim_without_effect' });
  });

  it('claim_without_effect: expired in-flight claim and a failed charge → store the failure', () => {
    const f = only([group({ claim: claim({ status: 'in_flight', lockedUntil: minutesAgo(58) }), charges: [charge({ status: 'failed' })] })]);
    expect(f).toMatchObject({ category: 'claim_without_effect', repair: { kind: 'complete_claim', charge: { status: 'failed' } } });
  });

  it('a stored decline with its failed charge is not a finding', () => {
    const j = judge([group({ claim: claim({ responseStatus: 402 }), charges: [charge({ status: 'failed' })] })]);
    expect(j.findings).toEqual([]);
  });

  it('stale_claim: expired in-flight claim and no charge → release', () => {
    const f = only([group({ claim: claim({ status: 'in_flight', lockedUntil: minutesAgo(58) }) })]);
    expect(f).toMatchObject({ category: 'stale_claim', repair: { kind: 'release_claim', claim: { attempt: 1, status: 'in_flight' } } });
  });

  it("stale_claim older than Stripe's 24 h window is not released", () => {
    const f = only([group({ claim: claim({ status: 'in_flight', createdAt: minutesAgo(25 * 60), lockedUntil: minutesAgo(24 * 60) }) })]);
    expect(f).toMatchObject({ category: 'stale_claim', repair: null, reason: expect.stringMatching(/24 h/) });
  });

  it('lost_effect: completed with a stored success, no effect, no charge', () => {
    expect(only([group({ claim: claim() })])).toMatchObject({ category: 'lost_effect', repair: null });
  });

  it('a released claim with no charge is not a finding (the caller may retry)', () => {
    expect(judge([group({ claim: claim({ status: 'released', responseStatus: null }) })]).findings).toEqual([]);
  });

  it('effect_without_claim: effect and charge, no claim → re-create the claim', () => {
    const f = only([group({ charges: [charge()], effects: [effect()] })]);
    expect(f).toMatchObject({ category: 'effect_without_claim', subject: 'ch_1', repair: { kind: 'recreate_claim', withClaim: true, insertEffectFrom: null } });
  });

  it('an effect older than the retention window has no claim by design', () => {
    const old = minutesAgo(8 * 24 * 60);
    expect(judge([group({ charges: [charge({ created: old })], effects: [effect({ createdAt: old })] })]).findings).toEqual([]);
  });

  it('orphan_charge: metadata names tenant and key, no claim, no effect → create both', () => {
    const f = only([group({ charges: [charge()] })]);
    expect(f).toMatchObject({ category: 'orphan_charge', subject: 'ch_1', repair: { kind: 'recreate_claim', withClaim: true, insertEffectFrom: { id: 'ch_1' } } });
  });

  it('unattributed_charge: succeeded, no metadata, no effect', () => {
    const j = judgeSlice({ groups: [], looseCharges: [{ charge: charge({ tenantId: null, idempotencyKey: null }), effect: null }], looseEffects: [] }, ctx);
    expect(j.findings).toMatchObject([{ category: 'unattributed_charge', subject: 'ch_1', repair: null }]);
  });

  it('effect_without_charge: money recorded that Stripe never took', () => {
    const f = only([group({ claim: claim(), effects: [effect()] })]);
    expect(f).toMatchObject({ category: 'effect_without_charge', subject: 'ch_1', repair: null });
  });

  it('amount_mismatch: amount or currency differ', () => {
    expect(only([group({ claim: claim(), charges: [charge({ amount: 999 })], effects: [effect()] })])).toMatchObject({ category: 'amount_mismatch' });
    expect(only([group({ claim: claim(), charges: [charge({ currency: 'eur' })], effects: [effect()] })])).toMatchObject({ category: 'amount_mismatch' });
  });

  it('status_drift: refunded or disputed at Stripe → update the effect', () => {
    const refunded = only([group({ claim: claim(), charges: [charge({ amountRefunded: 400 })], effects: [effect()] })]);
    expect(refunded).toMatchObject({ category: 'status_drift', repair: { kind: 'update_effect' } });
    expect(only([group({ claim: claim(), charges: [charge({ disputed: true })], effects: [effect()] })])).toMatchObject({ category: 'status_drift' });
  });

  it('duplicate_charge: two succeeded charges for one key; refunds only when asked', () => {
    const groups = [group({ claim: claim(), charges: [charge(), charge({ id: 'ch_2', created: minutesAgo(30) })], effects: [effect()] })];
    expect(only(groups)).toMatchObject({ category: 'duplicate_charge', subject: 'acme\u241fk1', repair: null });
    expect(only(groups, { refundDuplicates: true })).toMatchObject({
      repair: { kind: 'refund_duplicates', keep: { id: 'ch_1' }, refund: [{ id: 'ch_2' }] },
    });
  });
});

describe('judgeSlice: what is never judged', () => {
  it('skips a claim in a live lease entirely, and says it deferred it', () => {
    const j = judge([group({ claim: claim({ status: 'in_flight', lockedUntil: new Date(NOW.getTime() + 1000) }), charges: [charge()] })]);
    expect(j).toEqual({ findings: [], matched: [], judgedSubjects: [], deferred: ['acme\u241fk1'] });
  });

  it('judges a claim whose lease ended exactly now', () => {
    const j = judge([group({ claim: claim({ status: 'in_flight', lockedUntil: NOW }) })]);
    expect(j.deferred).toEqual([]);
    expect(j.findings.map((f) => f.category)).toEqual(['stale_claim']);
  });

  it('reports every subject it looked at, so healed findings can be closed', () => {
    const j = judge([group({ claim: claim(), charges: [charge()], effects: [effect()] })]);
    expect(j.judgedSubjects).toEqual(expect.arrayContaining(['acme\u241fk1', 'ch_1']));
  });
});

describe('judgeSlice: what belongs to a claim', () => {
  it('a charge in another account than the claim’s is reported, never used to repair the claim', () => {
    const j = judge([
      group({
        claim: claim({ status: 'in_flight', lockedUntil: minutesAgo(58), accountId: null }),
        charges: [charge({ account: 'acct_evil' })],
      }),
    ]);
    expect(j.findings.map((f) => [f.category, f.repair?.kind ?? null])).toEqual([
      ['unattributed_charge', null],
      ['stale_claim', 'release_claim'],
    ]);
  });

  it('charges and effects from before the claim belong to an earlier use of the key', () => {
    const old = minutesAgo(9 * 24 * 60);
    const j = judge([
      group({
        claim: claim(),
        charges: [charge(), charge({ id: 'ch_old', created: old })],
        effects: [effect(), effect({ chargeId: 'ch_old_gone', createdAt: old })],
      }),
    ]);
    expect(j).toMatchObject({ findings: [], matched: ['ch_1'] }); // no duplicate_charge, no effect_without_charge
  });

  it('a duplicate whose extra charge was refunded in full is settled', () => {
    const j = judge([
      group({ claim: claim(), charges: [charge(), charge({ id: 'ch_2', refunded: true, amountRefunded: 1000 })], effects: [effect()] }),
    ]);
    expect(j).toMatchObject({ findings: [], matched: ['ch_1'] });
  });
});
