import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClaimClient } from '../../src/claims/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { partitionedDatabase, type TestDatabase } from '../support/db.js';
import { cliEnv, SHORT_RUN_SETTINGS, runCli } from '../support/cli.js';

/**
 * docs/judgement.md "The repair brake" over the refunds step: 60 refund workers died after
 * Stripe refunded (60 `refund_without_effect` repairs to make, of 60 refunds judged). Their
 * charges are two days old, outside the run's window, so only the refunds step judges
 * anything. A real run repairs none of them and fails naming the brake; `--allow-mass-repair`
 * repairs all 60 (the dry run's side of the brake is the slices': other-writers-e2e).
 */

const MIN = 60_000;
const DAY = 86_400_000;
const REFUNDS = 60;

let double: StripeDouble;
let db: TestDatabase;

beforeAll(async () => {
  double = await startStripeDouble();
  const now = Date.now();
  db = await partitionedDatabase(new Date(now - 3 * DAY), new Date(now + DAY), { poolSize: 2 });
  const stripe = createStripeClient({ apiKey: 'sk_test_payments', apiBase: double.url, maxNetworkRetries: 0 });
  const settings = {
    pool: db.pool,
    stripe,
    leaseMs: 5_000,
    maxAmount: 1_000_000,
    metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
  };
  // The charges, two days old: made by the application long ago (only their refunds matter here).
  const charges = Array.from(
    { length: REFUNDS },
    (_, i) =>
      double.createCharge(null, {
        amount: 1000 + i,
        created: new Date(now - 2 * DAY),
        metadata: { tenant_id: 'acme', idempotency_key: `order-${i}` },
      }).id,
  );
  // Refunded three minutes ago (their claims' leases long expired), each worker dying between Stripe's answer and its commit.
  const clock = () => new Date(now - 3 * MIN);
  double.clock.set(clock());
  const dying = createClaimClient({
    ...settings,
    clock,
    hooks: {
      afterStripeCall: () => {
        throw new Error('the worker died');
      },
    },
  });
  const dead = await Promise.allSettled(
    charges.map((chargeId, i) => dying.refundOnce({ tenantId: 'acme', key: `refund-${i}`, request: { chargeId } })),
  );
  expect(dead.map((d) => (d.status === 'rejected' ? String(d.reason) : 'refunded'))).toEqual(
    charges.map(() => 'Error: the worker died'),
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
    cliEnv({ db, stripe: double.url, key: 'sk_test_brake' }, SHORT_RUN_SETTINGS),
  );
}

const count = async (sql: string) => ((await db.pool.query<{ n: number }>(sql)).rows[0] as { n: number }).n;

describe('the repair brake over refunds', () => {
  it('stops a real run before recording 60 refunds; --allow-mass-repair records them', async () => {
    const stopped = await run();
    expect(stopped.code, stopped.stderr).toBe(1);
    expect(JSON.parse(stopped.stdout.trim().split('\n')[0] ?? '{}')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(
        /^the repair brake stopped account platform before repairing: 60 refund_without_effect repairs of 60 identities judged/,
      ),
    });
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
