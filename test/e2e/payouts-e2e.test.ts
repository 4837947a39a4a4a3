import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClaimClient } from '../../src/claims/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { cloneDatabase, partitionedDatabase, type TestDatabase } from '../support/db.js';
import { cliEnv, SHORT_RUN_SETTINGS, runCli } from '../support/cli.js';
import { normalizedTables } from '../support/normalized-tables.js';

/**
 * docs/judgement.md "Payouts and fees", end to end: `sweeper run` and `sweeper report
 * payouts` as subprocesses against the Stripe double over HTTP. The application charges
 * (one charge presented in EUR on a USD account) and refunds through the claim library;
 * the double pays out:
 * - P1: two charges (one FX) and a refund: reconciles to the cent, fees on the rows;
 * - P2: a charge made outside the application, and 7 cents nothing explains;
 * - P3: a charge, its reconciliation held until after the first run;
 * then one more payment no payout holds. Then a key without Payouts read.
 *
 * Time: the CLI runs on the real clock; the history is dated minutes back. The payment no
 * payout holds is made old (and the account's payout state with it) by moving its rows back.
 */

const MIN = 60_000;
const FULL_KEY = 'rk_test_EverythingRead';
const NO_PAYOUTS_KEY = 'rk_test_NoPayouts';
const READ = ['rak_charge_read', 'rak_event_read', 'rak_refund_read'];
const keyPolicy = {
  permissions: {
    [FULL_KEY]: [...READ, 'rak_payout_read', 'rak_balance_read'],
    [NO_PAYOUTS_KEY]: READ,
  },
};

const databases: TestDatabase[] = [];
let double: StripeDouble;
let base: TestDatabase;
const ids: Record<string, string> = {};

function env(db: TestDatabase, key: string, extra: Record<string, string> = {}): Record<string, string> {
  return cliEnv(
    { db, stripe: double.url, key },
    {
      ...SHORT_RUN_SETTINGS,
      SWEEPER_PAYOUT_GRACE: '1h',
      SWEEPER_PAYOUT_EVERY: '1s',
      ...extra,
    },
  );
}

async function run(db: TestDatabase, key = FULL_KEY, extra: Record<string, string> = {}) {
  // The built CLI starts within the second the last run listed payouts: moving that listing
  // two seconds back is this run starting later, past SWEEPER_PAYOUT_EVERY (1s here).
  await db.pool.query(`UPDATE recon_payout_accounts SET listed_at = listed_at - interval '2 seconds'`);
  const result = await runCli(['run', '--json'], env(db, key, extra));
  const line = result.stdout.trim().split('\n')[0];
  return { ...result, report: line ? JSON.parse(line) : null };
}

const rows = async (db: TestDatabase, sql: string, args: unknown[] = []) => (await db.pool.query(sql, args)).rows;

async function clone(): Promise<TestDatabase> {
  const db = await cloneDatabase(base.name);
  databases.push(db);
  return db;
}

async function history(db: TestDatabase): Promise<void> {
  const stripe = createStripeClient({ apiKey: 'sk_test_payments', apiBase: double.url, maxNetworkRetries: 0 });
  const library = createClaimClient({
    pool: db.pool,
    stripe,
    leaseMs: 5_000,
    maxAmount: 1_000_000,
    metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
    clock: () => new Date(Date.now() - 3 * MIN),
  });
  double.clock.set(new Date(Date.now() - 3 * MIN));
  // Charges are available at once, so each payout can take them.
  double.configureAccount(null, { payoutDelayDays: 0 });
  const pay = async (name: string, amount: number, currency = 'usd') => {
    const paid = await library.chargeOnce({
      tenantId: 'acme',
      key: `order-${name}`,
      request: { amount, currency, paymentMethod: 'pm_card_visa' },
    });
    expect(paid.outcome).toBe('charged');
    ids[name] = (await rows(db, `SELECT charge_id FROM payments WHERE idempotency_key = $1`, [`order-${name}`]))[0]
      .charge_id as string;
  };
  await pay('a', 5000);
  await pay('fx', 4000, 'eur');
  const refund = await library.refundOnce({
    tenantId: 'acme',
    key: 'refund-a',
    request: { chargeId: ids.a!, amount: 1000 },
  });
  expect(refund.outcome).toBe('refunded');
  ids.p1 = double.runPayout(null).id;
  // Made outside the application: no payment row will ever name it.
  ids.outside = double.createCharge(null, { amount: 2500 }).id;
  await pay('c', 3000);
  ids.p2 = double.runPayout(null, { unexplained: 7 }).id;
  await pay('d', 1200);
  ids.p3 = double.runPayout(null, { holdReconciliation: true }).id;
  await pay('old', 900);
  double.clock.useRealTime();
}

beforeAll(async () => {
  double = await startStripeDouble({ keys: keyPolicy });
  // Two days back to tomorrow: the history's days and the runs'.
  base = await partitionedDatabase(new Date(Date.now() - 2 * 86_400_000), undefined, { poolSize: 2 });
  databases.push(base);
  await history(base);
  await base.pool.end();
});

afterAll(async () => {
  for (const db of databases) await db.drop();
  await double.close();
});

async function payoutsReport(db: TestDatabase, format: 'csv' | 'json', extra: string[] = []) {
  return runCli(['report', 'payouts', '--format', format, ...extra], env(db, FULL_KEY));
}

describe('payouts and fees, through `sweeper run` and `sweeper report payouts`', () => {
  it('reconciles P1 to the cent with its FX charge, finds P2 off and its stranger, waits for P3, then judges it', async () => {
    const db = await clone();
    const first = await run(db);
    expect(first.code, first.stderr).toBe(3);
    expect(first.report.payouts).toMatchObject({
      listed: 3,
      reconciled: 2,
      awaiting: 1,
      not_itemised: 0,
      found: { payout_mismatch: 1, unrecorded_balance_transaction: 1 },
    });
    const findings = await rows(
      db,
      `SELECT category, subject, charge_id, details->>'reason' AS reason FROM recon_findings
        WHERE category IN ('payout_mismatch', 'unrecorded_balance_transaction', 'unpaid_effect') ORDER BY category`,
    );
    expect(findings).toEqual([
      {
        category: 'payout_mismatch',
        subject: ids.p2,
        charge_id: null,
        reason: expect.stringContaining('residual of 7'),
      },
      {
        category: 'unrecorded_balance_transaction',
        subject: expect.stringMatching(/^txn_/),
        charge_id: ids.outside,
        reason: expect.stringContaining(`payout ${ids.p2}`),
      },
    ]);
    // Fees from each charge's balance transaction; the EUR charge settled in USD at the double's rate.
    const rate = double.exchangeRate('eur', 'usd') as number;
    const fees = await rows(
      db,
      `SELECT idempotency_key AS key, currency, fee::int, net::int, settlement_currency, exchange_rate::float8
         FROM payments WHERE idempotency_key IN ('order-a', 'order-fx', 'order-d') ORDER BY idempotency_key`,
    );
    const fxSettled = Math.round(4000 * rate);
    const fxFee = Math.round((fxSettled * 3.9) / 100) + 30;
    expect(fees).toEqual([
      { key: 'order-a', currency: 'usd', fee: 175, net: 4825, settlement_currency: 'usd', exchange_rate: null },
      { key: 'order-d', currency: 'usd', fee: null, net: null, settlement_currency: null, exchange_rate: null },
      {
        key: 'order-fx',
        currency: 'eur',
        fee: fxFee,
        net: fxSettled - fxFee,
        settlement_currency: 'usd',
        exchange_rate: rate,
      },
    ]);

    // P3's reconciliation completes: the next run judges it, and nothing else changes.
    double.completePayoutReconciliation(ids.p3!);
    const second = await run(db);
    expect(second.code, second.stderr).toBe(3);
    expect(second.report.payouts).toMatchObject({ listed: 3, reconciled: 1, awaiting: 0, found: {} });
    expect(
      await rows(db, `SELECT fee::int, settlement_currency FROM payments WHERE idempotency_key = 'order-d'`),
    ).toEqual([{ fee: 65, settlement_currency: 'usd' }]);

    // The report's sums: P1 reconciles, P2 is 7 off, P3 reconciles.
    const json = await payoutsReport(db, 'json');
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as Array<Record<string, unknown>>;
    const byId = new Map(report.map((r) => [r.id, r]));
    expect(byId.get(ids.p1)).toMatchObject({
      account: 'platform',
      currency: 'usd',
      itemised: true,
      status: 'paid',
      transactions: 3,
      charges: 5000 + fxSettled,
      refunds: -1000,
      disputes: 0,
      fees: 175 + fxFee,
      other: 0,
      net: 5000 + fxSettled - 1000 - 175 - fxFee,
      payout_amount: 5000 + fxSettled - 1000 - 175 - fxFee,
      residual: 0,
    });
    expect(byId.get(ids.p2)).toMatchObject({ charges: 5500, fees: 103 + 117, residual: 7 });
    expect(byId.get(ids.p3)).toMatchObject({ charges: 1200, fees: 65, net: 1135, payout_amount: 1135, residual: 0 });
    const csv = await payoutsReport(db, 'csv');
    const lines = csv.stdout.trim().split('\n');
    expect(lines[0]).toBe(
      'id,account,arrival_date,created,status,currency,itemised,transactions,charges,refunds,disputes,fees,other,net,payout_amount,residual',
    );
    expect(lines).toHaveLength(4);
    expect(lines.find((l) => l.startsWith(`${ids.p2},`))).toMatch(/,7$/);
    const none = await payoutsReport(db, 'json', ['--to', '2000-01-01T00:00:00Z']);
    expect(none.stdout.trim()).toBe('[]');

    // A rerun changes nothing.
    const tables = async () => ({
      ...(await normalizedTables(db.pool)),
      payouts: await rows(db, `SELECT * FROM recon_payouts ORDER BY payout_id`).then((r) =>
        r.map(({ run_id: _r, reconciled_at: _a, updated_at: _u, ...rest }) => rest),
      ),
      fees: await rows(db, `SELECT charge_id, fee, net, settlement_currency, exchange_rate FROM payments ORDER BY 1`),
    });
    const before = await tables();
    const third = await run(db);
    expect(third.code, third.stderr).toBe(3);
    expect(third.report.payouts).toMatchObject({ reconciled: 0, found: {} });
    expect(await tables()).toEqual(before);
  });

  it('an old payment in no payout is unpaid_effect; it closes once a payout holds it', async () => {
    const db = await clone();
    await run(db);
    // The payment, and the account's payouts state, become two hours older than they are.
    await db.pool.query(
      `UPDATE payments SET created_at = created_at - interval '2 hours' WHERE idempotency_key = 'order-old'`,
    );
    await db.pool.query(
      `UPDATE recon_payout_accounts SET since = since - interval '3 hours', unpaid_judged_to = unpaid_judged_to - interval '3 hours'`,
    );
    const next = await run(db);
    expect(next.code, next.stderr).toBe(3);
    expect(next.report.payouts.found).toEqual({ unpaid_effect: 1 });
    expect(await rows(db, `SELECT subject, state FROM recon_findings WHERE category = 'unpaid_effect'`)).toEqual([
      { subject: ids.old, state: 'open' },
    ]);
    // Still unpaid: found again, not counted again.
    expect((await run(db)).report.payouts.found).toEqual({});
    // A payout takes it: the finding heals.
    const p4 = double.runPayout(null);
    const paid = await run(db);
    expect(paid.report.payouts).toMatchObject({ reconciled: 1 });
    expect(await rows(db, `SELECT state, closed_by FROM recon_findings WHERE category = 'unpaid_effect'`)).toEqual([
      { state: 'resolved', closed_by: 'sweeper' },
    ]);
    expect(await rows(db, `SELECT residual::int FROM recon_payouts WHERE payout_id = $1`, [p4.id])).toEqual([
      { residual: 0 },
    ]);
  });

  it('a paid payout that fails later is a payout_mismatch, kept open', async () => {
    const db = await clone();
    await run(db);
    // The double has no undo: the tests after this one see P1 failed from their first run.
    double.failPayout(ids.p1!, { code: 'account_closed' });
    const next = await run(db);
    expect(next.report.payouts.found).toMatchObject({ payout_mismatch: 1 });
    const [finding] = await rows(
      db,
      `SELECT state, details->>'reason' AS reason FROM recon_findings WHERE category = 'payout_mismatch' AND subject = $1`,
      [ids.p1],
    );
    expect(finding).toEqual({
      state: 'open',
      reason: expect.stringContaining('failed after it was paid (account_closed)'),
    });
    expect((await run(db)).report.payouts.found).toEqual({});
  });

  it('lists payouts once per SWEEPER_PAYOUT_EVERY: the runs between send no payout request', async () => {
    const db = await clone();
    const hourly = { SWEEPER_PAYOUT_EVERY: '1h' };
    const requests = () => ({
      payouts: double.counters.get('GET /v1/payouts'),
      balance: double.counters.get('GET /v1/balance_transactions'),
    });
    const before = requests();
    const first = await run(db, FULL_KEY, hourly);
    expect(first.report.payouts).toMatchObject({ skipped: false });
    expect(first.report.payouts.reconciled).toBeGreaterThanOrEqual(3);
    const afterFirst = requests();
    // One listing page; then one page of transactions for each payout reconciled.
    expect(afterFirst.payouts - before.payouts).toBe(1);
    expect(afterFirst.balance - before.balance).toBe(first.report.payouts.reconciled);
    const second = await run(db, FULL_KEY, hourly);
    expect(second.code, second.stderr).toBe(3);
    expect(second.report.payouts).toMatchObject({ skipped: true, listed: 0 });
    expect(requests()).toEqual(afterFirst);
  });

  it("a connected account's payouts are read with its Stripe-Account, in its settlement currency", async () => {
    const db = await clone();
    const account = 'acct_1PayoutsEur';
    double.addAccount({ id: account, defaultCurrency: 'eur' });
    double.configureAccount(account, { payoutDelayDays: 0 });
    const charge = double.createCharge(account, { amount: 3000, currency: 'usd' });
    await db.pool.query(
      `INSERT INTO payments (charge_id, account_id, amount, currency, status, created_at, updated_at)
       VALUES ($1, $2, 3000, 'usd', 'succeeded', now(), now())`,
      [charge.id, account],
    );
    const payout = double.runPayout(account);
    const platformListings = double.counters.account(null, 'GET /v1/payouts');
    const result = await run(db, FULL_KEY, { SWEEPER_ACCOUNTS: account });
    expect(result.report.payouts).toMatchObject({ listed: 1, reconciled: 1, linked: 1, fees: 1, found: {} });
    expect(double.counters.account(account, 'GET /v1/payouts')).toBe(1);
    expect(double.counters.account(null, 'GET /v1/payouts')).toBe(platformListings);
    const rate = double.exchangeRate('usd', 'eur') as number;
    expect(
      await rows(db, `SELECT settlement_currency, exchange_rate::float8 AS rate FROM payments WHERE charge_id = $1`, [
        charge.id,
      ]),
    ).toEqual([{ settlement_currency: 'eur', rate }]);
    expect(
      await rows(db, `SELECT account, currency, residual::int, charges::int FROM recon_payouts WHERE payout_id = $1`, [
        payout.id,
      ]),
    ).toEqual([{ account, currency: 'eur', residual: 0, charges: Math.round(3000 * rate) }]);
  });

  it('without Payouts read: one line naming the permission, exit 1, and the rest of the run stands', async () => {
    const db = await clone();
    const result = await run(db, NO_PAYOUTS_KEY);
    expect(result.code).toBe(1);
    const last = result.stderr.trim().split('\n').at(-1) ?? '';
    expect(last).toMatch(
      /^sweeper: the Stripe key may not read payouts of the platform account \(403\): it is missing the Payouts read permission \(rak_payout_read\)\. Grant 'Payouts: Read' to the restricted key\./,
    );
    expect(result.report).toMatchObject({ status: 'failed', error: expect.stringMatching(/Payouts read/) });
    expect(await rows(db, `SELECT count(*)::int AS n FROM stripe_charges`)).toEqual([{ n: 6 }]);
    expect(await rows(db, `SELECT count(*)::int AS n FROM recon_watermarks WHERE account = 'platform'`)).toEqual([
      { n: 1 },
    ]);
    expect(await rows(db, `SELECT count(*)::int AS n FROM recon_payouts`)).toEqual([{ n: 0 }]);
  });
});
