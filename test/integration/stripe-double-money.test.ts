import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { READ_ONLY_PERMISSIONS, startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';

// The double's money beyond the charge, through the real SDK: a refund's life, balance
// transactions (fees, exchange rates, disputes) and payouts.
const NOW = new Date('2026-03-10T12:00:00Z');
const NOW_S = NOW.getTime() / 1000;
const DAY_S = 24 * 60 * 60;
/** 2026-03-12T00:00:00Z: a charge made on the 10th is available two days later, at midnight UTC. */
const AVAILABLE_S = Date.parse('2026-03-12T00:00:00Z') / 1000;
const NO_BALANCE_KEY = 'rk_test_no_balance';

let double: StripeDouble;
let stripe: Stripe;

beforeAll(async () => {
  const withoutMoney = READ_ONLY_PERMISSIONS.filter((p) => p !== 'rak_balance_read' && p !== 'rak_payout_read');
  double = await startStripeDouble({ keys: { permissions: { [NO_BALANCE_KEY]: withoutMoney } } });
  stripe = createStripeClient({ apiKey: 'sk_test_money', apiBase: double.url, maxNetworkRetries: 0 });
});
afterAll(async () => {
  await double.close();
});
beforeEach(() => {
  double.reset();
  double.clock.set(NOW);
});

async function rejection(promise: Promise<unknown>): Promise<InstanceType<typeof Stripe.errors.StripeError>> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Stripe.errors.StripeError) return error;
    throw error;
  }
  throw new Error('expected Stripe to reject the request');
}

/** Every page of a listing, following starting_after. */
async function everything<T extends { id: string }>(
  list: (params: { limit: number; starting_after?: string }) => Promise<Stripe.ApiList<T>>,
  limit = 2,
): Promise<T[]> {
  const all: T[] = [];
  let page = await list({ limit });
  all.push(...page.data);
  while (page.has_more) {
    page = await list({ limit, starting_after: page.data[page.data.length - 1]?.id as string });
    all.push(...page.data);
  }
  return all;
}

const types = async (account?: string) =>
  (await stripe.events.list({ limit: 100 }, account ? { stripeAccount: account } : undefined)).data.map((e) => e.type);
const net = (txns: Stripe.BalanceTransaction[]) => txns.reduce((sum, t) => sum + t.net, 0);

describe('refunds', () => {
  it('POST /v1/refunds with an idempotency key and metadata: replayed, made once, with a balance transaction', async () => {
    const charge = double.createCharge('acct_r', { amount: 1000 });
    const options = { idempotencyKey: 'refund-1', stripeAccount: 'acct_r' };
    const params = { charge: charge.id, amount: 300, metadata: { tenant_id: 't', idempotency_key: 'k' } };
    const first = await stripe.refunds.create(params, options);
    const again = await stripe.refunds.create(params, options);
    expect(again.id).toBe(first.id);
    expect(again.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(first).toMatchObject({
      status: 'succeeded',
      amount: 300,
      metadata: { tenant_id: 't', idempotency_key: 'k' },
    });
    expect(double.refunds(charge.id)).toHaveLength(1);
    const txn = await stripe.balanceTransactions.retrieve(first.balance_transaction as string, {}, options);
    expect(txn).toMatchObject({ type: 'refund', reporting_category: 'refund', amount: -300, fee: 0, net: -300 });
    expect(txn).toMatchObject({ source: first.id, currency: 'usd', status: 'available', available_on: NOW_S });
  });

  it('lists by created, charge and payment_intent, pages both ways, within the account', async () => {
    const options = { stripeAccount: 'acct_r' };
    const intents = [];
    for (let i = 0; i < 3; i += 1) {
      const intent = await stripe.paymentIntents.create(
        { amount: 1000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true },
        options,
      );
      intents.push(intent);
      await stripe.refunds.create({ payment_intent: intent.id, amount: 100 }, options);
      double.clock.advance(1_000);
      await stripe.refunds.create({ payment_intent: intent.id, amount: 200 }, options);
      double.clock.advance(1_000);
    }
    const all = await everything((p) => stripe.refunds.list(p, options));
    expect(all.map((r) => r.created)).toEqual([5, 4, 3, 2, 1, 0].map((s) => NOW_S + s));
    const recent = await stripe.refunds.list({ created: { gte: NOW_S + 4 } }, options);
    expect(recent.data.map((r) => r.amount)).toEqual([200, 100]);
    const first = intents[0] as Stripe.PaymentIntent;
    const ofFirst = await stripe.refunds.list({ payment_intent: first.id }, options);
    expect(ofFirst.data.map((r) => r.amount)).toEqual([200, 100]);
    const byCharge = await stripe.refunds.list({ charge: first.latest_charge as string }, options);
    expect(byCharge.data.map((r) => r.id)).toEqual(ofFirst.data.map((r) => r.id));
    const before = await stripe.refunds.list({ ending_before: all[3]?.id, limit: 2 }, options);
    expect(before.data.map((r) => r.id)).toEqual([all[1]?.id, all[2]?.id]);
    expect(before.has_more).toBe(true);
    expect((await stripe.refunds.list({})).data).toEqual([]);
    const cursor = await rejection(stripe.refunds.list({ starting_after: 're_missing' }, options));
    expect([cursor.statusCode, cursor.code, cursor.param]).toEqual([400, 'resource_missing', 'starting_after']);
  });

  it('a pending refund succeeds later: charge.refund.updated and refund.updated with the earlier status', async () => {
    double.setNewRefundStatus('pending');
    const charge = double.createCharge(null, { amount: 1000, events: false });
    const refund = await stripe.refunds.create({ charge: charge.id, amount: 400 });
    expect(refund).toMatchObject({ status: 'pending', pending_reason: 'processing' });
    expect((await stripe.charges.retrieve(charge.id)).amount_refunded).toBe(400);
    double.clock.advance(60_000);
    double.succeedRefund(refund.id);
    expect((await stripe.refunds.retrieve(refund.id)).status).toBe('succeeded');
    const events = (await stripe.events.list({ types: ['refund.updated', 'charge.refund.updated'] })).data;
    expect(events.map((e) => e.type)).toEqual(['refund.updated', 'charge.refund.updated']);
    expect(events[0]?.data.previous_attributes).toMatchObject({ status: 'pending' });
    expect(() => double.succeedRefund(refund.id)).toThrow(/succeeded, not pending/);
  });

  it('a refund that fails after it succeeded: failure_reason, the money back on the charge and in the balance', async () => {
    const charge = double.createCharge(null, { amount: 1000, events: false });
    const refund = await stripe.refunds.create({ charge: charge.id });
    expect(await stripe.charges.retrieve(charge.id)).toMatchObject({ amount_refunded: 1000, refunded: true });
    double.clock.advance(3 * DAY_S * 1000);
    double.failRefund(refund.id, 'expired_or_canceled_card');
    const failed = await stripe.refunds.retrieve(refund.id);
    expect(failed).toMatchObject({ status: 'failed', failure_reason: 'expired_or_canceled_card' });
    expect(await stripe.charges.retrieve(charge.id)).toMatchObject({ amount_refunded: 0, refunded: false });
    const back = await stripe.balanceTransactions.retrieve(failed.failure_balance_transaction as string);
    expect(back).toMatchObject({ type: 'refund_failure', reporting_category: 'refund_failure', amount: 1000 });
    expect(back).toMatchObject({ source: refund.id, created: NOW_S + 3 * DAY_S });
    expect(await types()).toEqual([
      'refund.failed',
      'refund.updated',
      'charge.refund.updated',
      'refund.created',
      'charge.refunded',
    ]);
    const [, updated] = (await stripe.events.list({ limit: 2 })).data;
    expect(updated?.data.previous_attributes).toMatchObject({ status: 'succeeded', failure_reason: null });
    expect(() => double.failRefund(refund.id)).toThrow(/already failed/);
  });

  it('a canceled refund gives the money back too, without refund.failed; the default failure reason is unknown', async () => {
    const charge = double.createCharge(null, { amount: 1000, events: false });
    const canceled = double.createRefund(charge.id, { amount: 600, status: 'pending', events: { emit: false } });
    double.cancelRefund(canceled.id);
    expect(double.refunds(charge.id)[0]).toMatchObject({ status: 'canceled' });
    expect(double.charge(charge.id)?.amount_refunded).toBe(0);
    expect(await types()).toEqual(['refund.updated', 'charge.refund.updated']);
    const failed = double.createRefund(charge.id, { amount: 200, events: { emit: false } });
    expect(double.failRefund(failed.id, { emit: false })).toMatchObject({
      status: 'failed',
      failure_reason: 'unknown',
    });
    expect(() => double.cancelRefund(canceled.id)).toThrow(/already been canceled/);
  });
});

describe('balance transactions', () => {
  it('a charge settles with the fee schedule, pending until available_on on the double clock', async () => {
    const charge = double.createCharge(null, { amount: 10_000, description: 'Order 7' });
    const txn = await stripe.balanceTransactions.retrieve(charge.balance_transaction as string);
    expect(txn).toEqual({
      id: charge.balance_transaction,
      object: 'balance_transaction',
      amount: 10_000,
      available_on: AVAILABLE_S,
      balance_type: 'payments',
      created: NOW_S,
      currency: 'usd',
      description: 'Order 7',
      exchange_rate: null,
      fee: 320,
      fee_details: [
        { amount: 320, application: null, currency: 'usd', description: 'Stripe processing fees', type: 'stripe_fee' },
      ],
      net: 9680,
      reporting_category: 'charge',
      source: charge.id,
      status: 'pending',
      type: 'charge',
    });
    double.clock.set((AVAILABLE_S - 1) * 1000);
    expect((await stripe.balanceTransactions.retrieve(txn.id)).status).toBe('pending');
    double.clock.set(AVAILABLE_S * 1000);
    expect((await stripe.balanceTransactions.retrieve(txn.id)).status).toBe('available');
  });

  it('a charge in another currency settles in the account’s, with exchange_rate and the conversion fee', async () => {
    const eur = double.createCharge(null, { amount: 10_000, currency: 'eur' });
    expect(await stripe.balanceTransactions.retrieve(eur.balance_transaction as string)).toMatchObject({
      amount: 10_800,
      currency: 'usd',
      exchange_rate: 1.08,
      fee: 451,
      net: 10_349,
    });
    double.addAccount({ id: 'acct_gb', defaultCurrency: 'gbp', payoutDelayDays: 0 });
    const usd = double.createCharge('acct_gb', { amount: 10_000, currency: 'usd' });
    const txn = await stripe.balanceTransactions.retrieve(
      usd.balance_transaction as string,
      {},
      { stripeAccount: 'acct_gb' },
    );
    expect(txn).toMatchObject({
      amount: 7874,
      currency: 'gbp',
      exchange_rate: 0.787402,
      fee: 337,
      status: 'available',
    });
    double.setFxRates({ jpy: 0.007 });
    const yen = double.createCharge(null, { amount: 5_000, currency: 'jpy' });
    expect(double.balanceTransaction(yen.balance_transaction as string)).toMatchObject({
      amount: 3500,
      exchange_rate: 0.007,
    });
    expect(() => double.createCharge(null, { currency: 'xyz' }).balance_transaction).not.toThrow();
    expect(() => double.balanceTransactions(null)).toThrow(/no exchange rate for xyz/);
  });

  it('fees are overridable for every account or one; a charge keeps the fee it settled with', async () => {
    const before = double.createCharge(null, { amount: 10_000 });
    double.setFeeSchedule({ percent: 1.4, fixed: 25 });
    double.setFeeSchedule({ percent: 0, fixed: 0, fxPercent: 0 }, 'acct_free');
    const after = double.createCharge(null, { amount: 10_000 });
    const free = double.createCharge('acct_free', { amount: 10_000, currency: 'eur' });
    const fee = (id: string | null) => double.balanceTransaction(id as string)?.fee;
    expect([fee(before.balance_transaction), fee(after.balance_transaction), fee(free.balance_transaction)]).toEqual([
      320, 165, 0,
    ]);
  });

  it('an uncaptured charge has none until its capture, dated then', async () => {
    const intent = await stripe.paymentIntents.create({
      amount: 2000,
      currency: 'usd',
      payment_method: 'pm_card_visa',
      confirm: true,
      capture_method: 'manual',
    });
    const chargeId = intent.latest_charge as string;
    expect((await stripe.charges.retrieve(chargeId)).balance_transaction).toBeNull();
    double.clock.advance(3_600_000);
    double.capture(chargeId, 1500);
    const charge = await stripe.charges.retrieve(chargeId);
    const txn = await stripe.balanceTransactions.retrieve(charge.balance_transaction as string);
    expect(txn).toMatchObject({ amount: 1500, created: NOW_S + 3600, fee: 74 });
  });

  it('a dispute withdraws its amount and the dispute fee; a won one gives the amount back', async () => {
    const charge = double.createCharge(null, { amount: 5000, events: false });
    double.openDispute(charge.id);
    double.clock.advance(DAY_S * 1000);
    const won = double.closeDispute(charge.id, 'won');
    const [withdrawal, reversal] = won.balance_transactions as Stripe.BalanceTransaction[];
    expect(withdrawal).toMatchObject({ type: 'adjustment', reporting_category: 'dispute', source: won.id });
    expect(withdrawal).toMatchObject({
      amount: -5000,
      fee: 1500,
      net: -6500,
      description: `Chargeback withdrawal for ${charge.id}`,
    });
    expect(withdrawal?.fee_details).toEqual([
      { amount: 1500, application: null, currency: 'usd', description: 'Dispute fee', type: 'stripe_fee' },
    ]);
    expect(reversal).toMatchObject({
      reporting_category: 'dispute_reversal',
      amount: 5000,
      fee: 0,
      created: NOW_S + DAY_S,
    });
    const [reinstated, , withdrawn] = (await stripe.events.list({ type: 'charge.dispute.*' })).data;
    expect((withdrawn?.data.object as Stripe.Dispute).balance_transactions).toHaveLength(1);
    expect((reinstated?.data.object as Stripe.Dispute).balance_transactions).toHaveLength(2);
    const lost = double.createCharge(null, { amount: 700, events: false });
    double.openDispute(lost.id);
    expect(double.closeDispute(lost.id, 'lost').balance_transactions).toHaveLength(1);
  });

  it('lists newest first with type, source and created filters, pages, and expands data.source', async () => {
    const a = double.createCharge(null, { amount: 1000 });
    double.clock.advance(1_000);
    const b = double.createCharge(null, { amount: 2000 });
    double.clock.advance(1_000);
    const refund = double.createRefund(b.id, { amount: 500 });
    const all = await everything((p) => stripe.balanceTransactions.list(p));
    expect(all.map((t) => t.source)).toEqual([refund.id, b.id, a.id]);
    expect((await stripe.balanceTransactions.list({ type: 'charge' })).data.map((t) => t.source)).toEqual([b.id, a.id]);
    expect((await stripe.balanceTransactions.list({ source: a.id })).data.map((t) => t.id)).toEqual([
      a.balance_transaction,
    ]);
    expect((await stripe.balanceTransactions.list({ created: { lt: NOW_S + 1 } })).data).toHaveLength(1);
    const expanded = await stripe.balanceTransactions.list({ expand: ['data.source'], limit: 2 });
    expect(expanded.data.map((t) => (t.source as { object: string }).object)).toEqual(['refund', 'charge']);
    const one = await stripe.balanceTransactions.retrieve(a.balance_transaction as string, { expand: ['source'] });
    expect(one.source).toMatchObject({ object: 'charge', id: a.id });
    const bad = await rejection(stripe.balanceTransactions.list({ expand: ['data.payout'] }));
    expect([bad.statusCode, bad.message]).toEqual([400, 'This property cannot be expanded (data.payout).']);
    const missing = await rejection(
      stripe.balanceTransactions.retrieve(a.balance_transaction as string, {}, { stripeAccount: 'acct_x' }),
    );
    expect([missing.statusCode, missing.code]).toEqual([404, 'resource_missing']);
  });
});

describe('payouts', () => {
  /** A charge, a refund, a dispute and a pending charge on the platform; then three days later. */
  function history() {
    const paid = double.createCharge(null, { amount: 10_000 });
    const refunded = double.createCharge(null, { amount: 4_000 });
    double.createRefund(refunded.id, { amount: 1_000 });
    const disputed = double.createCharge(null, { amount: 2_000 });
    double.openDispute(disputed.id);
    double.clock.advance(3 * DAY_S * 1000);
    const late = double.createCharge(null, { amount: 3_000 });
    return { paid, refunded, disputed, late };
  }

  it('pays out the available transactions; ?payout= lists them with the payout’s own, summing to its amount', async () => {
    const { late } = history();
    const payout = double.runPayout(null, { arrivalDate: NOW_S + 5 * DAY_S });
    // 9680 + 3854 (4000 less 146) − 1000 (refund) + 1912 (2000 less 88) − 3500 (dispute and its fee)
    expect(payout).toMatchObject({ amount: 10_946, currency: 'usd', status: 'paid', automatic: true });
    expect(payout).toMatchObject({
      reconciliation_status: 'completed',
      arrival_date: NOW_S + 5 * DAY_S,
      method: 'standard',
    });
    expect(await stripe.payouts.retrieve(payout.id)).toMatchObject(JSON.parse(JSON.stringify(payout)) as object);
    const txns = await everything((p) => stripe.balanceTransactions.list({ ...p, payout: payout.id }));
    expect(txns.map((t) => t.reporting_category).sort()).toEqual([
      'charge',
      'charge',
      'charge',
      'dispute',
      'payout',
      'refund',
    ]);
    const own = txns.find((t) => t.type === 'payout') as Stripe.BalanceTransaction;
    expect(own).toMatchObject({ id: payout.balance_transaction, amount: -10_946, source: payout.id });
    expect(net(txns.filter((t) => t.type !== 'payout'))).toBe(payout.amount);
    expect(net(txns)).toBe(0);
    expect(txns.some((t) => t.source === late.id)).toBe(false);
    expect(() => double.runPayout(null)).toThrow(/nothing to pay out/);
    const charges = await stripe.balanceTransactions.list({
      payout: payout.id,
      type: 'charge',
      expand: ['data.source'],
    });
    expect(charges.data.map((t) => (t.source as { object: string; id: string }).object)).toEqual([
      'charge',
      'charge',
      'charge',
    ]);
  });

  it('emits balance.available, payout.created, payout.updated, payout.paid, payout.reconciliation_completed', async () => {
    double.createCharge('acct_p', { amount: 1000, events: false });
    double.clock.advance(3 * DAY_S * 1000);
    const payout = double.runPayout('acct_p');
    const events = (await stripe.events.list({ limit: 10 }, { stripeAccount: 'acct_p' })).data;
    expect(events.map((e) => e.type)).toEqual([
      'payout.reconciliation_completed',
      'payout.paid',
      'payout.updated',
      'payout.created',
      'balance.available',
    ]);
    expect(events[2]?.data).toMatchObject({
      object: { id: payout.id, status: 'in_transit' },
      previous_attributes: { status: 'pending' },
    });
    expect(events[3]?.data.object).toMatchObject({ status: 'pending', reconciliation_status: 'in_progress' });
    expect(events[4]?.data.object).toMatchObject({ object: 'balance', available: [{ amount: 941, currency: 'usd' }] });
  });

  it('stops where asked and holds reconciliation: ?payout= is empty until it completes', async () => {
    history();
    const payout = double.runPayout(null, { status: 'pending', holdReconciliation: true });
    expect((await stripe.balanceTransactions.list({ payout: payout.id })).data).toEqual([]);
    double.advancePayout(payout.id);
    expect((await stripe.payouts.retrieve(payout.id)).status).toBe('in_transit');
    double.advancePayout(payout.id, 'paid');
    expect(() => double.advancePayout(payout.id)).toThrow(/paid: it cannot move/);
    double.completePayoutReconciliation(payout.id);
    expect(await stripe.payouts.retrieve(payout.id)).toMatchObject({
      status: 'paid',
      reconciliation_status: 'completed',
    });
    expect((await stripe.balanceTransactions.list({ payout: payout.id, limit: 100 })).data).toHaveLength(6);
    expect(await types()).toContain('payout.reconciliation_completed');
  });

  it('a manual payout is not itemised: ?payout= answers Stripe’s 400', async () => {
    double.configureAccount(null, { payoutInterval: 'manual' });
    history();
    const payout = double.runPayout(null);
    expect(payout).toMatchObject({ automatic: false, reconciliation_status: 'not_applicable', amount: 10_946 });
    const error = await rejection(stripe.balanceTransactions.list({ payout: payout.id }));
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect([error.statusCode, error.param, error.message]).toEqual([
      400,
      'payout',
      'Balance transaction history can only be filtered on automatic transfers, not manual.',
    ]);
    expect(await types()).not.toContain('payout.reconciliation_completed');
    const unknown = await rejection(stripe.balanceTransactions.list({ payout: 'po_missing' }));
    expect([unknown.statusCode, unknown.code]).toEqual([400, 'resource_missing']);
  });

  it('a payout that fails after it was paid returns the money, which the next payout pays out', async () => {
    history();
    const first = double.runPayout(null);
    double.clock.advance(2 * DAY_S * 1000);
    const failed = double.failPayout(first.id, {
      code: 'account_closed',
      message: 'The bank account has been closed.',
    });
    expect(failed).toMatchObject({ status: 'failed', failure_code: 'account_closed' });
    const back = await stripe.balanceTransactions.retrieve(failed.failure_balance_transaction as string);
    expect(back).toMatchObject({
      type: 'payout_failure',
      reporting_category: 'payout_reversal',
      amount: 10_946,
      source: first.id,
    });
    expect((await stripe.events.list({ type: 'payout.failed' })).data[0]?.data.object).toMatchObject({ id: first.id });
    const second = double.runPayout(null);
    expect(second.amount).toBe(10_946 + 2_883);
    const txns = await everything((p) => stripe.balanceTransactions.list({ ...p, payout: second.id }), 100);
    expect(txns.map((t) => t.type).sort()).toEqual(['charge', 'payout', 'payout_failure']);
    expect(() => double.failPayout(first.id)).toThrow(/already failed/);
  });

  it('cancels a payout not paid yet; a paid one cannot be canceled', async () => {
    history();
    const pending = double.runPayout(null, { status: 'pending' });
    const canceled = double.cancelPayout(pending.id);
    expect(canceled).toMatchObject({ status: 'canceled' });
    expect(double.balanceTransaction(canceled.failure_balance_transaction as string)).toMatchObject({
      type: 'payout_cancel',
      amount: 10_946,
    });
    const paid = double.runPayout(null);
    expect(paid.amount).toBe(10_946);
    expect(() => double.cancelPayout(paid.id)).toThrow(/only a pending or in-transit payout/);
    expect((await stripe.events.list({ type: 'payout.canceled' })).data).toHaveLength(1);
  });

  it('builds a payout whose transactions do not sum to its amount, for tests of a mismatch', async () => {
    history();
    const payout = double.runPayout(null, { unexplained: 250 });
    const txns = await everything((p) => stripe.balanceTransactions.list({ ...p, payout: payout.id }), 100);
    expect(payout.amount).toBe(11_196);
    expect(net(txns.filter((t) => t.type !== 'payout'))).toBe(10_946);
  });

  it('an adjustment or a fee with no object behind it is paid out like the rest', async () => {
    double.createCharge(null, { amount: 1000 });
    const fee = double.addAdjustment(null, { amount: -200, reportingCategory: 'fee', description: 'Radar' });
    const other = double.addAdjustment(null, { amount: 75 });
    expect(fee).toMatchObject({ type: 'stripe_fee', reporting_category: 'fee', source: null, net: -200 });
    expect(other).toMatchObject({ type: 'adjustment', reporting_category: 'other_adjustment', net: 75 });
    double.clock.advance(3 * DAY_S * 1000);
    expect(double.runPayout(null).amount).toBe(941 - 200 + 75);
  });

  it('GET /v1/payouts: newest first, status, created and arrival_date filters, both cursors, per account', async () => {
    const made = [];
    for (let i = 0; i < 4; i += 1) {
      double.createCharge('acct_p', { amount: 1000 * (i + 1), events: false });
      double.clock.advance(3 * DAY_S * 1000);
      made.push(double.runPayout('acct_p', { status: i === 3 ? 'in_transit' : 'paid' }));
    }
    const options = { stripeAccount: 'acct_p' };
    const all = await everything((p) => stripe.payouts.list(p, options));
    expect(all.map((p) => p.id)).toEqual(made.map((p) => p.id).reverse());
    expect((await stripe.payouts.list({ status: 'in_transit' }, options)).data.map((p) => p.id)).toEqual([made[3]?.id]);
    const arrival = made[1]?.arrival_date as number;
    expect((await stripe.payouts.list({ arrival_date: arrival }, options)).data.map((p) => p.id)).toEqual([
      made[1]?.id,
    ]);
    const later = await stripe.payouts.list({ created: { gt: made[1]?.created as number } }, options);
    expect(later.data).toHaveLength(2);
    const before = await stripe.payouts.list({ ending_before: made[0]?.id, limit: 2 }, options);
    expect(before.data.map((p) => p.id)).toEqual([made[2]?.id, made[1]?.id]);
    expect((await stripe.payouts.list()).data).toEqual([]);
    const expanded = await stripe.payouts.retrieve(made[0]?.id as string, { expand: ['balance_transaction'] }, options);
    expect(expanded.balance_transaction).toMatchObject({ object: 'balance_transaction', type: 'payout', amount: -941 });
    const gone = await rejection(stripe.payouts.retrieve(made[0]?.id as string));
    expect([gone.statusCode, gone.code]).toEqual([404, 'resource_missing']);
  });

  it('GET /v1/balance: what is available and what is still pending', async () => {
    double.createCharge(null, { amount: 10_000 });
    double.clock.advance(3 * DAY_S * 1000);
    double.createCharge(null, { amount: 1_000 });
    const balance = await stripe.balance.retrieve();
    expect(balance).toMatchObject({
      object: 'balance',
      available: [{ amount: 9680, currency: 'usd' }],
      pending: [{ amount: 941, currency: 'usd' }],
    });
    double.runPayout(null);
    expect((await stripe.balance.retrieve()).available).toEqual([
      { amount: 0, currency: 'usd', source_types: { card: 0 } },
    ]);
  });

  it('a restricted key without Balance and Payouts read gets 403 naming the permission', async () => {
    const limited = createStripeClient({ apiKey: NO_BALANCE_KEY, apiBase: double.url, maxNetworkRetries: 0 });
    for (const [request, permission] of [
      [() => limited.balanceTransactions.list(), 'rak_balance_read'],
      [() => limited.payouts.list(), 'rak_payout_read'],
      [() => limited.balance.retrieve(), 'rak_balance_read'],
    ] as const) {
      const error = await rejection(request());
      expect(error).toBeInstanceOf(Stripe.errors.StripePermissionError);
      expect(error.message).toContain(`Having the '${permission}' permission`);
    }
    expect((await limited.refunds.list()).object).toBe('list');
  });
});
