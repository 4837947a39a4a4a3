import type { Pool } from '../src/db/pool.js';
import { createClaimClient, type ChargeRequest, type ClaimClient } from '../src/claims/index.js';
import type { StripeDouble } from './stripe-double/index.js';
import { createStripeClient } from '../src/providers/stripe/client.js';

/**
 * The traffic simulator, used by the end-to-end tests and `sweeper demo`. Builds
 * every finding category for real: payment traffic through the claim library
 * against the Stripe double, crashes injected at the three points a worker can die,
 * and the things that happen outside it (dashboard charges, refunds, disputes, a lost
 * local record). Times are `base` + minutes, on the double's clock and the library's.
 */
export interface Scenario {
  /** What happened, in order, for a reader: one line per event. */
  story: string[];
  /** Keys (tenant 'acme') by what was done to them. */
  keys: Record<string, string>;
  charges: Record<string, string>;
  expected: {
    findings: Record<string, number>;
    repaired: Record<string, number>;
    unreconciled: number;
  };
}

class Crash extends Error {}

/** A payment long before any window the sweep will list again, and what a late refund does to it. */
export interface WeekOldPayment {
  key: string;
  chargeId: string;
  amount: number;
  at: Date;
}

/**
 * One ordinary card payment through the claim library at `at` (tenant 'acme', key
 * 'last-week'), on the double's clock and the library's: the charge a refund changes
 * once every window that lists it has passed (docs/judgement.md "Late changes"). The caller makes
 * sure `at`'s day partition exists.
 */
export async function buildWeekOldPayment(
  pool: Pool,
  double: StripeDouble,
  at: Date,
  seed = 1,
): Promise<WeekOldPayment> {
  const key = 'last-week';
  const amount = 1500 + (seed % 7) * 10;
  double.clock.set(at);
  try {
    const claims = createClaimClient({
      pool,
      stripe: createStripeClient({ apiKey: 'sk_test_scenario', apiBase: double.url, maxNetworkRetries: 0 }),
      leaseMs: 120_000,
      maxAmount: 1_000_000,
      metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
      clock: () => at,
    });
    const result = await claims.chargeOnce({ tenantId: 'acme', key, request: card(amount) });
    if (result.outcome !== 'charged') throw new Error(`the week-old payment was not charged: ${result.outcome}`);
  } finally {
    double.clock.useRealTime();
  }
  const { rows } = await pool.query<{ charge_id: string }>(
    'SELECT charge_id FROM payments WHERE tenant_id = $1 AND idempotency_key = $2',
    ['acme', key],
  );
  const chargeId = rows[0]?.charge_id;
  if (!chargeId) throw new Error('the week-old payment left no payment row');
  return { key, chargeId, amount, at };
}

/**
 * Refunds it in full at Stripe (as a person would in the dashboard) at `at`: the
 * charge changes and Stripe emits `charge.refunded` and `refund.created`, dated then.
 */
export function refundAtStripe(double: StripeDouble, payment: WeekOldPayment, at: Date): void {
  double.clock.set(at);
  try {
    double.refund(payment.chargeId);
  } finally {
    double.clock.useRealTime();
  }
}

const card = (amount: number, paymentMethod = 'pm_card_visa'): ChargeRequest => ({
  amount,
  currency: 'usd',
  paymentMethod,
});

/**
 * `seed` varies the amounts (so two seeds tell two stories); the same seed, the same story.
 * `payout`: the account's money is available at once, and after the crashes (minute 15)
 * Stripe pays out the balance automatically (`sweeper demo`'s payout that reconciles).
 */
export async function buildScenario(
  pool: Pool,
  double: StripeDouble,
  base: Date,
  seed = 1,
  options: { payout?: boolean } = {},
): Promise<Scenario> {
  let now = base;
  const story: string[] = [];
  const tell = (line: string) => story.push(line);
  const cents = (n: number) => n + (seed % 7) * 10;
  const at = (minutes: number) => {
    now = new Date(base.getTime() + minutes * 60_000);
    double.clock.set(now);
  };
  const stripe = createStripeClient({ apiKey: 'sk_test_scenario', apiBase: double.url, maxNetworkRetries: 0 });
  const deps = {
    pool,
    stripe,
    leaseMs: 120_000,
    maxAmount: 1_000_000,
    metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
    clock: () => now,
  };
  const claims: ClaimClient = createClaimClient(deps);
  if (options.payout) double.configureAccount(null, { payoutDelayDays: 0 });
  const crashing = (point: 'afterClaim' | 'afterStripeCall') =>
    createClaimClient({
      ...deps,
      hooks: {
        [point]: () => {
          throw new Crash(point);
        },
      },
    });
  const charge = async (client: ClaimClient, key: string, request: ChargeRequest) =>
    client.chargeOnce({ tenantId: 'acme', key, request }).catch((e: unknown) => {
      if (e instanceof Crash) return null;
      throw e;
    });
  const chargeIdOf = async (key: string) =>
    (await pool.query<{ charge_id: string }>('SELECT charge_id FROM payments WHERE idempotency_key = $1', [key]))
      .rows[0]?.charge_id as string;

  // Ordinary traffic, including a double click (two identical requests at once).
  for (let i = 1; i <= 5; i += 1) {
    at(i);
    await charge(claims, `ok-${i}`, card(cents(1000 * i)));
  }
  tell('5 ordinary card payments through the claim library (ok-1 … ok-5)');
  at(6);
  // The second click is sent while the first holds the claim (from its afterClaim hook),
  // so the story is the same on every run: left to the scheduler, the second click
  // sometimes lands after the first finished and is replayed instead.
  let secondClick: Awaited<ReturnType<typeof charge>> = null;
  const firstClick = createClaimClient({
    ...deps,
    hooks: {
      afterClaim: async () => {
        secondClick = await charge(claims, 'double-click', card(700));
      },
    },
  });
  const first = await charge(firstClick, 'double-click', card(700));
  const retry = await charge(claims, 'double-click', card(700));
  tell(
    `a double click: two identical requests at once → ${first?.outcome} + ${(secondClick as typeof first)?.outcome}; ` +
      `its retry → ${retry?.outcome}, one charge`,
  );
  at(7);
  await charge(claims, 'declined', card(900, 'pm_card_chargeDeclined'));
  tell('a declined card: the decline is stored and replayed to retries');

  // A worker dies after the claim, before Stripe saw anything.
  at(10);
  await charge(crashing('afterClaim'), 'crash-after-claim', card(1100));
  tell('a worker killed after taking the claim, before calling Stripe');
  // A worker dies after Stripe charged, before the effect committed.
  at(12);
  await charge(crashing('afterStripeCall'), 'crash-after-stripe', card(1200));
  tell('a worker killed after Stripe charged, before the payment row was committed');
  // The same, for a charge Stripe declined.
  at(14);
  await charge(
    crashing('afterStripeCall'),
    'crash-after-decline',
    card(1300, 'pm_card_chargeDeclinedInsufficientFunds'),
  );
  tell('a worker killed after Stripe declined, before the decline was stored');
  if (options.payout) {
    at(15);
    const payout = double.runPayout(null);
    const paid = double.balanceTransactions(null, { payout: payout.id }).filter((t) => t.type === 'charge');
    tell(
      `Stripe pays the account's balance out automatically: payout ${payout.id}, ${(payout.amount / 100).toFixed(2)} ${payout.currency.toUpperCase()}, ` +
        `${paid.length} charges less their fees (this account's money is available at once)`,
    );
  }

  // Outside the library: a dashboard charge naming a key, and one with no metadata.
  at(20);
  const orphan = double.createCharge(null, {
    amount: 4200,
    metadata: { tenant_id: 'acme', idempotency_key: 'dashboard-1' },
  });
  at(21);
  const unattributed = double.createCharge(null, { amount: 5100 });
  tell('two charges made by hand in the dashboard: one naming a tenant and key, one with no metadata');
  // A second charge for a key that already has one.
  at(22);
  await charge(claims, 'dup', card(1500));
  at(23);
  const second = double.createCharge(null, { amount: 1500, metadata: { tenant_id: 'acme', idempotency_key: 'dup' } });
  tell('a second charge at Stripe for a key that was already charged');

  // A checkout that mints a key per attempt: its retry of order-777 got a key of its own,
  // so the claim could not see the first attempt, and the customer paid twice.
  at(24);
  for (const attempt of [1, 2]) {
    await claims.chargeOnce({
      tenantId: 'kiosk',
      key: `order-777-attempt-${attempt}-${seed}`,
      request: { ...card(cents(1800)), reference: 'order-777' },
    });
  }
  tell('a kiosk that mints a key per attempt: its retry of order-777 paid a second time, under a key of its own');

  // At Stripe afterwards: a refund and a dispute.
  const refunded = await chargeIdOf('ok-1');
  const disputed = await chargeIdOf('ok-2');
  at(30);
  double.refund(refunded, 400);
  double.dispute(disputed);
  tell('a partial refund and a dispute made at Stripe');
  // The application refunds ok-5 through the claim library; the bank then returns the refund.
  at(32);
  const refund = await claims.refundOnce({
    tenantId: 'acme',
    key: 'refund-ok-5',
    request: { chargeId: await chargeIdOf('ok-5') },
  });
  if (refund.outcome !== 'refunded') throw new Error(`the demo's refund was not made: ${refund.outcome}`);
  at(33);
  double.failRefund((refund.body as { id: string }).id, 'expired_or_canceled_card');
  tell('a refund made through the claim library (refund-ok-5) that failed at the bank after it was recorded');

  // Local records lost or wrong.
  const claimLost = await chargeIdOf('ok-3');
  await pool.query(`DELETE FROM idempotency_keys WHERE tenant_id = 'acme' AND key = 'ok-3'`); // effect_without_claim
  const mismatched = await chargeIdOf('ok-4');
  await pool.query(`UPDATE payments SET amount = amount + 1 WHERE charge_id = $1`, [mismatched]); // amount_mismatch
  at(40);
  await pool.query(
    `INSERT INTO payments (charge_id, tenant_id, idempotency_key, amount, currency, status, created_at, updated_at)
     VALUES ('ch_never_at_stripe', 'acme', 'ghost', 2300, 'usd', 'succeeded', $1, $1)`,
    [now],
  ); // effect_without_charge
  await pool.query(
    `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, attempt, downstream_key, response_status,
                                   response_body, response_outcome, amount, currency, created_at, completed_at, updated_at)
     VALUES ('acme', 'lost', 'fp', 'completed', 1, 'sweeper_v1_lost', 200,
             '{"object":"charge_result","charge":"ch_lost_never_made"}', 'success', 2300, 'usd', $1, $1, $1)`,
    [now],
  ); // lost_effect: a success recorded, no payment row, nothing at Stripe (searched, and looked up by id)
  tell(
    'local records gone wrong: a lost claim, an edited amount, a payment row Stripe never saw, a success with no payment',
  );
  double.clock.useRealTime();
  // The claim library's counts per tenant (claim_outcomes), as its instances flush them.
  await claims.close();

  return {
    story,
    keys: { orphan: 'dashboard-1' },
    charges: {
      orphan: orphan.id,
      unattributed: unattributed.id,
      second: second.id,
      refunded,
      disputed,
      claimLost,
      mismatched,
    },
    expected: {
      findings: {
        // ok-5, the double click, the stored decline with its failed charge, dup's kept
        // charge (its claim and payment agree; duplicate_charge is about the second one), and
        // order-777's two payments (each agrees with its own claim: the duplicate is the outcome)
        matched: 6,
        claim_without_effect: 2,
        stale_claim: 1,
        lost_effect: 1,
        effect_without_claim: 1,
        orphan_charge: 1,
        unattributed_charge: 1,
        effect_without_charge: 1,
        amount_mismatch: 1,
        status_drift: 2,
        duplicate_charge: 1,
        // order-777 paid twice; kiosk's keys are never retried (no replay in its claim outcomes)
        duplicate_effect: 1,
        unstable_keys: 1,
        // refund-ok-5: the row takes Stripe's failed state and stays open (the customer was not refunded)
        refund_status_drift: 1,
      },
      repaired: {
        claim_without_effect: 2,
        stale_claim: 1,
        effect_without_claim: 1,
        orphan_charge: 1,
        status_drift: 2,
        refund_status_drift: 1,
      },
      unreconciled: 8,
    },
  };
}
