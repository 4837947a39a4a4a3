import fc from 'fast-check';
import { createClaimClient } from '../../src/claims/index.js';
import type { Pool } from '../../src/db/pool.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import type { StripeDouble } from '../../testkit/stripe-double/index.js';

/**
 * Random money histories for the payouts property tests (test/integration/payouts-properties.test.ts),
 * made in the test kit's Stripe double and the real schema on a simulated clock, on the
 * platform (USD) and on a connected account settling in EUR: charges (some presented in
 * the other currency) the application made through the claim library (one whose worker
 * dies once Stripe charged), another writer recorded by hand, or nobody recorded; refunds through the
 * library's `refundOnce` (one whose worker dies after Stripe refunded), by hand with a
 * claim in Stripe's Refund shape, or from the dashboard, some failing or canceled later;
 * disputes, won or lost; adjustments and Stripe fees; and payouts the double assembles
 * from the available balance: automatic, held until their reconciliation completes,
 * still in transit, manual, some with a residual nothing explains, some failing later.
 * Scheduled sweeps run at `runs` in between.
 */

const MIN = 60_000;
export const HISTORY_BASE = new Date('2026-11-20T00:00:00Z');
/** SWEEPER_PAYOUT_GRACE and SWEEPER_PAYOUT_EVERY of the runs. */
export const GRACE_MS = 120 * MIN;
export const EVERY_MS = 30 * MIN;
/** The first run: old payments (before it, less the grace) are never judged unpaid. */
const FIRST_RUN_MINUTES = 240;

/** Where an op happens (charges, adjustments, payouts): absent, the platform. */
export type On = 'platform' | 'connected';
/** A connected account settling in EUR: its payouts are read with its Stripe-Account. */
export const CONNECTED = 'acct_1PayoutsPropEur';
export const accountOf = (on: On | undefined): string | null => (on === 'connected' ? CONNECTED : null);

export type Op =
  | {
      kind: 'charge';
      at: number;
      on?: On;
      writer: 'library' | 'dying' | 'hand' | 'none';
      amount: number;
      currency: 'usd' | 'eur';
    }
  | { kind: 'refund'; at: number; of: number; writer: 'library' | 'hand' | 'dashboard' | 'dying'; partial: boolean }
  | { kind: 'refundFails'; at: number; of: number; how: 'fail' | 'cancel' }
  | { kind: 'dispute'; at: number; of: number }
  | { kind: 'closeDispute'; at: number; of: number; outcome: 'won' | 'lost' }
  | { kind: 'adjust'; at: number; on?: On; amount: number; fee: boolean }
  | {
      kind: 'payout';
      at: number;
      on?: On;
      mode: 'auto' | 'held' | 'in_transit' | 'manual' | 'manual_in_transit';
      unexplained: number;
    }
  | { kind: 'complete'; at: number; of: number }
  | { kind: 'payoutFails'; at: number; of: number; how: 'fail' | 'cancel' };

export interface PayoutHistory {
  /** Minutes after HISTORY_BASE of each scheduled run. */
  runs: number[];
  /** In time order; `at` in minutes after HISTORY_BASE. */
  ops: Op[];
}

const of = fc.nat({ max: 20 });
const on = fc.constantFrom<On>('platform', 'platform', 'connected');

function opArb(until: number): fc.Arbitrary<Op> {
  // From an hour in: a few old payments before the first listing (two hours before the first
  // run), most of the history after it, where payouts are listed.
  const at = fc.integer({ min: 60, max: until - 1 });
  return fc.oneof(
    {
      weight: 8,
      arbitrary: fc.record({
        kind: fc.constant('charge' as const),
        at,
        on,
        writer: fc.constantFrom(
          'library' as const,
          'library' as const,
          'dying' as const,
          'hand' as const,
          'none' as const,
        ),
        amount: fc.integer({ min: 100, max: 20_000 }),
        currency: fc.constantFrom('usd' as const, 'usd' as const, 'eur' as const),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('refund' as const),
        at,
        of,
        writer: fc.constantFrom('library' as const, 'hand' as const, 'dashboard' as const, 'dying' as const),
        partial: fc.boolean(),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('refundFails' as const),
        at,
        of,
        how: fc.constantFrom('fail' as const, 'cancel' as const),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('dispute' as const), at, of }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('closeDispute' as const),
        at,
        of,
        outcome: fc.constantFrom('won' as const, 'lost' as const),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('adjust' as const),
        at,
        on,
        amount: fc.integer({ min: -500, max: 500 }).filter((n) => n !== 0),
        fee: fc.boolean(),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('payout' as const),
        at,
        on,
        mode: fc.constantFrom(
          'auto' as const,
          'auto' as const,
          'auto' as const,
          'auto' as const,
          'held' as const,
          'in_transit' as const,
          'manual' as const,
          'manual_in_transit' as const,
        ),
        unexplained: fc.oneof(
          { weight: 4, arbitrary: fc.constant(0) },
          { weight: 1, arbitrary: fc.integer({ min: -9, max: 9 }) },
        ),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('complete' as const), at, of }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('payoutFails' as const),
        at,
        of,
        how: fc.constantFrom('fail' as const, 'cancel' as const),
      }),
    },
  );
}

/** Three scheduled runs, 45 minutes to 4 hours apart (a pause longer than the grace too), and what happens around them. */
export const payoutHistoryArb: fc.Arbitrary<PayoutHistory> = fc
  .tuple(fc.constantFrom(45, 90, 150, 240), fc.constantFrom(45, 90, 150, 240))
  .chain(([a, b]) => {
    const runs = [FIRST_RUN_MINUTES, FIRST_RUN_MINUTES + a, FIRST_RUN_MINUTES + a + b];
    const last = runs[2] as number;
    return (
      fc
        // 'max': fast-check's default size keeps arrays to a handful, too few for a payout to find much.
        .array(opArb(last), { minLength: 1, maxLength: 24, size: 'max' })
        .map((ops) => ({ runs, ops: [...ops].sort((x, y) => x.at - y.at) }))
    );
  });

export const minutes = (m: number): number => HISTORY_BASE.getTime() + m * MIN;

/** What the history made, for the oracle: every object's id and what it is of. */
export interface Made {
  charges: Array<{
    id: string;
    account: string | null;
    recorded: boolean;
    remaining: number;
    refunded: number;
    disputed: boolean;
  }>;
  refunds: Array<{ id: string; chargeId: string; status: 'succeeded' | 'failed' | 'canceled' }>;
  disputes: Array<{ id: string; chargeId: string; open: boolean }>;
  payouts: Array<{ id: string; held: boolean; returned: boolean }>;
  /** A refund's or a dispute's charge, by the refund's or the dispute's id. */
  chargeOf: Map<string, string>;
}

export interface HistoryWorld {
  double: StripeDouble;
  pool: Pool;
  /** The simulated clock (ms) the library, the double and the sweep share. */
  clock: { now: number };
}

const TENANT = 'acme';
const METADATA = { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' };

export function historyMaker(world: HistoryWorld) {
  const stripe = createStripeClient({ apiKey: 'sk_test_payouts', apiBase: world.double.url, maxNetworkRetries: 0 });
  const settings = {
    pool: world.pool,
    stripe,
    leaseMs: 5_000,
    maxAmount: 1_000_000,
    metadataKeys: METADATA,
    clock: () => new Date(world.clock.now),
  };
  const library = createClaimClient(settings);
  const dying = createClaimClient({
    ...settings,
    hooks: {
      afterStripeCall: () => {
        throw new Error('the worker died');
      },
    },
  });
  const made: Made = { charges: [], refunds: [], disputes: [], payouts: [], chargeOf: new Map() };
  let n = 0;
  const at = (op: Op) => {
    // Half a minute past: a rerun a second after a scheduled run (minutes(run)) has nothing new in its windows.
    world.clock.now = minutes(op.at) + 30_000;
    world.double.clock.set(world.clock.now);
    return new Date(world.clock.now);
  };

  const chargeRequest = (op: Extract<Op, { kind: 'charge' }>, account: string | null) => ({
    amount: op.amount,
    currency: op.currency,
    paymentMethod: 'pm_card_visa',
    ...(account ? { account } : {}),
  });

  async function charge(op: Extract<Op, { kind: 'charge' }>): Promise<void> {
    const when = at(op);
    const account = accountOf(op.on);
    const key = `order-${(n += 1)}`;
    let id: string;
    if (op.writer === 'library') {
      const paid = await library.chargeOnce({ tenantId: TENANT, key, request: chargeRequest(op, account) });
      if (paid.outcome !== 'charged') throw new Error(`the library's charge ${key}: ${paid.outcome}`);
      const { rows } = await world.pool.query<{ charge_id: string }>(
        `SELECT charge_id FROM payments WHERE idempotency_key = $1`,
        [key],
      );
      id = rows[0]?.charge_id as string;
    } else if (op.writer === 'dying') {
      // The worker dies once Stripe charged: no row until the sweep records it (claim_without_effect).
      const before = new Set(world.double.chargeIds(account));
      await dying.chargeOnce({ tenantId: TENANT, key, request: chargeRequest(op, account) }).then(
        () => {
          throw new Error('the dying worker lived');
        },
        (error: unknown) => {
          if (!(error instanceof Error) || error.message !== 'the worker died') throw error;
        },
      );
      id = world.double.chargeIds(account).find((c) => !before.has(c)) as string;
    } else if (op.writer === 'hand') {
      id = world.double.createCharge(account, {
        amount: op.amount,
        currency: op.currency,
        metadata: { tenant_id: TENANT, idempotency_key: key },
      }).id;
      await world.pool.query(
        `INSERT INTO payments (charge_id, tenant_id, idempotency_key, account_id, amount, currency, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'succeeded', $7, $7)`,
        [id, TENANT, key, account, op.amount, op.currency, when],
      );
    } else id = world.double.createCharge(account, { amount: op.amount, currency: op.currency }).id;
    made.charges.push({
      id,
      account,
      recorded: op.writer !== 'none',
      remaining: op.amount,
      refunded: 0,
      disputed: false,
    });
  }

  async function refund(op: Extract<Op, { kind: 'refund' }>): Promise<void> {
    const open = made.charges.filter((c) => c.remaining > 0 && !c.disputed);
    const target = open[op.of % Math.max(open.length, 1)];
    if (!target) return;
    const when = at(op);
    const amount = op.partial ? Math.max(1, Math.floor(target.remaining / 2)) : target.remaining;
    const writer = target.recorded ? op.writer : 'dashboard';
    const key = `refund-${(n += 1)}`;
    const on = target.account ? { account: target.account } : {};
    const before = new Set(world.double.refunds(target.id).map((r) => r.id));
    if (writer === 'library') {
      const done = await library.refundOnce({ tenantId: TENANT, key, request: { chargeId: target.id, amount, ...on } });
      if (done.outcome !== 'refunded') throw new Error(`the library's refund ${key}: ${done.outcome}`);
    } else if (writer === 'dying') {
      await dying.refundOnce({ tenantId: TENANT, key, request: { chargeId: target.id, amount, ...on } }).then(
        () => {
          throw new Error('the dying worker lived');
        },
        (error: unknown) => {
          if (!(error instanceof Error) || error.message !== 'the worker died') throw error;
        },
      );
    } else if (writer === 'hand') await handRefund(target, key, amount, when);
    else world.double.createRefund(target.id, { amount });
    const id = world.double.refunds(target.id).find((r) => !before.has(r.id))?.id;
    if (!id) throw new Error(`no refund of ${target.id} was made (${writer})`);
    target.remaining -= amount;
    target.refunded += amount;
    made.refunds.push({ id, chargeId: target.id, status: 'succeeded' });
    made.chargeOf.set(id, target.id);
  }

  /** Another writer: the refund at Stripe, its row, and a claim whose stored answer is Stripe's Refund object. */
  async function handRefund(
    { id: chargeId, account }: Made['charges'][number],
    key: string,
    amount: number,
    when: Date,
  ): Promise<void> {
    const refund = world.double.createRefund(chargeId, {
      amount,
      metadata: { tenant_id: TENANT, idempotency_key: key },
    });
    await world.pool.query(
      `INSERT INTO payment_refunds (refund_id, charge_id, tenant_id, idempotency_key, account_id, amount, currency, status,
                                    created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'succeeded', $8, $8)`,
      [refund.id, chargeId, TENANT, key, account, amount, refund.currency, when],
    );
    await world.pool.query(`UPDATE payments SET amount_refunded = amount_refunded + $2 WHERE charge_id = $1`, [
      chargeId,
      amount,
    ]);
    await world.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, downstream_key, account_id,
                                     response_status, response_body, created_at, completed_at, updated_at)
       VALUES ($1, $2, 'hand', 'completed', $3, $4, 200, $5, $6, $6, $6)`,
      [TENANT, key, `hand-${key}`, account, JSON.stringify(refund), when],
    );
  }

  function refundFails(op: Extract<Op, { kind: 'refundFails' }>): void {
    const live = made.refunds.filter((r) => r.status === 'succeeded');
    const target = live[op.of % Math.max(live.length, 1)];
    if (!target) return;
    at(op);
    if (op.how === 'fail') world.double.failRefund(target.id);
    else world.double.cancelRefund(target.id);
    target.status = op.how === 'fail' ? 'failed' : 'canceled';
  }

  function dispute(op: Extract<Op, { kind: 'dispute' }>): void {
    const fresh = made.charges.filter((c) => c.refunded === 0 && !c.disputed);
    const target = fresh[op.of % Math.max(fresh.length, 1)];
    if (!target) return;
    at(op);
    const opened = world.double.openDispute(target.id);
    target.disputed = true;
    made.disputes.push({ id: opened.id, chargeId: target.id, open: true });
    made.chargeOf.set(opened.id, target.id);
  }

  function closeDispute(op: Extract<Op, { kind: 'closeDispute' }>): void {
    const open = made.disputes.filter((d) => d.open);
    const target = open[op.of % Math.max(open.length, 1)];
    if (!target) return;
    at(op);
    world.double.closeDispute(target.chargeId, op.outcome);
    target.open = false;
  }

  function payout(op: Extract<Op, { kind: 'payout' }>): void {
    at(op);
    let paid;
    try {
      paid = world.double.runPayout(accountOf(op.on), {
        automatic: !op.mode.startsWith('manual'),
        holdReconciliation: op.mode === 'held' || op.mode === 'in_transit',
        status: op.mode.endsWith('in_transit') ? 'in_transit' : 'paid',
        unexplained: op.unexplained,
      });
    } catch (error) {
      if (error instanceof Error && error.message.includes('nothing to pay out')) return;
      throw error;
    }
    made.payouts.push({ id: paid.id, held: paid.reconciliation_status === 'in_progress', returned: false });
  }

  function complete(op: Extract<Op, { kind: 'complete' }>): void {
    const held = made.payouts.filter((p) => p.held && !p.returned);
    const target = held[op.of % Math.max(held.length, 1)];
    if (!target) return;
    at(op);
    if (world.double.payout(target.id)?.status === 'in_transit') world.double.advancePayout(target.id, 'paid');
    world.double.completePayoutReconciliation(target.id);
    target.held = false;
  }

  function payoutFails(op: Extract<Op, { kind: 'payoutFails' }>): void {
    const live = made.payouts.filter((p) => !p.returned);
    const target = live[op.of % Math.max(live.length, 1)];
    if (!target) return;
    at(op);
    const status = world.double.payout(target.id)?.status;
    if (op.how === 'cancel' && (status === 'pending' || status === 'in_transit')) world.double.cancelPayout(target.id);
    else world.double.failPayout(target.id, { code: 'account_closed' });
    target.returned = true;
  }

  return {
    made,
    async apply(op: Op): Promise<void> {
      switch (op.kind) {
        case 'charge':
          return charge(op);
        case 'refund':
          return refund(op);
        case 'refundFails':
          return refundFails(op);
        case 'dispute':
          return dispute(op);
        case 'closeDispute':
          return closeDispute(op);
        case 'adjust':
          at(op);
          world.double.addAdjustment(accountOf(op.on), {
            amount: op.fee ? -Math.abs(op.amount) : op.amount,
            reportingCategory: op.fee ? 'fee' : 'other_adjustment',
          });
          return;
        case 'payout':
          return payout(op);
        case 'complete':
          return complete(op);
        case 'payoutFails':
          return payoutFails(op);
      }
    },
  };
}
