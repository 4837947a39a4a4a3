import nock from 'nock';
import { describe, expect, it } from 'vitest';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { MissingReadPermissionError } from '../../src/providers/stripe/errors.js';
import { createStripePayouts } from '../../src/providers/stripe/payouts.js';
import { RateBudget } from '../../src/providers/stripe/rate-budget.js';
import { everyTestThroughNock, STRIPE_ORIGIN } from '../support/stripe-nock.js';
import { failure } from '../support/promises.js';

/** The payouts adapter through the real SDK: paging, Stripe-Account, expand, 403s, what cannot be read. */

const stripe = createStripeClient({ apiKey: 'sk_test_payouts', maxNetworkRetries: 2 });
const FROM = new Date('2026-03-10T00:00:00Z');
const TO = new Date('2026-03-12T00:00:00Z');

const payout = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  object: 'payout',
  amount: 9_000,
  arrival_date: 1_773_273_600,
  automatic: true,
  created: 1_773_180_000,
  currency: 'usd',
  status: 'paid',
  reconciliation_status: 'completed',
  failure_code: null,
  ...extra,
});
const txn = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  object: 'balance_transaction',
  amount: 10_000,
  fee: 320,
  net: 9_680,
  currency: 'usd',
  exchange_rate: null,
  created: 1_773_100_000,
  type: 'charge',
  reporting_category: 'charge',
  source: { id: `ch_${id.slice(4)}`, object: 'charge', amount: 10_000, currency: 'usd' },
  ...extra,
});
const list = (data: unknown[], hasMore = false) => ({ object: 'list', data, has_more: hasMore, url: '/v1/x' });

function payouts() {
  return createStripePayouts({
    stripe,
    budget: new RateBudget({ ratePerSecond: 1_000, burst: 1_000, clock: () => 0, sleep: async () => undefined }),
    retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1, maxRetryAfterMs: 1 },
    sleep: async () => undefined,
  });
}

async function all<T>(pages: AsyncIterable<T[]>): Promise<T[]> {
  const out: T[] = [];
  for await (const page of pages) out.push(...page);
  return out;
}

const FORBIDDEN = (permission: string) => ({
  error: {
    type: 'invalid_request_error',
    message: `The provided key 'rk_test_****1234' does not have the required permissions for this endpoint. Having the '${permission}' permission would allow this request to continue.`,
  },
});

describe('Stripe payouts adapter', () => {
  everyTestThroughNock();

  it('lists payouts by created, page after page, as the connected account', async () => {
    const seen: Array<string | undefined> = [];
    nock(STRIPE_ORIGIN)
      .get('/v1/payouts')
      .query((q) => q['created[gte]'] === '1773100800' && q['created[lt]'] === '1773273600' && q.limit === '100')
      .reply(function () {
        seen.push(this.req.headers['stripe-account'] as string | undefined);
        return [200, list([payout('po_2'), payout('po_1', { automatic: false })], true)];
      })
      .get('/v1/payouts')
      .query((q) => q.starting_after === 'po_1')
      .reply(200, list([payout('po_0', { status: 'in_transit', reconciliation_status: 'in_progress' })]));
    const read = await all(payouts().listPayouts('acct_1', { from: FROM, to: TO }));
    expect(read.map((p) => [p.id, p.automatic, p.status, p.reconciliationStatus, p.account])).toEqual([
      ['po_2', true, 'paid', 'completed', 'acct_1'],
      ['po_1', false, 'paid', 'completed', 'acct_1'],
      ['po_0', true, 'in_transit', 'in_progress', 'acct_1'],
    ]);
    expect(seen).toEqual(['acct_1']);
  });

  it("lists a payout's balance transactions with their sources expanded, and reads a refund's charge", async () => {
    nock(STRIPE_ORIGIN)
      .get('/v1/balance_transactions')
      .query((q) => q.payout === 'po_1' && q['expand[0]'] === 'data.source' && q.limit === '100')
      .reply(200, (_uri) =>
        list([
          txn('txn_a', { exchange_rate: 1.08 }),
          txn('txn_r', {
            type: 'refund',
            reporting_category: 'refund',
            amount: -500,
            fee: 0,
            net: -500,
            source: { id: 're_1', object: 'refund', charge: 'ch_x' },
          }),
          txn('txn_p', {
            type: 'payout',
            reporting_category: 'payout',
            amount: -9_180,
            fee: 0,
            net: -9_180,
            source: 'po_1',
          }),
        ]),
      );
    const read = await all(payouts().payoutTransactions('platform', 'po_1'));
    expect(read.map((t) => [t.id, t.type, t.net, t.sourceId, t.sourceChargeId, t.exchangeRate])).toEqual([
      ['txn_a', 'charge', 9_680, 'ch_a', null, 1.08],
      ['txn_r', 'refund', -500, 're_1', 'ch_x', null],
      ['txn_p', 'payout', -9_180, 'po_1', null, null],
    ]);
  });

  it("lists a large payout's transactions by created sub-windows at once, each exactly once", async () => {
    // 1,050 transactions over two days, newest first by (created, id) as Stripe lists them.
    const all_ = Array.from({ length: 1_050 }, (_, i) => ({
      id: `txn_${String(i).padStart(5, '0')}`,
      created: 1_773_000_000 + Math.floor((i * 172_800) / 1_050),
    })).sort((a, b) => b.created - a.created || (a.id < b.id ? 1 : -1));
    const asked: Array<Record<string, string>> = [];
    let inFlight = 0;
    let mostInFlight = 0;
    nock(STRIPE_ORIGIN)
      .get('/v1/balance_transactions')
      .query(true)
      .times(40)
      .reply(async function () {
        const q = Object.fromEntries(new URLSearchParams(this.req.path.slice(this.req.path.indexOf('?') + 1)));
        asked.push(q);
        inFlight += 1;
        mostInFlight = Math.max(mostInFlight, inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight -= 1;
        const gte = Number(q['created[gte]'] ?? 0);
        const lt = Number(q['created[lt]'] ?? Number.POSITIVE_INFINITY);
        let rows = all_.filter((t) => t.created >= gte && t.created < lt);
        if (q.starting_after) rows = rows.slice(rows.findIndex((t) => t.id === q.starting_after) + 1);
        const page = rows.slice(0, Number(q.limit));
        return [
          200,
          list(
            page.map((t) => txn(t.id, { created: t.created })),
            rows.length > page.length,
          ),
        ];
      });
    const read = await all(payouts().payoutTransactions('platform', 'po_big'));
    nock.cleanAll(); // the interceptor's unused repetitions
    expect(read.map((t) => t.id).sort()).toEqual(all_.map((t) => t.id).sort());
    expect(new Set(read.map((t) => t.id)).size).toBe(1_050);
    expect(asked.every((q) => q.payout === 'po_big' && q['expand[0]'] === 'data.source' && q.limit === '100')).toBe(
      true,
    );
    // The first request has no created filter: a payout's transactions have no known bounds.
    expect(asked[0]).not.toHaveProperty('created[gte]');
    expect(asked[0]).not.toHaveProperty('created[lt]');
    expect(mostInFlight).toBeGreaterThan(1);
    // 11 pages of data; the splits cost a few partial pages, never a page per halving from 1970.
    expect(asked.length).toBeGreaterThanOrEqual(11);
    expect(asked.length).toBeLessThanOrEqual(20);
  });

  it("a payout's listing whose cursor does not advance fails, naming the payout", async () => {
    nock(STRIPE_ORIGIN)
      .get('/v1/balance_transactions')
      .query(true)
      .times(20)
      .reply(function () {
        const q = new URLSearchParams(this.req.path.slice(this.req.path.indexOf('?') + 1));
        if (q.get('starting_after') === 'txn_a') return [200, list([txn('txn_a', { created: 10 })], true)];
        if (!q.has('created[lt]'))
          return [200, list([txn('txn_b', { created: 10 }), txn('txn_a', { created: 10 })], true)];
        return [200, list([])];
      });
    const error = await failure(all(payouts().payoutTransactions('acct_2', 'po_1')));
    nock.cleanAll();
    expect(error.message).toContain('the balance transactions of po_1 of acct_2 cannot be listed');
  });

  it('403 on payouts names Payouts read; on balance transactions, Balance read', async () => {
    nock(STRIPE_ORIGIN).get('/v1/payouts').query(true).reply(403, FORBIDDEN('rak_payout_read'));
    const noPayouts = await failure(all(payouts().listPayouts('platform', { from: FROM, to: TO })));
    expect(noPayouts).toBeInstanceOf(MissingReadPermissionError);
    expect(noPayouts.message).toMatch(
      /^the Stripe key may not read payouts of the platform account \(403\): it is missing the Payouts read permission \(rak_payout_read\)\. Grant 'Payouts: Read'/,
    );
    nock(STRIPE_ORIGIN).get('/v1/balance_transactions').query(true).reply(403, FORBIDDEN('rak_balance_read'));
    const noBalance = await failure(all(payouts().payoutTransactions('acct_9', 'po_1')));
    expect(noBalance).toBeInstanceOf(MissingReadPermissionError);
    expect(noBalance.message).toContain('may not read balance transactions of account acct_9 (403)');
    expect(noBalance.message).toContain('Balance read permission (rak_balance_read)');
  });

  it('retries spent on 429s: one line naming the listing and the account', async () => {
    const limited = { error: { type: 'rate_limit_error', message: 'Too many requests.', code: 'rate_limit' } };
    nock(STRIPE_ORIGIN).get('/v1/payouts').query(true).times(2).reply(429, limited);
    const listing = await failure(all(payouts().listPayouts('acct_4', { from: FROM, to: TO })));
    expect(listing.message).toMatch(
      /^the payouts listing of acct_4 could not be read: gave up after 2 attempts, the last: HTTP 429/,
    );
    nock(STRIPE_ORIGIN).get('/v1/balance_transactions').query(true).times(2).reply(429, limited);
    const txns = await failure(all(payouts().payoutTransactions('acct_4', 'po_7')));
    expect(txns.message).toMatch(
      /^the balance transactions of po_7 of acct_4 could not be listed: gave up after 2 attempts, the last: HTTP 429/,
    );
  });

  it('a transaction that cannot be summed fails the listing, naming it', async () => {
    nock(STRIPE_ORIGIN)
      .get('/v1/balance_transactions')
      .query(true)
      .reply(200, list([txn('txn_bad', { net: 1 })]));
    const error = await failure(all(payouts().payoutTransactions('platform', 'po_1')));
    expect(error.message).toContain('balance transaction txn_bad');
    expect(error.message).toContain('net 1 is not amount 10000 less fee 320');
  });

  it('a payout with an unknown reconciliation_status fails the listing, naming it', async () => {
    nock(STRIPE_ORIGIN)
      .get('/v1/payouts')
      .query(true)
      .reply(200, list([payout('po_odd', { reconciliation_status: 'soon' })]));
    const error = await failure(all(payouts().listPayouts('platform', { from: FROM, to: TO })));
    expect(error.message).toContain('payout po_odd');
    expect(error.message).toContain('reconciliation_status is missing or unknown');
  });
});
