import { describe, expect, it } from 'vitest';
import {
  judgePayout,
  judgePayoutStatus,
  judgeUnpaid,
  payoutSums,
  type PayoutFact,
  type PayoutTransactionFact,
} from '../../src/sweep/judge/payouts.js';

/** docs/judgement.md "Payouts and fees": the pure judgement of a payout, its later return, and unpaid payments. */

const payout = (extra: Partial<PayoutFact> = {}): PayoutFact => ({
  id: 'po_1',
  account: 'platform',
  created: new Date('2026-03-10T00:00:00Z'),
  arrivalDate: new Date('2026-03-11T00:00:00Z'),
  amount: 0,
  currency: 'usd',
  automatic: true,
  status: 'paid',
  reconciliationStatus: 'completed',
  failureCode: null,
  ...extra,
});

let n = 0;
const txn = (extra: Partial<PayoutTransactionFact>): PayoutTransactionFact => {
  n += 1;
  const amount = extra.amount ?? 0;
  const fee = extra.fee ?? 0;
  return {
    id: `txn_${n}`,
    type: 'charge',
    reportingCategory: 'charge',
    amount,
    fee,
    net: amount - fee,
    currency: 'usd',
    exchangeRate: null,
    sourceId: null,
    sourceChargeId: null,
    ...extra,
  };
};

const charge = (id: string, amount: number, fee: number, extra: Partial<PayoutTransactionFact> = {}) =>
  txn({ type: 'charge', reportingCategory: 'charge', amount, fee, sourceId: id, ...extra });
const own = (p: PayoutFact) => txn({ type: 'payout', reportingCategory: 'payout', amount: -p.amount, sourceId: p.id });

const links = (payments: string[], refunds: string[] = []) => ({
  payments: new Set(payments),
  refunds: new Set(refunds),
});

describe('judgePayout', () => {
  it('a payout whose transactions net its amount, FX charge included, reconciles and records each fee', () => {
    const p = payout({ amount: 10_000 + 5_400 - 330 - 211 - 1_000 });
    const txns = [
      charge('ch_usd', 10_000, 330),
      // Presented in EUR, settled in USD: compared in the payout's currency, never the presentment one.
      charge('ch_eur', 5_400, 211, { exchangeRate: 1.08 }),
      txn({
        type: 'refund',
        reportingCategory: 'refund',
        amount: -1_000,
        sourceId: 're_1',
        sourceChargeId: 'ch_usd',
      }),
      own(p),
    ];
    const judged = judgePayout(p, txns, links(['ch_usd', 'ch_eur'], ['re_1']));
    expect(judged.findings).toEqual([]);
    expect(judged.sums).toEqual({
      transactions: 3,
      charges: 15_400,
      refunds: -1_000,
      disputes: 0,
      fees: 541,
      other: 0,
      net: 13_859,
      residual: 0,
    });
    expect(judged.linked).toBe(3);
    expect(judged.fees).toEqual([
      { chargeId: 'ch_usd', fee: 330, net: 9_670, settlementCurrency: 'usd', exchangeRate: null },
      { chargeId: 'ch_eur', fee: 211, net: 5_189, settlementCurrency: 'usd', exchangeRate: 1.08 },
    ]);
  });

  it('a residual is a payout_mismatch naming it', () => {
    const p = payout({ amount: 9_700 });
    const judged = judgePayout(p, [charge('ch_a', 10_000, 330), own(p)], links(['ch_a']));
    expect(judged.sums.residual).toBe(30);
    expect(judged.findings.map((f) => [f.category, f.subject])).toEqual([['payout_mismatch', 'po_1']]);
    expect(judged.findings[0]!.reason).toContain('a residual of 30');
  });

  it('a transaction in another currency than the payout is a mismatch, even when the sums agree', () => {
    const p = payout({ amount: 1_000 });
    const judged = judgePayout(p, [charge('ch_a', 1_000, 0, { currency: 'eur' })], links(['ch_a']));
    expect(judged.findings.map((f) => f.category)).toEqual(['payout_mismatch']);
    expect(judged.findings[0]!.reason).toContain('another currency');
  });

  it('charge, refund and dispute transactions without a local row are unrecorded; fees and adjustments are summed only', () => {
    const p = payout({ amount: 5_000 - 100 - 500 - 2_000 - 1_500 + 700 - 50 });
    const txns = [
      charge('ch_unknown', 5_000, 100),
      txn({ type: 'refund', reportingCategory: 'refund', amount: -500, sourceId: 're_x', sourceChargeId: 'ch_gone' }),
      txn({
        type: 'adjustment',
        reportingCategory: 'dispute',
        amount: -2_000,
        fee: 1_500,
        sourceId: 'dp_1',
        sourceChargeId: 'ch_gone',
      }),
      txn({ type: 'adjustment', reportingCategory: 'other_adjustment', amount: 700 }),
      txn({ type: 'stripe_fee', reportingCategory: 'fee', amount: -50 }),
    ];
    const judged = judgePayout(p, txns, links([]));
    expect(judged.sums).toMatchObject({ charges: 5_000, refunds: -500, disputes: -2_000, other: 700, fees: 1_650 });
    expect(judged.sums.residual).toBe(0);
    expect(judged.findings.map((f) => [f.category, f.chargeId])).toEqual([
      ['unrecorded_balance_transaction', 'ch_unknown'],
      ['unrecorded_balance_transaction', 'ch_gone'],
      ['unrecorded_balance_transaction', 'ch_gone'],
    ]);
    expect(judged.fees).toEqual([]);
  });

  it('a refund made in the dashboard of a recorded payment is linked through its charge; a dispute too', () => {
    const p = payout({ amount: -300 - 2_000 + 10_000 });
    const txns = [
      charge('ch_b', 10_000, 0),
      txn({ type: 'refund', reportingCategory: 'refund', amount: -300, sourceId: 're_dash', sourceChargeId: 'ch_a' }),
      txn({
        type: 'adjustment',
        reportingCategory: 'dispute',
        amount: -2_000,
        sourceId: 'dp_1',
        sourceChargeId: 'ch_a',
      }),
    ];
    const judged = judgePayout(p, txns, links(['ch_a', 'ch_b']));
    expect(judged.findings).toEqual([]);
    expect(judged.linked).toBe(3);
  });

  it("Connect's payment transactions (destination charges) are summed, never linked", () => {
    const p = payout({ amount: 9_000 });
    const judged = judgePayout(
      p,
      [txn({ type: 'payment', reportingCategory: 'charge', amount: 9_000, sourceId: 'py_1' })],
      links([]),
    );
    expect(judged.findings).toEqual([]);
    expect(judged.sums).toMatchObject({ charges: 9_000, residual: 0 });
    expect(judged.linked).toBe(0);
  });

  it("the payout's own transaction is not summed, but must take its amount", () => {
    const p = payout({ amount: 1_000 });
    expect(payoutSums(p, [charge('ch_a', 1_000, 0), own(p)]).transactions).toBe(1);
    const wrong = txn({ type: 'payout', reportingCategory: 'payout', amount: -999, sourceId: p.id });
    const judged = judgePayout(p, [charge('ch_a', 1_000, 0), wrong], links(['ch_a']));
    expect(judged.findings[0]!.reason).toContain('takes 999');
  });
});

describe('judgePayoutStatus', () => {
  it('a payout seen paid that failed is a payout_mismatch', () => {
    const f = judgePayoutStatus(payout({ status: 'failed', failureCode: 'account_closed' }), {
      status: 'paid',
      reconciled: true,
    });
    expect(f?.category).toBe('payout_mismatch');
    expect(f?.reason).toContain('failed after it was paid (account_closed)');
  });

  it('one reconciled before it was paid, then canceled, is too', () => {
    const f = judgePayoutStatus(payout({ status: 'canceled' }), { status: 'in_transit', reconciled: true });
    expect(f?.reason).toContain('canceled after it was reconciled (in_transit)');
  });

  it('seen failed from the start, or already seen returned, or never paid: no finding', () => {
    const failed = payout({ status: 'failed' });
    expect(judgePayoutStatus(failed, { status: null, reconciled: false })).toBeNull();
    expect(judgePayoutStatus(failed, { status: 'failed', reconciled: true })).toBeNull();
    expect(judgePayoutStatus(failed, { status: 'in_transit', reconciled: false })).toBeNull();
    expect(judgePayoutStatus(payout({ status: 'paid' }), { status: 'paid', reconciled: true })).toBeNull();
  });
});

describe('judgeUnpaid', () => {
  it('one unpaid_effect per payment, about its charge', () => {
    const findings = judgeUnpaid(
      [
        {
          chargeId: 'ch_old',
          tenantId: 'acme',
          key: 'order-1',
          amount: 500,
          currency: 'eur',
          createdAt: new Date('2026-03-01T00:00:00Z'),
        },
      ],
      10 * 86_400_000,
    );
    expect(findings.map((f) => [f.category, f.subject, f.chargeId, f.tenantId])).toEqual([
      ['unpaid_effect', 'ch_old', 'ch_old', 'acme'],
    ]);
    expect(findings[0]!.reason).toContain('more than 10d (SWEEPER_PAYOUT_GRACE) ago');
  });
});
