import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClaimClient } from '../../src/claims/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { cloneDatabase, partitionedDatabase, type TestDatabase } from '../support/db.js';
import { cliEnv, SHORT_RUN_SETTINGS, runCli } from '../support/cli.js';
import { normalizedTables } from '../support/normalized-tables.js';

/**
 * docs/judgement.md "Refunds the application makes", end to end: `sweeper run` as a
 * subprocess against the Stripe double over HTTP. The application charges and refunds
 * through the claim library (refundOnce); then a worker dies after Stripe refunded, a
 * refund row names a refund Stripe never made, and a recorded refund fails at Stripe
 * (before the run, and after it, reaching the next run through its event). Then a key
 * without Refunds read.
 *
 * Time: the CLI runs on the real clock; the history is dated minutes back, inside the
 * first run's lookback, and older than SWEEPER_SETTLE. The library's clock runs a minute
 * behind, so the dead worker's 5 s lease has expired when the sweep looks. Nothing sleeps.
 */

const MIN = 60_000;
const FULL_KEY = 'rk_test_ChargesEventsRefunds';
const NO_REFUNDS_KEY = 'rk_test_ChargesAndEvents';
const keyPolicy = {
  permissions: {
    [FULL_KEY]: ['rak_charge_read', 'rak_event_read', 'rak_refund_read', 'rak_payout_read', 'rak_balance_read'],
    [NO_REFUNDS_KEY]: ['rak_charge_read', 'rak_event_read', 'rak_payout_read', 'rak_balance_read'],
  },
};

const databases: TestDatabase[] = [];
let double: StripeDouble;
let base: TestDatabase;
const ids: Record<string, string> = {};

function env(db: TestDatabase, key: string): Record<string, string> {
  return cliEnv(
    { db, stripe: double.url, key },
    {
      ...SHORT_RUN_SETTINGS,
    },
  );
}

async function run(db: TestDatabase, key = FULL_KEY) {
  const result = await runCli(['run', '--json'], env(db, key));
  const line = result.stdout.trim().split('\n')[0];
  return { ...result, report: line ? JSON.parse(line) : null };
}

const rows = async (db: TestDatabase, sql: string, args: unknown[] = []) => (await db.pool.query(sql, args)).rows;

async function clone(): Promise<TestDatabase> {
  const db = await cloneDatabase(base.name);
  databases.push(db);
  return db;
}

/** The application's history: four orders paid and refunded through the claim library, one worker dying. */
async function history(db: TestDatabase): Promise<void> {
  const stripe = createStripeClient({ apiKey: 'sk_test_payments', apiBase: double.url, maxNetworkRetries: 0 });
  const settings = {
    pool: db.pool,
    stripe,
    leaseMs: 5_000,
    maxAmount: 1_000_000,
    metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
    clock: () => new Date(Date.now() - 3 * MIN),
  };
  const library = createClaimClient(settings);
  // Stripe dates what it makes three minutes back too: inside the first run's window.
  double.clock.set(new Date(Date.now() - 3 * MIN));
  for (const [name, amount] of [
    ['a', 5000],
    ['b', 4000],
    ['c', 3000],
    ['d', 2000],
  ] as const) {
    const paid = await library.chargeOnce({
      tenantId: 'acme',
      key: `order-${name}`,
      request: { amount, currency: 'usd', paymentMethod: 'pm_card_visa' },
    });
    expect(paid.outcome).toBe('charged');
    ids[name] = (await rows(db, `SELECT charge_id FROM payments WHERE idempotency_key = $1`, [`order-${name}`]))[0]
      .charge_id as string;
  }
  // A: refunded and recorded; nothing to find.
  const a = await library.refundOnce({ tenantId: 'acme', key: 'refund-a', request: { chargeId: ids.a! } });
  expect(a.outcome).toBe('refunded');
  // B: the worker dies between Stripe's refund and its commit: the claim is left in flight.
  const dying = createClaimClient({
    ...settings,
    hooks: {
      afterStripeCall: () => {
        throw new Error('the worker died');
      },
    },
  });
  await expect(
    dying.refundOnce({ tenantId: 'acme', key: 'refund-b', request: { chargeId: ids.b!, amount: 1500 } }),
  ).rejects.toThrow('the worker died');
  // C: refunded and recorded, then the bank returns it (before any run).
  const c = await library.refundOnce({ tenantId: 'acme', key: 'refund-c', request: { chargeId: ids.c! } });
  expect(c.outcome).toBe('refunded');
  ids.refundC = (c.body as { id: string }).id;
  double.failRefund(ids.refundC, 'expired_or_canceled_card');
  // D: a row recording a refund Stripe never made (code that wrote the row before asking).
  await db.pool.query(
    `INSERT INTO payment_refunds (refund_id, charge_id, tenant_id, idempotency_key, amount, currency, status, created_at, updated_at)
     VALUES ('re_never_made', $1, 'acme', 'refund-d', 2000, 'usd', 'succeeded', now() - interval '3 minutes', now() - interval '3 minutes')`,
    [ids.d],
  );
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

describe('refunds the application makes, through `sweeper run`', () => {
  it('repairs the dead worker, keeps the failed refund and the refund never made open, and a rerun changes nothing', async () => {
    const db = await clone();
    const first = await run(db);
    expect(first.code, first.stderr).toBe(3);
    expect(first.report.refunds).toMatchObject({
      days_listed: expect.any(Number),
      found: { refund_without_effect: 1, refund_status_drift: 1, refund_effect_without_refund: 1 },
      repaired: { refund_without_effect: 1, refund_status_drift: 1 },
    });
    expect(first.report.refunds.listed).toBeGreaterThanOrEqual(3);

    // B: the row from Stripe's refund, and the claim completed with its answer, so a retry replays it.
    const b = await rows(
      db,
      `SELECT r.amount::int AS amount, r.status, k.status AS claim, k.response_body->>'id' = r.refund_id AS answer_names_row
         FROM payment_refunds r JOIN idempotency_keys k ON (k.tenant_id, k.key) = (r.tenant_id, r.idempotency_key)
        WHERE r.idempotency_key = 'refund-b'`,
    );
    expect(b).toEqual([{ amount: 1500, status: 'succeeded', claim: 'completed', answer_names_row: true }]);
    // C: the row takes Stripe's state; the finding stays open with the reason.
    expect(await rows(db, `SELECT status FROM payment_refunds WHERE refund_id = $1`, [ids.refundC])).toEqual([
      { status: 'failed' },
    ]);
    const findings = await rows(
      db,
      `SELECT category, state, subject FROM recon_findings WHERE category LIKE 'refund%' ORDER BY category`,
    );
    expect(findings).toEqual([
      { category: 'refund_effect_without_refund', state: 'open', subject: 're_never_made' },
      { category: 'refund_status_drift', state: 'open', subject: ids.refundC },
      { category: 'refund_without_effect', state: 'repaired', subject: expect.stringMatching(/^re_/) },
    ]);

    const refundTables = async () => ({
      ...(await normalizedTables(db.pool)),
      refunds: await rows(db, `SELECT refund_id, status, amount FROM payment_refunds ORDER BY refund_id`),
    });
    const before = await refundTables();
    const second = await run(db);
    expect(second.code, second.stderr).toBe(3);
    expect(second.report.refunds.found).toEqual({});
    expect(second.report.refunds.repaired).toEqual({});
    expect(await refundTables()).toEqual(before);
  });

  it('a refund that fails after the run that saw it succeed reaches the next run through its event', async () => {
    const db = await clone();
    await run(db);
    const refundA = (await rows(db, `SELECT refund_id FROM payment_refunds WHERE idempotency_key = 'refund-a'`))[0]
      .refund_id as string;
    await db.pool.query(`UPDATE recon_event_cursors SET cursor = cursor - interval '2 minutes'`);
    double.cancelRefund(refundA, { created: new Date(Date.now() - 66_000) });
    const next = await run(db);
    expect(next.code, next.stderr).toBe(3);
    expect(next.report.refunds.found).toMatchObject({ refund_status_drift: 1 });
    expect(await rows(db, `SELECT status FROM payment_refunds WHERE refund_id = $1`, [refundA])).toEqual([
      { status: 'canceled' },
    ]);
    expect(
      await rows(db, `SELECT state FROM recon_findings WHERE category = 'refund_status_drift' AND subject = $1`, [
        refundA,
      ]),
    ).toEqual([{ state: 'open' }]);
  });

  it('without Refunds read: one line naming the permission, exit 1, and the charges of the window still swept', async () => {
    const db = await clone();
    const result = await run(db, NO_REFUNDS_KEY);
    expect(result.code).toBe(1);
    const last = result.stderr.trim().split('\n').at(-1) ?? '';
    expect(last).toMatch(
      /^sweeper: the Stripe key may not read refunds of the platform account \(403\): it is missing the Refunds read permission \(rak_refund_read\)\. Grant 'Refunds: Read' to the restricted key\./,
    );
    expect(result.report).toMatchObject({ status: 'failed', error: expect.stringMatching(/Refunds read/) });
    expect(await rows(db, `SELECT count(*)::int AS n FROM stripe_charges`)).toEqual([{ n: 4 }]);
    expect(await rows(db, `SELECT count(*)::int AS n FROM recon_watermarks WHERE account = 'platform'`)).toEqual([
      { n: 1 },
    ]);
    // Nothing about refunds was judged, so nothing was repaired from half the evidence.
    expect(await rows(db, `SELECT count(*)::int AS n FROM recon_findings WHERE category LIKE 'refund%'`)).toEqual([
      { n: 0 },
    ]);
  });
});

describe('disputes: the payment row follows the dispute through its events', () => {
  it('needs_response when opened, then won when closed, each by status_drift; a rerun changes nothing', async () => {
    const db = await clone();
    const dated = () => ({ created: new Date(Date.now() - 66_000) });
    expect((await run(db)).code).toBe(3);
    const status = async () =>
      (await rows(db, `SELECT dispute_status, disputed FROM payments WHERE charge_id = $1`, [ids.a]))[0];

    double.openDispute(ids.a!, { events: dated() });
    await db.pool.query(`UPDATE recon_event_cursors SET cursor = cursor - interval '2 minutes'`);
    const opened = await run(db);
    expect(opened.code, opened.stderr).toBe(3);
    expect(opened.report.changes).toMatchObject({ disputes: 1 });
    expect(await status()).toEqual({ dispute_status: 'needs_response', disputed: true });

    double.closeDispute(ids.a!, 'won', dated());
    await db.pool.query(`UPDATE recon_event_cursors SET cursor = cursor - interval '2 minutes'`);
    const closed = await run(db);
    expect(closed.code, closed.stderr).toBe(3);
    expect(closed.report.changes.repaired).toMatchObject({ status_drift: 1 });
    expect(await status()).toEqual({ dispute_status: 'won', disputed: true });
    const audit = await rows(
      db,
      `SELECT r.before->>'dispute_status' AS before, r.after->>'dispute_status' AS after
         FROM recon_repairs r JOIN recon_findings f ON f.id = r.finding_id
        WHERE f.subject = $1 ORDER BY r.id`,
      [ids.a],
    );
    expect(audit).toEqual([
      { before: null, after: 'needs_response' },
      { before: 'needs_response', after: 'won' },
    ]);

    // The events read again (an overlap, a retry) change nothing: the newest status stands.
    await db.pool.query(`UPDATE recon_event_cursors SET cursor = cursor - interval '2 minutes'`);
    const again = await run(db);
    expect(again.report.changes.repaired).toEqual({});
    expect(await status()).toEqual({ dispute_status: 'won', disputed: true });
  });
});
