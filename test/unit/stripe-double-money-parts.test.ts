import { describe, expect, it } from 'vitest';
import { DoubleClock } from '../../testkit/stripe-double/clock.js';
import { decimalsOf, FxTable } from '../../testkit/stripe-double/currency.js';
import { DoubleError } from '../../testkit/stripe-double/errors.js';
import { chargeFee, DEFAULT_FEE_SCHEDULE, FeeBook } from '../../testkit/stripe-double/fees.js';
import { availableOn, resolveTransaction, settlementOf, txnIdOfCharge } from '../../testkit/stripe-double/ledger.js';
import { ledgerOf } from '../../testkit/stripe-double/ledger-entries.js';
import { pageOf } from '../../testkit/stripe-double/list-page.js';
import { seedCharges } from '../../testkit/stripe-double/seed.js';
import { DoubleState } from '../../testkit/stripe-double/state.js';

const NOW_S = Date.parse('2026-03-10T12:00:00Z') / 1000;

function state(): DoubleState {
  const clock = new DoubleClock();
  clock.set(NOW_S * 1000);
  return new DoubleState(clock, 3);
}

describe('FxTable', () => {
  it('reports Stripe’s exchange_rate (major units, 6 decimals) and converts between smallest units', () => {
    const fx = new FxTable();
    expect(fx.rate('usd', 'usd')).toBeNull();
    expect(fx.rate('eur', 'usd')).toBe(1.08);
    expect(fx.rate('usd', 'gbp')).toBe(0.787402);
    expect(fx.convert(10_000, 'eur', 'usd')).toBe(10_800);
    // Zero-decimal yen: ¥1,000 is 1,000 units; 6.70 USD is 670 cents.
    expect(fx.convert(1_000, 'jpy', 'usd')).toBe(670);
    expect(fx.convert(670, 'usd', 'jpy')).toBe(1000);
    expect([decimalsOf('JPY'), decimalsOf('usd'), decimalsOf('kwd')]).toEqual([0, 2, 3]);
  });

  it('takes new rates, refuses bad ones, names a currency it has no rate for, and resets', () => {
    const fx = new FxTable();
    fx.set({ EUR: 1.1, xts: 2 });
    expect(fx.rate('eur', 'usd')).toBe(1.1);
    expect(fx.rate('xts', 'eur')).toBe(1.818182);
    expect(() => fx.set({ eur: 0 })).toThrow(/positive/);
    expect(() => fx.convert(1, 'abc', 'usd')).toThrow(/no exchange rate for abc/);
    fx.reset();
    expect([fx.rate('eur', 'usd'), fx.knows('xts')]).toEqual([1.08, false]);
  });
});

describe('fees', () => {
  it('charges percent + fixed, plus the conversion percent when converted, rounding half up', () => {
    expect(chargeFee(10_000, false, DEFAULT_FEE_SCHEDULE)).toBe(320);
    expect(chargeFee(10_000, true, DEFAULT_FEE_SCHEDULE)).toBe(420);
    expect(chargeFee(1_500, false, DEFAULT_FEE_SCHEDULE)).toBe(74);
  });

  it('overrides the schedule for every account or one, and goes back to the default', () => {
    const book = new FeeBook();
    book.set({ fixed: 0 });
    book.set({ percent: 1 }, 'acct_a');
    expect(book.of(null)).toMatchObject({ percent: 2.9, fixed: 0 });
    expect(book.of('acct_a')).toMatchObject({ percent: 1, fixed: 0 });
    book.set(null, 'acct_a');
    expect(book.of('acct_a').percent).toBe(2.9);
    expect(() => book.set({ percent: -1 })).toThrow(/non-negative/);
    book.reset();
    expect(book.of(null)).toEqual(DEFAULT_FEE_SCHEDULE);
  });
});

describe('ledger', () => {
  it('makes a charge available at midnight UTC `delay` days later, at once without delay', () => {
    expect(availableOn(NOW_S, 2)).toBe(Date.parse('2026-03-12T00:00:00Z') / 1000);
    expect(availableOn(NOW_S, 0)).toBe(NOW_S);
  });

  it('settles a seeded charge only when first needed, with the schedule then in force', () => {
    const s = state();
    seedCharges(s, 'acct_s', 1_000, { from: NOW_S - 3600, to: NOW_S, amount: 10_000 });
    const charges = s.charges.all('acct_s');
    expect(charges.every((c) => c.settlement === undefined)).toBe(true);
    const entries = ledgerOf(s, 'acct_s');
    expect(entries).toHaveLength(1_000);
    expect(charges.every((c) => c.settlement === undefined)).toBe(true);
    s.fees.set({ percent: 1, fixed: 0 });
    const first = charges[0];
    const txn = resolveTransaction(s, txnIdOfCharge(first?.id as string));
    expect(txn).toMatchObject({ amount: 10_000, fee: 100, source: first?.id, type: 'charge' });
    expect(charges.filter((c) => c.settlement !== undefined)).toHaveLength(1);
  });

  it('gives a failed or uncaptured charge no balance transaction and resolves unknown ids to nothing', () => {
    const s = state();
    const failed = s.addCharge({ account: null, amount: 100, currency: 'usd', status: 'failed' });
    const held = s.addCharge({ account: null, amount: 100, currency: 'usd', status: 'succeeded', captured: false });
    expect([settlementOf(s, failed), settlementOf(s, held)]).toEqual([undefined, undefined]);
    expect(resolveTransaction(s, txnIdOfCharge(failed.id))).toBeUndefined();
    expect(resolveTransaction(s, 'txn_nothing')).toBeUndefined();
    expect(txnIdOfCharge('imported-1')).toBe('txn_imported-1');
  });
});

describe('pageOf', () => {
  const items = ['f', 'e', 'd', 'c', 'b', 'a'].map((id) => ({ id, odd: 'fdb'.includes(id) }));
  const page = (query: Parameters<typeof pageOf>[3], wanted = (_: (typeof items)[number]) => true) => {
    const answer = pageOf(items, (i) => i.id, wanted, query, 'thing');
    return [answer.data.map((i) => i.id).join(''), answer.hasMore];
  };

  it('pages forwards and backwards with a filter', () => {
    expect(page({ limit: 2 })).toEqual(['fe', true]);
    expect(page({ limit: 2, startingAfter: 'e' })).toEqual(['dc', true]);
    expect(page({ limit: 2, startingAfter: 'c' })).toEqual(['ba', false]);
    expect(page({ limit: 2, endingBefore: 'b' })).toEqual(['dc', true]);
    expect(page({ limit: 5, endingBefore: 'c' })).toEqual(['fed', false]);
    expect(page({ limit: 2 }, (i) => i.odd)).toEqual(['fd', true]);
    expect(page({ limit: 2, startingAfter: 'f' }, (i) => i.odd)).toEqual(['db', false]);
  });

  it('answers an unknown cursor with a 400 resource_missing naming the kind', () => {
    try {
      page({ limit: 2, endingBefore: 'zz' });
      throw new Error('expected a DoubleError');
    } catch (error) {
      expect(error).toBeInstanceOf(DoubleError);
      expect((error as DoubleError).body.error).toMatchObject({
        code: 'resource_missing',
        param: 'ending_before',
        message: "No such thing: 'zz'",
      });
    }
  });
});
