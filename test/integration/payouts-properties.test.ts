import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { createStripeProvider } from '../../src/providers/stripe/provider.js';
import { providerSweepDeps } from '../../src/sweep/provider.js';
import { sweep, SweepFailedError, sweepOptions, type SweepReport } from '../../src/sweep/sweep.js';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { partitionedDatabase, type TestDatabase } from '../support/db.js';
import { PROPERTY_TIMEOUT } from '../support/history-sweeps.js';
import { normalizedTables } from '../support/normalized-tables.js';
import {
  CONNECTED,
  EVERY_MS,
  GRACE_MS,
  historyMaker,
  HISTORY_BASE,
  minutes,
  payoutHistoryArb,
  type HistoryWorld,
  type PayoutHistory,
} from '../support/payout-histories.js';
import { newPayoutOracle, oracleRun, type LocalRows, type PayoutOracle } from '../support/payout-oracle.js';
import { DEEP } from '../support/depth.js';
import { checkProperty } from '../support/properties.js';

/**
 * docs/judgement.md "Payouts and fees" as invariants over random money histories
 * (test/support/payout-histories.ts), on the real schema and the real sweep against the
 * test kit's Stripe double, run on a schedule between the history's events, on the
 * platform and a connected account settling in EUR. After every run, per account, against an oracle written from the page (test/support/payout-oracle.ts): every
 * balance transaction of a reconciled payout is mirrored and linked to a local row or
 * raised as unrecorded_balance_transaction; the payout's sums are Stripe's, and hold or
 * raise payout_mismatch (so does a payout returned after it was paid); unpaid_effect is
 * open for exactly the payments the grace rule names; each linked payment row carries its
 * charge's fee, net, settlement currency and exchange rate. Then a rerun changes nothing,
 * and a crash at any point of the payouts step, resumed, ends where an uninterrupted
 * history does. A failure prints the property, the seed, the path and the shrunk history
 * (test/support/properties.ts says how to replay it).
 */

const HOUR = 3_600_000;
/** The platform (USD) and a connected account settling in EUR, as the sweep names them. */
const ACCOUNTS = ['platform', CONNECTED] as const;
const doubleAccount = (account: string) => (account === 'platform' ? null : account);

let double: StripeDouble;
let db: TestDatabase;
const world = (): HistoryWorld => ({ double, pool: db.pool, clock });
const clock = { now: HISTORY_BASE.getTime() };

beforeAll(async () => {
  double = await startStripeDouble({ now: HISTORY_BASE });
  db = await partitionedDatabase(
    new Date(HISTORY_BASE.getTime() - 2 * 24 * HOUR),
    new Date(HISTORY_BASE.getTime() + 2 * 24 * HOUR),
    {
      poolSize: 6,
    },
  );
});
afterAll(async () => {
  await db.drop();
  await double.close();
});

const TABLES = [
  'recon_finding_charges',
  'recon_findings',
  'recon_refunds',
  'recon_event_cursors',
  'recon_deep_reads',
  'recon_watermarks',
  'recon_runs',
  'recon_refund_cursors',
  'recon_payout_accounts',
  'recon_payouts',
  'stripe_balance_transactions',
  'stripe_payouts',
  'stripe_refunds',
  'stripe_disputes',
  'stripe_charges',
  'stripe_charge_keys',
  'stripe_charge_references',
  'payment_refunds',
  'payments',
  'idempotency_keys',
  'idempotency_key_directory',
  'claim_outcomes',
  'claim_quota',
];

async function reset(): Promise<void> {
  clock.now = HISTORY_BASE.getTime();
  double.reset();
  double.clock.set(clock.now);
  // Charges are available at once: each payout takes what came before it.
  double.configureAccount(null, { payoutDelayDays: 0 });
  double.addAccount({ id: CONNECTED, defaultCurrency: 'eur' });
  double.configureAccount(CONNECTED, { payoutDelayDays: 0 });
  // DELETE, not TRUNCATE: a few rows each, and TRUNCATE of the partitioned tables takes a lock per
  // partition. The repairs' audit is append-only: only TRUNCATE empties it.
  await db.pool.query(`TRUNCATE recon_repairs; ${TABLES.map((t) => `DELETE FROM ${t};`).join(' ')}`);
}

/** One scheduled run of both accounts at the clock's now; `faultPoint` may throw to kill it. */
async function runSweep(
  over: { payoutEveryMs?: number; faultPoint?: (name: string) => void } = {},
): Promise<SweepReport[]> {
  const provider = createStripeProvider({
    apiKey: 'sk_test_payouts',
    apiBase: double.url,
    ratePerSecond: 10_000,
    globalRatePerSecond: 10_000,
  });
  const deps = {
    pool: db.pool,
    clock: () => new Date(clock.now),
    logger: silentLogger(),
    ...providerSweepDeps(provider),
    ...(over.faultPoint ? { faultPoint: over.faultPoint } : {}),
  };
  return sweep(
    deps,
    sweepOptions({
      mode: 'run',
      accounts: [...ACCOUNTS],
      // The first run reaches the history's start; one slice a run.
      firstRunLookbackMs: 5 * HOUR,
      sliceMs: 6 * HOUR,
      payoutGraceMs: GRACE_MS,
      payoutEveryMs: over.payoutEveryMs ?? EVERY_MS,
      allowMassRepair: true,
    }),
  );
}

async function localRows(account: string): Promise<LocalRows> {
  const payments = await db.pool.query<{ charge_id: string; status: string; amount: number; created_at: Date }>(
    `SELECT charge_id, status, amount::float8 AS amount, created_at FROM payments WHERE account = $1`,
    [account],
  );
  const refunds = await db.pool.query<{ refund_id: string }>(
    `SELECT refund_id FROM payment_refunds WHERE account = $1`,
    [account],
  );
  return { payments: payments.rows, refunds: new Set(refunds.rows.map((r) => r.refund_id)) };
}

const ids = (rows: Array<{ subject: string }>) => rows.map((r) => r.subject).sort();

/** What the database holds of payouts and fees, against what the oracle says it must. */
async function expectOracle(o: PayoutOracle, account: string, when: string): Promise<void> {
  const q = async <T extends Record<string, unknown>>(sql: string) => (await db.pool.query<T>(sql, [account])).rows;
  const payouts = await q<Record<string, unknown>>(
    `SELECT payout_id, itemised, status, transactions, charges::float8, refunds::float8, disputes::float8,
            fees::float8, other::float8, net::float8, residual::float8 FROM recon_payouts WHERE account = $1
      ORDER BY payout_id`,
  );
  const expected = [...o.seen]
    .filter(([id, p]) => !p.automatic || o.reconciled.has(id))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([id, p]) => {
      const sums = o.reconciled.get(id);
      return {
        payout_id: id,
        itemised: p.automatic,
        status: p.status,
        transactions: sums?.transactions ?? null,
        charges: sums?.charges ?? null,
        refunds: sums?.refunds ?? null,
        disputes: sums?.disputes ?? null,
        fees: sums?.fees ?? null,
        other: sums?.other ?? null,
        net: sums?.net ?? null,
        residual: sums?.residual ?? null,
      };
    });
  expect(payouts, `${when}: recon_payouts`).toEqual(expected);

  const mirrored = await q<Record<string, unknown>>(
    `SELECT txn_id, payout_id, type, reporting_category, amount::float8, fee::float8, net::float8, currency,
            exchange_rate::float8, source_id FROM stripe_balance_transactions WHERE account = $1 ORDER BY txn_id`,
  );
  expect(mirrored, `${when}: stripe_balance_transactions`).toEqual(
    [...o.transactions]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([id, { payout, txn }]) => ({
        txn_id: id,
        payout_id: payout,
        type: txn.type,
        reporting_category: txn.reporting_category,
        amount: txn.amount,
        fee: txn.fee,
        net: txn.net,
        currency: txn.currency,
        exchange_rate: txn.exchange_rate,
        source_id: typeof txn.source === 'string' ? txn.source : ((txn.source?.id as string | undefined) ?? null),
      })),
  );

  const findings = async (category: string, state?: string) =>
    ids(
      await q<{ subject: string }>(
        `SELECT subject FROM recon_findings
          WHERE account = $1 AND category = '${category}'${state ? ` AND state = '${state}'` : ''}`,
      ),
    );
  expect(await findings('payout_mismatch'), `${when}: payout_mismatch`).toEqual([...o.mismatch].sort());
  expect(await findings('payout_mismatch', 'open'), `${when}: payout_mismatch stays open`).toEqual(
    [...o.mismatch].sort(),
  );
  expect(await findings('unrecorded_balance_transaction'), `${when}: unrecorded_balance_transaction`).toEqual(
    [...o.unrecorded].sort(),
  );
  expect(await findings('unpaid_effect', 'open'), `${when}: unpaid_effect open`).toEqual([...o.unpaidOpen].sort());
  expect(
    ids(
      await q<{ subject: string }>(
        `SELECT subject FROM recon_findings
          WHERE account = $1 AND category = 'unpaid_effect' AND state <> 'open' AND closed_by = 'sweeper'`,
      ),
    ),
    `${when}: unpaid_effect closed by sweeper`,
  ).toEqual([...o.unpaidClosed].sort());

  const fees = await q<Record<string, unknown>>(
    `SELECT charge_id, fee::float8, net::float8, settlement_currency, exchange_rate::float8 FROM payments
      WHERE account = $1 ORDER BY charge_id`,
  );
  expect(fees, `${when}: fees on payment rows`).toEqual(
    fees.map((r) => {
      const f = o.fees.get(r.charge_id as string);
      return {
        charge_id: r.charge_id,
        ...(f ?? { fee: null, net: null, settlement_currency: null, exchange_rate: null }),
      };
    }),
  );
}

/** The database without what differs between two runs doing the same work (run ids, read times). */
async function snapshot(cursors = true): Promise<Record<string, unknown[]>> {
  const q = async (sql: string) => (await db.pool.query(sql)).rows;
  const tables = {
    ...(await normalizedTables(db.pool)),
    payouts: await q(
      `SELECT payout_id, account, itemised, created, arrival_date, currency, amount, status, transactions, charges, refunds,
              disputes, fees, other, net, residual FROM recon_payouts ORDER BY payout_id`,
    ),
    payoutMirror: await q(
      `SELECT account, payout_id, created, arrival_date, amount, currency, automatic, status, reconciliation_status,
              failure_code FROM stripe_payouts ORDER BY payout_id`,
    ),
    transactions: await q(
      `SELECT account, txn_id, payout_id, type, reporting_category, amount, fee, net, currency, exchange_rate, source_id,
              source_charge_id, created FROM stripe_balance_transactions ORDER BY txn_id`,
    ),
    // Cursors move with the clock, a run that does nothing new too.
    payoutAccounts: await q(
      `SELECT account, since${cursors ? ', unpaid_judged_to, listed_at' : ''} FROM recon_payout_accounts`,
    ),
    fees: await q(`SELECT charge_id, fee, net, settlement_currency, exchange_rate FROM payments ORDER BY charge_id`),
    refundRows: await q(`SELECT refund_id, charge_id, amount, status FROM payment_refunds ORDER BY refund_id`),
    findingDetails: await q(
      `SELECT category, subject, details FROM recon_findings
        WHERE category IN ('payout_mismatch', 'unrecorded_balance_transaction', 'unpaid_effect') ORDER BY category, subject`,
    ),
  };
  // Rows in one order whatever ties the ORDER BY leaves (two repairs of one charge, say).
  const canonical = (rows: unknown[]) =>
    rows.map((r) => [JSON.stringify(r), r] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(Object.entries(tables).map(([k, rows]) => [k, canonical(rows).map(([, r]) => r)]));
}

interface Crash {
  run: number;
  point: 'payouts:listed' | 'payouts:recorded' | 'listed' | 'judged' | 'reconciled' | 'payouts:unpaid';
  nth: number;
}

/**
 * The history, its runs in between, the oracle checked after each. With `crash`, that run
 * is killed at the point named (`listed`, `judged`, `reconciled`: the nth payout's) and
 * run again at once, as the next scheduled run would.
 */
async function play(h: PayoutHistory, crash: Crash | null): Promise<void> {
  await reset();
  const maker = historyMaker(world());
  const oracles = new Map(ACCOUNTS.map((a) => [a, newPayoutOracle()]));
  let next = 0;
  for (const [k, run] of h.runs.entries()) {
    for (; next < h.ops.length && (h.ops[next]?.at ?? Infinity) < run; next += 1) await maker.apply(h.ops[next]!);
    clock.now = minutes(run);
    double.clock.set(clock.now);
    if (crash?.run === k) await crashedRun(crash);
    const reports = await runSweep();
    for (const account of ACCOUNTS) {
      const report = reports.find((r) => r.account === account);
      expect(report?.status, report?.error).toBe('succeeded');
      const expected = oracleRun(oracles.get(account)!, {
        double,
        account: doubleAccount(account),
        now: clock.now,
        rows: await localRows(account),
        chargeOf: maker.made.chargeOf,
        graceMs: GRACE_MS,
        everyMs: EVERY_MS,
      });
      const when = `${account}, run ${k} at ${new Date(clock.now).toISOString()}`;
      if (crash?.run !== k)
        expect(
          {
            skipped: report?.payouts?.skipped,
            listed: report?.payouts?.listed,
            awaiting: report?.payouts?.awaiting,
            reconciled: report?.payouts?.reconciled,
          },
          `${when}: the run's payouts report`,
        ).toEqual(expected);
      await expectOracle(oracles.get(account)!, account, when);
    }
  }
  for (const [account, o] of oracles) tally(account, o);
}

/** What the histories exercised, summed over the cases (printed by a deep run): a property that checks nothing passes too. */
const exercised: Record<string, number> = {};
function tally(account: string, o: PayoutOracle): void {
  const add = (what: string, n: number) =>
    (exercised[`${account} ${what}`] = (exercised[`${account} ${what}`] ?? 0) + n);
  add('payouts reconciled', o.reconciled.size);
  add('manual payouts', [...o.seen.values()].filter((p) => !p.automatic).length);
  add('FX charge transactions', [...o.transactions.values()].filter(({ txn }) => txn.exchange_rate !== null).length);
  add('payout_mismatch', o.mismatch.size);
  add('unrecorded_balance_transaction', o.unrecorded.size);
  add('unpaid_effect open', o.unpaidOpen.size);
  add('unpaid_effect closed', o.unpaidClosed.size);
  add('fees recorded', o.fees.size);
}

/** A run killed once at the crash's point (the nth payout's, counted across the accounts), as a process dies. */
async function crashedRun(crash: Crash): Promise<void> {
  let seen = 0;
  let fired = false;
  await runSweep({
    faultPoint: (name) => {
      const step = crash.point.startsWith('payouts:');
      const hit = step ? name === crash.point : name.startsWith('payout:') && name.endsWith(`:${crash.point}`);
      if (fired || !hit || (!step && (seen += 1) !== crash.nth + 1)) return;
      fired = true;
      killed.killed += 1;
      throw new Error(`killed at ${name}`);
    },
  }).catch((error: unknown) => {
    // The account fails for its payouts step; the rest of its run stands.
    if (!(error instanceof SweepFailedError) || !/^killed at /.test(error.message)) throw error;
  });
}

/** How many crash cases were killed where they said (a history with no payout to kill at is not). */
const killed = { cases: 0, killed: 0 };
afterAll(() => {
  if (!DEEP) return;
  console.log(`payouts crash property: ${killed.killed} of ${killed.cases} cases killed at their point`);
  console.log(`payouts properties exercised (summed over cases and shrinks): ${JSON.stringify(exercised, null, 1)}`);
});

describe('payouts over random money histories', () => {
  it(
    'every balance transaction is linked or found, sums hold or payout_mismatch, unpaid_effect per the grace, fees are Stripe’s, and a rerun changes nothing',
    async () => {
      await checkProperty('payouts-properties: reconcile', { normal: 3, deep: 300 }, [payoutHistoryArb], async (h) => {
        await play(h, null);
        // A rerun a second later (payouts listed moments ago: not listed again), and one that lists them again.
        const before = await snapshot(false);
        for (const payoutEveryMs of [EVERY_MS, 0]) {
          clock.now += 1_000;
          double.clock.set(clock.now);
          for (const again of await runSweep({ payoutEveryMs })) {
            expect(again.status, again.error).toBe('succeeded');
            // An idle account between two listings is settled with others (src/sweep/quiet.ts): no payouts step.
            expect(
              again.payouts ?? { reconciled: 0, fees: 0, found: {} },
              `the rerun's payouts (SWEEPER_PAYOUT_EVERY ${payoutEveryMs})`,
            ).toMatchObject({
              reconciled: 0,
              fees: 0,
              found: {},
            });
            expect(
              Object.values(again.repaired).reduce((a, b) => a + b, 0),
              'the rerun repaired',
            ).toBe(0);
          }
          expect(await snapshot(false), `a rerun (SWEEPER_PAYOUT_EVERY ${payoutEveryMs}) changed the database`).toEqual(
            before,
          );
        }
      });
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'a crash at any point of the payouts step, resumed, ends where the uninterrupted history does',
    async () => {
      const crashArb = fc.record({
        run: fc.integer({ min: 0, max: 2 }),
        point: fc.constantFrom<Crash['point']>(
          'payouts:listed',
          'payouts:recorded',
          'listed',
          'judged',
          'reconciled',
          'payouts:unpaid',
        ),
        nth: fc.integer({ min: 0, max: 2 }),
      });
      await checkProperty(
        'payouts-properties: crash',
        { normal: 2, deep: 200 },
        [payoutHistoryArb, crashArb],
        async (h, crash) => {
          killed.cases += 1;
          await play(h, null);
          const uninterrupted = await snapshot();
          await play(h, crash);
          expect(await snapshot(), 'the end state after a crash and its resume').toEqual(uninterrupted);
        },
      );
    },
    PROPERTY_TIMEOUT,
  );
});
