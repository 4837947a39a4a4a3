import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClaimClient,
  downstreamKey,
  type CreateCharge,
  type CreateChargeInput,
  type CreateChargeResult,
  type CreateRefundInput,
  type CreateRefundResult,
  type CreatedRefund,
} from '../../src/claims/index.js';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * The claim library against a provider that is not Stripe: a `createCharge` function
 * passed in. The library sends it the claim's downstream key and the attribution
 * metadata, and settles the claim from its answer alone.
 */

const METADATA_KEYS = { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' };
const NOW = new Date('2026-03-10T12:00:00Z');
const card = { amount: 1500, currency: 'usd', paymentMethod: 'pm_card_visa', metadata: { order: '42' } };

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: '2026-03-09', to: '2026-03-11' });
});
afterAll(async () => {
  await db.drop();
});

function library(
  answer: (input: CreateChargeInput) => CreateChargeResult,
  options: { quotaPerMinute?: number; clock?: () => Date } = {},
) {
  const calls: CreateChargeInput[] = [];
  const createCharge: CreateCharge = async (input) => {
    calls.push(input);
    return answer(input);
  };
  const client = createClaimClient({
    pool: db.pool,
    createCharge,
    leaseMs: 60_000,
    maxAmount: 1_000_000,
    metadataKeys: METADATA_KEYS,
    clock: options.clock ?? (() => NOW),
    quotaPerMinute: options.quotaPerMinute ?? null,
  });
  return { client, calls };
}

const created = (chargeId: string): CreateChargeResult => ({
  kind: 'created',
  paymentIntent: { id: `pay_${chargeId}`, status: 'succeeded', amount: 1500, currency: 'usd' },
  chargeId,
  charge: {
    id: chargeId,
    amount: 1500,
    currency: 'usd',
    status: 'succeeded',
    amountRefunded: 0,
    disputed: false,
    created: NOW.getTime() / 1000,
  },
});

describe('the claim library with a createCharge of its own', () => {
  it('charges once: the downstream key and the attribution go to the provider, the payment row and the replay come from its answer', async () => {
    const { client, calls } = library(() => created('mem_charge_1'));
    const first = await client.chargeOnce({ tenantId: 'acme', key: 'order-1', request: card });
    expect(first).toMatchObject({
      outcome: 'charged',
      status: 200,
      body: { object: 'charge_result', charge: 'mem_charge_1', payment_intent: 'pay_mem_charge_1' },
    });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      idempotencyKey: downstreamKey('acme', 'order-1'),
      metadata: { order: '42', tenant_id: 'acme', idempotency_key: 'order-1' },
      request: { amount: 1500, currency: 'usd' },
    });
    const replay = await client.chargeOnce({ tenantId: 'acme', key: 'order-1', request: card });
    expect(replay).toMatchObject({ outcome: 'replayed', status: 200, body: first.body });
    expect(calls).toHaveLength(1);
    const { rows } = await db.pool.query(
      'SELECT charge_id, payment_intent_id, amount::int AS amount, status FROM payments WHERE tenant_id = $1 AND idempotency_key = $2',
      ['acme', 'order-1'],
    );
    expect(rows).toEqual([
      { charge_id: 'mem_charge_1', payment_intent_id: 'pay_mem_charge_1', amount: 1500, status: 'succeeded' },
    ]);
  });

  it('stores a refusal and replays it; a decline with a charge records a failed payment', async () => {
    const { client, calls } = library(() => ({
      kind: 'refused',
      outcome: 'declined',
      status: 402,
      body: { error: { type: 'card_error', code: 'card_declined', message: 'Your card was declined.' } },
      code: 'card_declined',
      chargeId: 'mem_declined_1',
      paymentIntentId: null,
    }));
    const first = await client.chargeOnce({ tenantId: 'acme', key: 'order-2', request: card });
    expect(first).toMatchObject({ outcome: 'declined', status: 402, body: { error: { code: 'card_declined' } } });
    expect(await client.chargeOnce({ tenantId: 'acme', key: 'order-2', request: card })).toMatchObject({
      outcome: 'replayed',
      status: 402,
    });
    expect(calls).toHaveLength(1);
    const { rows } = await db.pool.query("SELECT status FROM payments WHERE charge_id = 'mem_declined_1'");
    expect(rows).toEqual([{ status: 'failed' }]);
  });

  it('releases the claim on a transient failure, and the retry charges with the same downstream key', async () => {
    let down = true;
    const { client, calls } = library(() =>
      down ? { kind: 'transient', error: new Error('unreachable'), retryAfterSeconds: 7 } : created('mem_charge_3'),
    );
    const first = await client.chargeOnce({ tenantId: 'acme', key: 'order-3', request: card });
    expect(first).toMatchObject({ outcome: 'transient_failure', status: 503, retryAfterSeconds: 7 });
    down = false;
    expect(await client.chargeOnce({ tenantId: 'acme', key: 'order-3', request: card })).toMatchObject({
      outcome: 'charged',
      status: 200,
    });
    expect(calls.map((c) => c.idempotencyKey)).toEqual([
      downstreamKey('acme', 'order-3'),
      downstreamKey('acme', 'order-3'),
    ]);
  });

  it('needs a way to charge: a Stripe client or a createCharge', () => {
    expect(() =>
      createClaimClient({ pool: db.pool, leaseMs: 60_000, maxAmount: 1, metadataKeys: METADATA_KEYS }),
    ).toThrow(TypeError);
  });
});

describe('the business reference, the outcome counts and the quota (docs/claim-library.md)', () => {
  it('a reference is part of the request, stored on the claim and the row, and stamped in the metadata', async () => {
    const { client, calls } = library(() => created(`mem_ref_${calls.length}`));
    await client.chargeOnce({ tenantId: 'acme', key: 'ref-1', request: { ...card, reference: 'order-77' } });
    expect(calls[0]?.metadata).toMatchObject({ order_id: 'order-77', tenant_id: 'acme', idempotency_key: 'ref-1' });
    expect(
      (await db.pool.query(`SELECT reference FROM idempotency_keys WHERE key = 'ref-1'`)).rows.concat(
        (await db.pool.query(`SELECT reference FROM payments WHERE idempotency_key = 'ref-1'`)).rows,
      ),
    ).toEqual([{ reference: 'order-77' }, { reference: 'order-77' }]);
    // The same key for another order is another request.
    expect(
      await client.chargeOnce({ tenantId: 'acme', key: 'ref-1', request: { ...card, reference: 'order-78' } }),
    ).toMatchObject({ outcome: 'fingerprint_mismatch', status: 422 });
    await expect(
      client.chargeOnce({ tenantId: 'acme', key: 'ref-2', request: { ...card, reference: 'bad\u0000ref' } }),
    ).rejects.toThrow(/reference: must be 1 to 500 characters/);
    await expect(
      client.chargeOnce({ tenantId: 'acme', key: 'ref-3', request: { ...card, metadata: { order_id: 'x' } } }),
    ).rejects.toThrow(/"order_id" is reserved.*request.reference/);
  });

  it('counts each take per tenant and day in claim_outcomes, summed across instances', async () => {
    const a = library(() => created('mem_count_1'));
    const b = library(() => created('mem_count_2'));
    await a.client.chargeOnce({ tenantId: 'counted', key: 'c-1', request: card });
    await b.client.chargeOnce({ tenantId: 'counted', key: 'c-1', request: card }); // replayed
    await b.client.chargeOnce({ tenantId: 'counted', key: 'c-1', request: { ...card, amount: 9 } }); // 422
    await b.client.chargeOnce({ tenantId: 'counted', key: 'c-2', request: card });
    await a.client.close();
    await b.client.close();
    const { rows } = await db.pool.query(
      `SELECT outcome, count::int AS n FROM claim_outcomes WHERE tenant_id = 'counted' AND day = '2026-03-10' ORDER BY outcome`,
    );
    expect(rows).toEqual([
      { outcome: 'created', n: 2 },
      { outcome: 'fingerprint_mismatch', n: 1 },
      { outcome: 'replayed', n: 1 },
    ]);
  });

  it('a quota of claims per minute: exactly that many of many concurrent takes claim; the rest get 429 and charge nothing', async () => {
    const { client, calls } = library((input) => created(`mem_q_${input.idempotencyKey.slice(-8)}`), {
      quotaPerMinute: 5,
      clock: () => new Date('2026-03-10T12:00:20Z'),
    });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client.chargeOnce({ tenantId: 'busy', key: `q-${i}`, request: card })),
    );
    const refused = results.filter((r) => r.outcome === 'quota_exceeded');
    expect(refused).toHaveLength(15);
    expect(refused[0]).toMatchObject({
      status: 429,
      retryAfterSeconds: 40,
      body: { error: { code: 'quota_exceeded' } },
    });
    expect(calls).toHaveLength(5);
    expect(
      (await db.pool.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE tenant_id = 'busy'`)).rows,
    ).toEqual([{ n: 5 }]);
    // Another tenant has its own quota.
    expect(await client.chargeOnce({ tenantId: 'quiet', key: 'q-1', request: card })).toMatchObject({
      outcome: 'charged',
    });
    await client.close();
    expect(
      (
        await db.pool.query(
          `SELECT count::int AS n FROM claim_outcomes WHERE tenant_id = 'busy' AND outcome = 'quota_exceeded'`,
        )
      ).rows,
    ).toEqual([{ n: 15 }]);
  });
});

describe('refundOnce: a refund through the same claim flow (docs/claim-library.md "Refunding once")', () => {
  function refunds(answer: (input: CreateRefundInput) => CreateRefundResult) {
    const calls: CreateRefundInput[] = [];
    const client = createClaimClient({
      pool: db.pool,
      createCharge: async () => created('unused'),
      createRefund: async (input) => {
        calls.push(input);
        return answer(input);
      },
      leaseMs: 60_000,
      maxAmount: 1_000_000,
      metadataKeys: METADATA_KEYS,
      clock: () => NOW,
      outcomes: false,
    });
    return { client, calls };
  }
  const refunded = (id: string, status: CreatedRefund['status'] = 'succeeded'): CreateRefundResult => ({
    kind: 'created',
    refund: { id, chargeId: 'ch_paid', amount: 700, currency: 'usd', status, created: NOW.getTime() / 1000 },
  });

  it('refunds once: the downstream key and the attribution go to the provider; the row and the replay come from its answer', async () => {
    const { client, calls } = refunds(() => refunded('re_1'));
    const request = { chargeId: 'ch_paid', amount: 700, reason: 'requested_by_customer' as const };
    const first = await client.refundOnce({ tenantId: 'acme', key: 'refund-1', request });
    expect(first).toMatchObject({
      outcome: 'refunded',
      status: 200,
      body: { object: 'refund', id: 're_1', status: 'succeeded', charge: 'ch_paid', amount: 700 },
    });
    expect(calls[0]).toMatchObject({
      idempotencyKey: downstreamKey('acme', 'refund-1'),
      metadata: { tenant_id: 'acme', idempotency_key: 'refund-1' },
      request,
    });
    expect(await client.refundOnce({ tenantId: 'acme', key: 'refund-1', request })).toMatchObject({
      outcome: 'replayed',
      body: first.body,
    });
    expect(calls).toHaveLength(1);
    const { rows } = await db.pool.query(
      `SELECT r.refund_id, r.charge_id, r.amount::int AS amount, r.status, k.operation, k.target, k.response_outcome
         FROM payment_refunds r JOIN idempotency_keys k ON k.key = r.idempotency_key AND k.tenant_id = r.tenant_id
        WHERE r.idempotency_key = 'refund-1'`,
    );
    expect(rows).toEqual([
      {
        refund_id: 're_1',
        charge_id: 'ch_paid',
        amount: 700,
        status: 'succeeded',
        operation: 'refund',
        target: 'ch_paid',
        response_outcome: 'success',
      },
    ]);
  });

  it("a refusal is stored and replayed; a transient failure releases the claim and the retry sends the same key; a charge's key is another request", async () => {
    const refused = refunds(() => ({
      kind: 'refused',
      outcome: 'rejected',
      status: 400,
      body: { error: { type: 'invalid_request_error', code: 'charge_already_refunded', message: 'refunded' } },
      code: 'charge_already_refunded',
    }));
    const request = { chargeId: 'ch_done' };
    expect(await refused.client.refundOnce({ tenantId: 'acme', key: 'refund-2', request })).toMatchObject({
      outcome: 'rejected',
      status: 400,
    });
    expect(await refused.client.refundOnce({ tenantId: 'acme', key: 'refund-2', request })).toMatchObject({
      outcome: 'replayed',
      status: 400,
    });
    expect(refused.calls).toHaveLength(1);

    let down = true;
    const flaky = refunds(() =>
      down ? { kind: 'transient', error: new Error('reset'), retryAfterSeconds: 3 } : refunded('re_3'),
    );
    expect(await flaky.client.refundOnce({ tenantId: 'acme', key: 'refund-3', request })).toMatchObject({
      outcome: 'transient_failure',
      status: 503,
    });
    down = false;
    expect(await flaky.client.refundOnce({ tenantId: 'acme', key: 'refund-3', request })).toMatchObject({
      outcome: 'refunded',
    });
    expect(flaky.calls.map((c) => c.idempotencyKey)).toEqual([
      downstreamKey('acme', 'refund-3'),
      downstreamKey('acme', 'refund-3'),
    ]);
    // The key of a refund is not the key of a charge: the same key with a charge request is another request.
    const { client } = library(() => created('mem_charge_x'));
    expect(await client.chargeOnce({ tenantId: 'acme', key: 'refund-3', request: card })).toMatchObject({
      outcome: 'fingerprint_mismatch',
    });
    await expect(
      flaky.client.refundOnce({ tenantId: 'acme', key: 'refund-4', request: { chargeId: 'not a charge' } }),
    ).rejects.toThrow(/chargeId: must be a charge id/);
  });
});
