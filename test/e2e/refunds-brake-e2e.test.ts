import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClaimClient } from '../../src/claims/index.js';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { cliEnv, SHORT_RUN_SETTINGS, runCli } from '../support/cli.js';

/**
 * docs/judgement.md "The repair brake" over the refunds step: 60 refund workers died after
 * Stripe refunded (60 `refund_without_effect` repairs to make, of 60 refunds judged). Their
 * charges are two days old, outside the run's window, so only the refunds step judges
 * anything. A real run repairs none of them and fails naming the brake; a dry run says it
 * would stop; `--allow-mass-repair` repairs all 60.
 */

const MIN = 60_000;
const DAY = 86_400_000;
const REFUNDS = 60;

let double: StripeDouble;
let db: TestDatabase;

beforeAll(async () => {
  double = await startStripeDouble();
  db = await createTestDatabase({ poolSize: 2 });
  const now = Date.now();
  await ensureDayPartitions(db.pool, { from: utcDay(new Date(now - 3 * DAY)), to: utcDay(new Date(now + DAY)) });
  const stripe = createStripeClient({ apiKey: 'sk_test_payments', apiBase: double.url, maxNetworkRetries: 0 });
  const settings = {
    pool: db.pool,
    stripe,
    leaseMs: 5_000,
    maxAmount: 1_000_000,
    metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
  };
  let at = now - 2 * DAY;
  const clock = () => new Date(at);
  double.clock.set(new Date(at));
  const library = createClaimClient({ ...settings, clock });
  const charges: string[] = [];
  for (let i = 0; i < REFUNDS; i += 1) {
    const paid = await library.chargeOnce({
      tenantId: 'acme',
      key: `order-${i}`,
      request: { amount: 1000 + i, currency: 'usd', paymentMethod: 'pm_card_visa' },
    });
    expect(paid.outcome).toBe('charged');
  }
  const { rows } = await db.pool.query<{ charge_id: string }>(`SELECT charge_id FROM payments ORDER BY charge_id`);
  charges.push(...rows.map((r) => r.charge_id));
  expect(charges).toHaveLength(REFUNDS);
  // Refunded three minutes ago, each worker dying between Stripe's answer and its commit.
  at = now - 3 * MIN;
  double.clock.set(new Date(at));
  const dying = createClaimClient({
    ...settings,
    clock,
    hooks: {
      afterStripeCall: () => {
        throw new Error('the worker died');
      },
    },
  });
  for (const [i, chargeId] of charges.entries())
    await expect(dying.refundOnce({ tenantId: 'acme', key: `refund-${i}`, request: { chargeId } })).rejects.toThrow(
      'the worker died',
    );
  double.clock.useRealTime();
});

afterAll(async () => {
  await db.drop();
  await double.close();
});

function run(extra: string[] = []) {
  return runCli(
    ['run', '--json', ...extra],
    cliEnv(
      { db, stripe: double.url, key: 'sk_test_brake' },
      {
        ...SHORT_RUN_SETTINGS,
      },
    ),
  );
}

const count = async (sql: string) => ((await db.pool.query<{ n: number }>(sql)).rows[0] as { n: number }).n;

describe('the repair brake over refunds', () => {
  it('stops a real run before recording 60 refunds, a dry run says so, --allow-mass-repair records them', async () => {
    const dry = await run(['--dry-run']);
    expect(dry.stdout).toMatch(/"mass_repair":\{"category":"refund_without_effect","repairs":60/);
    expect(await count(`SELECT count(*)::int AS n FROM payment_refunds`)).toBe(0);

    const stopped = await run();
    expect(stopped.code, stopped.stderr).toBe(1);
    expect(stopped.stderr.trim().split('\n').at(-1)).toMatch(
      /^sweeper: the repair brake stopped account platform before repairing: 60 refund_without_effect repairs/,
    );
    expect(await count(`SELECT count(*)::int AS n FROM payment_refunds`)).toBe(0);
    expect(
      await count(`SELECT count(*)::int AS n FROM idempotency_keys WHERE key LIKE 'refund-%' AND status = 'completed'`),
    ).toBe(0);

    const confirmed = await run(['--allow-mass-repair']);
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM payment_refunds`)).toBe(REFUNDS);
    expect(
      await count(`SELECT count(*)::int AS n FROM idempotency_keys WHERE key LIKE 'refund-%' AND status = 'completed'`),
    ).toBe(REFUNDS);
  });
});
