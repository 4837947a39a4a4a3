import { describe, expect, it } from 'vitest';
import type { ChargeFact } from '../../src/sweep/facts.js';
import { emptyJudgement } from '../../src/sweep/judge/build.js';
import { judgeReference, judgeSuspects, type Verdicts } from '../../src/sweep/judge/outcomes.js';
import { factBuilders } from '../support/facts.js';

/**
 * docs/judgement.md "Duplicate payments for one order", rule by rule, as tables of
 * histories: which sets of charges are a duplicate_effect or a suspected_duplicate.
 */

const NOW = new Date('2026-11-10T12:00:00Z');
const DAY = 86_400_000;
const MIN = 60_000;
const { charge, minutesAgo } = factBuilders(NOW);
const ctx = { duplicateLookbackMs: 7 * DAY, suspectWindowMs: 10 * MIN };

/** A payment for order-1 of tenant acme, under its own key. */
const pay = (id: string, key: string | null, over: Partial<ChargeFact> = {}): ChargeFact =>
  charge({ id, idempotencyKey: key, tenantId: 'acme', reference: 'order-1', created: minutesAgo(60), ...over });

function duplicates(charges: ChargeFact[], verdicts: Verdicts = []) {
  const out = emptyJudgement();
  judgeReference({ account: 'platform', tenantId: 'acme', reference: 'order-1', charges }, verdicts, ctx, out);
  return out.findings;
}

describe('duplicate_effect: live payments for one reference under different keys', () => {
  it('two keys, one order, the same amount → one finding naming the earliest as kept', () => {
    const [f] = duplicates([pay('ch_b', 'attempt-2', { created: minutesAgo(10) }), pay('ch_a', 'attempt-1')]);
    expect(f).toMatchObject({
      category: 'duplicate_effect',
      chargeId: 'ch_a',
      reference: 'order-1',
      members: ['ch_a', 'ch_b'],
      details: { kept: 'ch_a', extras: ['ch_b'] },
      covers: { claims: [], charges: [], effects: [] },
    });
    expect(f?.subject).toBe('acme\u241forder-1\u241fch_a,ch_b');
  });

  it.each<[string, ChargeFact[]]>([
    ['a decline followed by a success', [pay('ch_a', 'k1', { status: 'failed' }), pay('ch_b', 'k2')]],
    [
      'the same order for another amount (a split or a top-up)',
      [pay('ch_a', 'k1'), pay('ch_b', 'k2', { amount: 500 })],
    ],
    ['the same order in another currency', [pay('ch_a', 'k1'), pay('ch_b', 'k2', { currency: 'eur' })]],
    [
      'the same key twice (that is duplicate_charge)',
      [pay('ch_a', 'k1'), pay('ch_b', 'k1', { created: minutesAgo(5) })],
    ],
    ['an extra refunded in full', [pay('ch_a', 'k1'), pay('ch_b', 'k2', { amountRefunded: 1000, refunded: true })]],
    ['more than the lookback apart', [pay('ch_a', 'k1', { created: minutesAgo(8 * 24 * 60) }), pay('ch_b', 'k2')]],
    ['one payment', [pay('ch_a', 'k1')]],
  ])('not a duplicate: %s', (_name, charges) => {
    expect(duplicates(charges)).toEqual([]);
  });

  it('a partly refunded extra is still live: the finding stays', () => {
    expect(duplicates([pay('ch_a', 'k1'), pay('ch_b', 'k2', { amountRefunded: 400 })])).toHaveLength(1);
  });

  it('a charge with no key counts as its own key: two of them are two keys', () => {
    expect(duplicates([pay('ch_a', null), pay('ch_b', null, { created: minutesAgo(30) })])[0]?.members).toEqual([
      'ch_a',
      'ch_b',
    ]);
  });

  it('within the lookback of the kept charge, oldest first; a later one starts a group of its own', () => {
    const charges = [
      pay('ch_1', 'k1', { created: minutesAgo(20 * 24 * 60) }),
      pay('ch_2', 'k2', { created: minutesAgo(19 * 24 * 60) }),
      pay('ch_3', 'k3', { created: minutesAgo(10 * 24 * 60) }),
      pay('ch_4', 'k4', { created: minutesAgo(4 * 24 * 60) }),
    ];
    expect(duplicates(charges)[0]?.details).toMatchObject({
      kept: 'ch_1',
      extras: ['ch_2', 'ch_4'],
      groups: [
        { kept: 'ch_1', extras: ['ch_2'] },
        { kept: 'ch_3', extras: ['ch_4'] },
      ],
    });
  });

  it('a person said the set is not a duplicate: neither it nor a part of it is raised again; a new charge joining it is', () => {
    const two = [pay('ch_a', 'k1'), pay('ch_b', 'k2', { created: minutesAgo(30) })];
    const verdict: Verdicts = [new Set(['ch_a', 'ch_b'])];
    expect(duplicates(two, verdict)).toEqual([]);
    const three = [...two, pay('ch_c', 'k3', { created: minutesAgo(5) })];
    expect(duplicates(three, verdict)[0]?.members).toEqual(['ch_a', 'ch_b', 'ch_c']);
    const refundedOne = [...three.slice(0, 2), pay('ch_c', 'k3', { amountRefunded: 1000, refunded: true })];
    expect(duplicates(refundedOne, [new Set(['ch_a', 'ch_b', 'ch_c'])])).toEqual([]);
  });
});

describe('suspected_duplicate: no reference, one customer or card, moments apart', () => {
  const buy = (id: string, key: string, minutes: number, over: Partial<ChargeFact> = {}) =>
    charge({ id, idempotencyKey: key, customer: 'cus_1', created: minutesAgo(minutes), reference: null, ...over });
  const suspects = (charges: ChargeFact[], windowMs = 10 * MIN, verdicts: Verdicts = []) => {
    const out = emptyJudgement();
    judgeSuspects(charges, verdicts, { ...ctx, suspectWindowMs: windowMs }, out);
    return out.findings;
  };

  it('one customer, the same amount, two keys, five minutes apart → suspected_duplicate', () => {
    expect(suspects([buy('ch_a', 'k1', 30), buy('ch_b', 'k2', 25)])).toMatchObject([
      { category: 'suspected_duplicate', subject: 'suspect\u241fch_a,ch_b', members: ['ch_a', 'ch_b'] },
    ]);
  });

  it('one card under two customers (a guest checkout) is one buyer too', () => {
    const card = { cardFingerprint: 'fp_1' };
    expect(
      suspects([
        buy('ch_a', 'k1', 30, { ...card, customer: null }),
        buy('ch_b', 'k2', 28, { ...card, customer: 'cus_9' }),
      ]),
    ).toHaveLength(1);
  });

  it.each<[string, ChargeFact[]]>([
    ['another customer', [buy('ch_a', 'k1', 30), buy('ch_b', 'k2', 25, { customer: 'cus_2' })]],
    ['another amount', [buy('ch_a', 'k1', 30), buy('ch_b', 'k2', 25, { amount: 999 })]],
    ['further apart than the window', [buy('ch_a', 'k1', 30), buy('ch_b', 'k2', 15)]],
    ['a reference on one of them', [buy('ch_a', 'k1', 30), buy('ch_b', 'k2', 25, { reference: 'order-9' })]],
    ['the same key', [buy('ch_a', 'k1', 30), buy('ch_b', 'k1', 25)]],
    ['a refunded one', [buy('ch_a', 'k1', 30), buy('ch_b', 'k2', 25, { amountRefunded: 1000, refunded: true })]],
    ['no customer and no card', [buy('ch_a', 'k1', 30, { customer: null }), buy('ch_b', 'k2', 25, { customer: null })]],
  ])('not suspected: %s', (_name, charges) => {
    expect(suspects(charges)).toEqual([]);
  });

  it('SWEEPER_SUSPECT_WINDOW=0 turns it off; a verdict sticks', () => {
    const pair = [buy('ch_a', 'k1', 30), buy('ch_b', 'k2', 25)];
    expect(suspects(pair, 0)).toEqual([]);
    expect(suspects(pair, 10 * MIN, [new Set(['ch_a', 'ch_b'])])).toEqual([]);
  });

  it('moments apart one after another: one set, however long the chain', () => {
    const chain = [0, 8, 16, 24].map((m, i) => buy(`ch_${i}`, `k${i}`, 60 - m));
    expect(suspects(chain)[0]?.members).toEqual(['ch_0', 'ch_1', 'ch_2', 'ch_3']);
  });
});
