import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClaimClient } from '../../src/claims/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { cliEnv, SHORT_RUN_SETTINGS, runCli } from '../support/cli.js';
import { cloneDatabase, partitionedDatabase, type TestDatabase } from '../support/db.js';

/**
 * A saved plan of the refunds step (docs/plans.md; docs/judgement.md "Refunds the
 * application makes"), through the built CLI against the Stripe double: a worker that
 * died after Stripe refunded (and the payment row that does not know of the refund), and
 * a recorded refund that failed at Stripe. On two copies
 * of one database, `sweeper run` and `sweeper run --plan` then `sweeper apply` leave the
 * same refund rows, claims and payment rows.
 */
const MIN = 60_000;
const KEY = 'rk_test_ChargesEventsRefunds';
const databases: TestDatabase[] = [];
let double: StripeDouble;
let base: TestDatabase;
let dir: string;

const env = (db: TestDatabase, extra: Record<string, string> = {}) =>
  cliEnv(
    { db, stripe: double.url, key: KEY },
    {
      ...SHORT_RUN_SETTINGS,
      SWEEPER_LOG_LEVEL: 'warn',
      ...extra,
    },
  );

async function history(db: TestDatabase): Promise<void> {
  const settings = {
    pool: db.pool,
    stripe: createStripeClient({ apiKey: 'sk_test_payments', apiBase: double.url, maxNetworkRetries: 0 }),
    leaseMs: 5_000,
    maxAmount: 1_000_000,
    metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
    clock: () => new Date(Date.now() - 3 * MIN),
  };
  const library = createClaimClient(settings);
  double.clock.set(new Date(Date.now() - 3 * MIN));
  const charge = async (key: string) => {
    await library.chargeOnce({
      tenantId: 'acme',
      key,
      request: { amount: 4000, currency: 'usd', paymentMethod: 'pm_card_visa' },
    });
    return (
      await db.pool.query<{ charge_id: string }>(`SELECT charge_id FROM payments WHERE idempotency_key = $1`, [key])
    ).rows[0]!.charge_id;
  };
  const died = await charge('order-died');
  const failed = await charge('order-failed');
  const dying = createClaimClient({
    ...settings,
    hooks: {
      afterStripeCall: () => {
        throw new Error('the worker died');
      },
    },
  });
  await expect(
    dying.refundOnce({ tenantId: 'acme', key: 'refund-died', request: { chargeId: died, amount: 1500 } }),
  ).rejects.toThrow('the worker died');
  const refunded = await library.refundOnce({ tenantId: 'acme', key: 'refund-failed', request: { chargeId: failed } });
  double.failRefund((refunded.body as { id: string }).id, 'expired_or_canceled_card');
  double.clock.useRealTime();
}

beforeAll(async () => {
  double = await startStripeDouble({
    keys: {
      permissions: {
        [KEY]: ['rak_charge_read', 'rak_event_read', 'rak_refund_read', 'rak_payout_read', 'rak_balance_read'],
      },
    },
  });
  // Two days back to tomorrow: the history's days and the runs'.
  base = await partitionedDatabase(new Date(Date.now() - 2 * 86_400_000), undefined, { poolSize: 2 });
  databases.push(base);
  await history(base);
  await base.pool.end();
  dir = await mkdtemp(path.join(tmpdir(), 'sweeper-refund-plan-'));
});
afterAll(async () => {
  for (const db of databases) await db.drop();
  await double.close();
  await rm(dir, { recursive: true, force: true });
});

/** The refund rows, refund claims and payment rows, without what names the run or plan, or when it wrote them. */
const refundState = async (db: TestDatabase) => ({
  payments: (await db.pool.query(`SELECT charge_id, amount_refunded, status FROM payments ORDER BY charge_id`)).rows,
  rows: (
    await db.pool.query(
      `SELECT refund_id, charge_id, tenant_id, idempotency_key, amount, currency, status FROM payment_refunds ORDER BY refund_id`,
    )
  ).rows,
  claims: (
    await db.pool.query(
      `SELECT key, status, attempt, response_status, response_body, response_outcome FROM idempotency_keys
        WHERE key LIKE 'refund-%' ORDER BY key`,
    )
  ).rows,
});

describe('a plan of the refunds step', () => {
  it('applied, leaves the refund rows and claims a real run leaves', async () => {
    const [real, planned] = [await cloneDatabase(base.name), await cloneDatabase(base.name)];
    databases.push(real, planned);
    const run = await runCli(['run', '--json'], env(real));
    expect(run.code, run.stderr).toBe(3);
    const before = await refundState(planned);
    const file = path.join(dir, 'plan.json');
    const made = await runCli(['run', '--plan', file, '--json'], env(planned, { SWEEPER_ACTOR: 'alice' }));
    expect(made.code, made.stderr).toBe(3);
    expect(await refundState(planned)).toEqual(before);
    const apply = await runCli(['apply', file, '--by', 'bob', '--json'], env(planned));
    const report = JSON.parse(apply.stdout) as { applied: Array<{ category: string }>; refused: unknown[] };
    expect(report.refused).toEqual([]);
    expect(report.applied.map((s) => s.category).sort()).toEqual([
      'refund_status_drift',
      'refund_without_effect',
      'status_drift',
    ]);
    // Exit 3: the failed refund stays open for a person, as after the real run.
    expect(apply.code, apply.stderr).toBe(3);
    expect(await refundState(planned)).toEqual(await refundState(real));
    expect((await refundState(planned)).rows).not.toEqual(before.rows);
  });
});
