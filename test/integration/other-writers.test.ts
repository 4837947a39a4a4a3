import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { silentLogger } from '../../src/log.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { parseStoredAnswerMapping, type StoredAnswerMapping } from '../../src/sweep/stored-answer.js';
import { sweep, sweepOptions, type SweepOptions } from '../../src/sweep/sweep.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import {
  charge,
  IDEMPOTENCY_WINDOW_MS,
  memoryChargeSource,
  memoryEvidence,
  seedClaim,
  seedEffect,
  emptySweepTables,
} from '../support/scenario.js';

/**
 * Claims and payment rows written by code older than sweeper, in their writers' own
 * shapes (docs/judgement.md "Stored answers", "Keys as Stripe holds them"), through the
 * real sweep on the real schema: a stored answer is read as written, a stored success is
 * never rewritten, and a charge Stripe returns unreadable in a re-read never stops the run.
 */

const NOW = new Date('2026-11-10T12:00:00Z');
const at = (hhmm: string) => new Date(`2026-11-10T${hhmm}:00Z`);
const secs = (hhmm: string) => at(hhmm).getTime() / 1000;

let db: TestDatabase;
let stripe: NormalizedCharge[];
let unreadable: Map<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: '2026-11-01', to: '2026-11-15' });
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  await emptySweepTables(db.pool);
  stripe = [];
  unreadable = new Map();
});

function run(options: Partial<SweepOptions> = {}) {
  return sweep(
    {
      pool: db.pool,
      listCharges: memoryChargeSource(() => stripe),
      evidence: memoryEvidence(() => stripe, unreadable),
      clock: () => NOW,
      logger: silentLogger(),
      idempotencyWindowMs: IDEMPOTENCY_WINDOW_MS,
    },
    sweepOptions({
      mode: 'backfill',
      accounts: ['platform'],
      window: { from: at('08:00'), to: at('11:00') },
      ...options,
    }),
  );
}

/** Every claim as stored, byte for byte: its answer as text, and when it last changed. */
const claimsAsStored = async () =>
  (
    await db.pool.query<{ key: string; status: string; answer: string; updated_at: Date }>(
      `SELECT key, status, response_status || ' ' || response_body::text AS answer, updated_at
         FROM idempotency_keys ORDER BY key`,
    )
  ).rows;

const openFindings = async () =>
  (
    await db.pool.query<{ category: string; subject: string; reason: string | null }>(
      `SELECT category, subject, details->>'reason' AS reason FROM recon_findings WHERE state = 'open' ORDER BY category, subject`,
    )
  ).rows;

/** A claim completed by another writer (no response_outcome, no request), its row and its charge. */
async function healthy(key: string, minute: number, body: (chargeId: string) => unknown, withMetadata = true) {
  const hhmm = `09:${String(minute).padStart(2, '0')}`;
  const id = `ch_${key}`;
  await seedClaim(db.pool, {
    tenantId: 'acme',
    key,
    status: 'completed',
    createdAt: at(hhmm),
    responseStatus: 200,
    responseBody: body(id),
    responseOutcome: null,
    amount: null,
    currency: null,
  });
  await seedEffect(db.pool, { chargeId: id, tenantId: 'acme', key, createdAt: at(hhmm) });
  stripe.push(charge({ id, created: secs(hhmm), ...(withMetadata ? { tenantId: 'acme', idempotencyKey: key } : {}) }));
}

const stripeCharge = (id: string) => ({ id, object: 'charge', status: 'succeeded', amount: 1000, currency: 'usd' });
const paymentIntent = (id: string) => ({
  id: `pi_${id}`,
  object: 'payment_intent',
  status: 'succeeded',
  latest_charge: id,
  amount: 1000,
  currency: 'usd',
});

describe('stored answers in their writers’ shapes', () => {
  it('healthy claims storing Stripe Charge objects and PaymentIntents: matched, nothing repaired, nothing rewritten', async () => {
    for (let i = 0; i < 20; i += 1) await healthy(`charge-${i}`, i, stripeCharge);
    for (let i = 20; i < 40; i += 1) await healthy(`intent-${i}`, i, paymentIntent);
    // The charge carries no metadata: the PaymentIntent's latest_charge is what links it to its key.
    await healthy('intent-no-metadata', 45, paymentIntent, false);
    const before = await claimsAsStored();
    const [report] = await run();
    expect(report).toMatchObject({ findings: { matched: 41 }, unreconciled: 0 });
    expect(Object.values(report!.repaired).every((n) => n === 0)).toBe(true);
    expect(await claimsAsStored()).toEqual(before);
  });

  it('a stored success without its payment row: the row is inserted, the stored answer kept byte for byte', async () => {
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'lost-row',
      status: 'completed',
      createdAt: at('09:00'),
      responseStatus: 201,
      responseBody: paymentIntent('ch_lost_row'),
      responseOutcome: null,
    });
    stripe.push(charge({ id: 'ch_lost_row', created: secs('09:00') }));
    const before = await claimsAsStored();
    const [report] = await run();
    expect(report).toMatchObject({ repaired: { claim_without_effect: 1 }, unreconciled: 0 });
    expect(await claimsAsStored()).toEqual(before);
    const { rows } = await db.pool.query(`SELECT charge_id, tenant_id, idempotency_key FROM payments`);
    expect(rows).toEqual([{ charge_id: 'ch_lost_row', tenant_id: 'acme', idempotency_key: 'lost-row' }]);
    const audit = await db.pool.query(`SELECT action FROM recon_repairs`);
    expect(audit.rows).toEqual([{ action: 'insert_effect' }]);
  });

  it("a writer's 201 'paid' with no payment row and no money at Stripe → lost_effect", async () => {
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'order-1',
      status: 'completed',
      createdAt: at('09:00'),
      responseStatus: 201,
      responseBody: { id: 'order_1', state: 'paid' },
      responseOutcome: null,
    });
    const [report] = await run();
    expect(report).toMatchObject({ findings: { lost_effect: 1 }, unreconciled: 1 });
  });

  it('a pending answer (202, requires_action) is replaced with Stripe’s answer once the charge is there', async () => {
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'sca',
      status: 'completed',
      createdAt: at('09:00'),
      responseStatus: 200,
      responseBody: { id: 'pi_sca', object: 'payment_intent', status: 'requires_action' },
      responseOutcome: null,
    });
    stripe.push(charge({ id: 'ch_sca', created: secs('09:01'), tenantId: 'acme', idempotencyKey: 'sca' }));
    const [report] = await run();
    expect(report).toMatchObject({ repaired: { claim_without_effect: 1 }, unreconciled: 0 });
    const [claim] = await claimsAsStored();
    expect(claim!.answer).toMatch(/^200 .*"charge": "ch_sca"/);
  });

  it('a stored decline while Stripe took the money: open, the answer left as the caller was told', async () => {
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'told-declined',
      status: 'completed',
      createdAt: at('09:00'),
      responseStatus: 402,
      responseBody: { error: { code: 'card_declined' } },
      responseOutcome: null,
    });
    stripe.push(charge({ id: 'ch_took', created: secs('09:01'), tenantId: 'acme', idempotencyKey: 'told-declined' }));
    const before = await claimsAsStored();
    const [report] = await run();
    expect(report).toMatchObject({ findings: { claim_without_effect: 1 }, unreconciled: 1 });
    expect(await claimsAsStored()).toEqual(before);
    expect((await openFindings())[0]?.reason).toMatch(/failed \(HTTP 402\), but Stripe took the money/);
  });

  it('a custom body mapped by SWEEPER_STORED_ANSWER: its charge field links the charge, its state says success', async () => {
    const mapping = parseStoredAnswerMapping(
      '{"charge": "order.charge_ref", "outcome": "state", "success": ["paid"], "pending": ["awaiting_payment"]}',
    ) as StoredAnswerMapping;
    // Linked by the mapped field only (the charge has no metadata), its row missing: repaired, answer kept.
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'custom-paid',
      status: 'completed',
      createdAt: at('09:00'),
      responseStatus: 200,
      responseBody: { order: { charge_ref: 'ch_custom' }, state: 'paid' },
      responseOutcome: null,
    });
    stripe.push(charge({ id: 'ch_custom', created: secs('09:00') }));
    // Still waiting on the customer by its writer's word, and the charge arrived: completed from Stripe.
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'custom-waiting',
      status: 'completed',
      createdAt: at('09:10'),
      responseStatus: 200,
      responseBody: { state: 'awaiting_payment' },
      responseOutcome: null,
    });
    stripe.push(
      charge({ id: 'ch_waited', created: secs('09:11'), tenantId: 'acme', idempotencyKey: 'custom-waiting' }),
    );
    const before = (await claimsAsStored()).find((c) => c.key === 'custom-paid');

    const withoutMapping = await run({ dryRun: true });
    // Unmapped, the charge has nothing linking it to a key, and `awaiting_payment` reads as a success.
    expect(withoutMapping[0]).toMatchObject({ findings: { unattributed_charge: 1, claim_without_effect: 1 } });

    const [report] = await run({ storedAnswer: mapping });
    expect(report).toMatchObject({ repaired: { claim_without_effect: 2 }, unreconciled: 0 });
    const after = await claimsAsStored();
    expect(after.find((c) => c.key === 'custom-paid')).toEqual(before);
    expect(after.find((c) => c.key === 'custom-waiting')?.answer).toMatch(/"charge": "ch_waited"/);
  });
});

describe('keys as Stripe holds them', () => {
  it('a key with accents or CJK is judged as a key, byte for byte, beside the others', async () => {
    for (const [key, minute] of [
      ['commande-éèà-1', 0],
      ['订单-１', 5],
    ] as const) {
      await healthy(key, minute, stripeCharge);
    }
    // The same key in another Unicode form is another key: an orphan of a known tenant, not this claim.
    stripe.push(
      charge({ id: 'ch_nfd', created: secs('09:30'), tenantId: 'acme', idempotencyKey: 'commande-e\u0301èà-1' }),
    );
    const [report] = await run();
    expect(report).toMatchObject({ findings: { matched: 2, orphan_charge: 1 }, repaired: { orphan_charge: 1 } });
  });
});

describe('a charge Stripe returns unreadable in a re-read', () => {
  it('is an open finding naming it; the key it names is not released; the run and its reruns go on', async () => {
    // A worker died; Stripe's search for its key returns a charge the sweep cannot read.
    await seedClaim(db.pool, { tenantId: 'acme', key: 'poisoned', status: 'in_flight', createdAt: at('09:00') });
    stripe.push(charge({ id: 'ch_poison', created: secs('07:00'), tenantId: 'acme', idempotencyKey: 'poisoned' }));
    unreadable.set('ch_poison', 'metadata[idempotency_key] is not 1-500 characters without control characters');
    // Another key of the account, judged as usual in the same run.
    await seedClaim(db.pool, { tenantId: 'acme', key: 'other', status: 'in_flight', createdAt: at('09:30') });

    for (const attempt of [1, 2]) {
      const [report] = await run();
      expect(report, `run ${attempt}`).toMatchObject({
        status: 'succeeded',
        findings: { claim_without_effect: 1, unattributed_charge: 1, stale_claim: attempt === 1 ? 1 : 0 },
        unreconciled: 2,
      });
      const { rows } = await db.pool.query(`SELECT key, status FROM idempotency_keys ORDER BY key`);
      expect(rows).toEqual([
        { key: 'other', status: 'released' },
        { key: 'poisoned', status: 'in_flight' },
      ]);
    }
    expect((await openFindings()).map((f) => [f.category, f.subject])).toEqual([
      ['claim_without_effect', 'acme\u241fpoisoned'],
      ['unattributed_charge', 'ch_poison'],
    ]);
  });
});
