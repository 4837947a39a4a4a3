import { beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { e2eEnvironment } from '../support/e2e.js';
import { tableChecksums } from '../support/checksums.js';
import { emptySweepTables, seedClaim, seedEffect } from '../support/scenario.js';

/**
 * docs/judgement.md "The rules, in order", class by class, through `sweeper backfill` against the
 * Stripe double: the histories that made wrong repairs before (evidence set aside by
 * its timestamp, account boundaries, a forged charge, a stored answer read through one
 * status code, refunds across crashes, dry runs that counted differently).
 */

const HOUR = 3_600_000;
const MIN = 60_000;
const base = new Date(Math.floor(Date.now() / HOUR) * HOUR - 4 * HOUR);
const window = { from: base, to: new Date(base.getTime() + 3 * HOUR) };
const at = (minutes: number) => new Date(base.getTime() + minutes * MIN);

const e2e = e2eEnvironment({
  key: 'sk_test_judgement',
  settings: { SWEEPER_ACCOUNTS: 'platform,acct_1Third', SWEEPER_SLICE: '1h' },
  partitionDaysBack: 3,
});
const env = e2e.env;
const backfill = async (extra: string[] = [], account = 'platform', environment = env()) => {
  const result = await runCli(
    [
      'backfill',
      '--from',
      window.from.toISOString(),
      '--to',
      window.to.toISOString(),
      '--account',
      account,
      '--json',
      '--no-resume',
      ...extra,
    ],
    environment,
  );
  return { ...result, report: result.stdout ? JSON.parse(result.stdout.trim().split('\n')[0] as string) : null };
};
const q = async (sql: string, args: unknown[] = []) => (await e2e.db.pool.query(sql, args)).rows;
const meta = (tenant: string, key: string) => ({ tenant_id: tenant, idempotency_key: key });

beforeEach(async () => {
  e2e.double.reset();
  await emptySweepTables(e2e.db.pool);
});

describe('every charge naming a key is evidence, whatever its timestamp', () => {
  it('a charge made by hand before the claim, then a worker that died holding the claim: completed from it, never released', async () => {
    const charge = e2e.double.createCharge(null, {
      created: at(-60 * 24),
      amount: 5000,
      metadata: meta('acme', 'order-7'),
    });
    await seedClaim(e2e.db.pool, {
      tenantId: 'acme',
      key: 'order-7',
      status: 'in_flight',
      createdAt: at(20),
      amount: 5000,
      currency: 'usd',
    });
    const { code, report } = await backfill();
    expect(code).toBe(0);
    expect(report.repaired).toMatchObject({ claim_without_effect: 1, stale_claim: 0 });
    expect(await q(`SELECT status, response_outcome FROM idempotency_keys WHERE key = 'order-7'`)).toEqual([
      { status: 'completed', response_outcome: 'success' },
    ]);
    expect(await q(`SELECT charge_id FROM payments`)).toEqual([{ charge_id: charge.id }]);
  });

  it('a payment row whose charge lies before the window the mirror holds: Stripe is asked by id, no effect_without_charge', async () => {
    const charge = e2e.double.createCharge(null, { created: at(-60 * 30), amount: 1200 });
    await seedEffect(e2e.db.pool, { chargeId: charge.id, amount: 1200, createdAt: at(30) });
    const { code, report } = await backfill();
    expect(code).toBe(0);
    expect(report.findings.effect_without_charge).toBe(0);
    expect(e2e.double.counters.get('GET /v1/charges/:id')).toBeGreaterThan(0);
  });
});

describe('account boundaries', () => {
  it("a connected account's charge naming a platform tenant makes no claim there; the tenant's own request still works", async () => {
    await seedClaim(e2e.db.pool, {
      tenantId: 'acme',
      key: 'earlier',
      status: 'completed',
      createdAt: at(5),
      responseCharge: 'ch_x',
    });
    const forged = e2e.double.createCharge('acct_1Third', {
      created: at(30),
      amount: 100,
      metadata: meta('acme', 'order-9'),
    });
    const { code, report } = await backfill([], 'acct_1Third');
    expect(code).toBe(3);
    expect(report.findings).toMatchObject({ unattributed_charge: 1, orphan_charge: 0 });
    expect(await q(`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = 'order-9'`)).toEqual([{ n: 0 }]);
    expect(await q(`SELECT subject, details->>'reason' AS reason FROM recon_findings`)).toEqual([
      { subject: forged.id, reason: expect.stringMatching(/no claim and no payment on account acct_1Third/) },
    ]);
  });

  it("one account's run never judges or releases a claim of another account", async () => {
    await seedClaim(e2e.db.pool, {
      tenantId: 'acme',
      key: 'connected-order',
      status: 'in_flight',
      createdAt: at(20),
      accountId: 'acct_1Third',
    });
    e2e.double.createCharge(null, { created: at(25), metadata: meta('acme', 'connected-order') });
    await backfill([], 'platform');
    expect(await q(`SELECT status FROM idempotency_keys WHERE key = 'connected-order'`)).toEqual([
      { status: 'in_flight' },
    ]);
  });
});

describe('the request is bound to the charge', () => {
  it('a $1 charge with forged metadata never completes a $50 claim; with --refund-duplicates the real charge is kept and nothing is refunded', async () => {
    await seedClaim(e2e.db.pool, {
      tenantId: 'acme',
      key: 'order-50',
      status: 'in_flight',
      createdAt: at(20),
      amount: 5000,
      currency: 'usd',
    });
    e2e.double.createCharge(null, {
      created: at(10),
      amount: 100,
      metadata: meta('acme', 'order-50'),
      customer: 'cus_mallory',
    });
    const real = e2e.double.createCharge(null, {
      created: at(21),
      amount: 5000,
      metadata: meta('acme', 'order-50'),
      customer: 'cus_alice',
    });
    const { code, report } = await backfill(['--refund-duplicates']);
    expect(code).toBe(3);
    expect(report.findings).toMatchObject({ duplicate_charge: 1, claim_without_effect: 1 });
    expect(await q(`SELECT charge_id FROM payments`)).toEqual([{ charge_id: real.id }]);
    expect(e2e.double.refunds()).toEqual([]);
    expect(
      await q(`SELECT details->>'kept' AS kept, state FROM recon_findings WHERE category = 'duplicate_charge'`),
    ).toEqual([{ kept: real.id, state: 'open' }]);
  });

  it('a stored 201 success with neither payment nor charge is lost_effect; a stored success whose only charge was declined too', async () => {
    await seedClaim(e2e.db.pool, {
      tenantId: 'acme',
      key: 'created',
      status: 'completed',
      createdAt: at(20),
      responseStatus: 201,
      responseOutcome: null,
      responseCharge: 'ch_never',
    });
    await seedClaim(e2e.db.pool, {
      tenantId: 'acme',
      key: 'declined',
      status: 'completed',
      createdAt: at(30),
      responseCharge: 'ch_declined_x',
    });
    e2e.double.createCharge(null, { created: at(30), status: 'failed', metadata: meta('acme', 'declined') });
    const { report } = await backfill();
    expect(report.findings).toMatchObject({ lost_effect: 2, matched: 0 });
  });
});

describe('refunds through the outbox', () => {
  it('a crash after the refund POST: the rerun finds the refund at Stripe, POSTs nothing, and records it once', async () => {
    await seedClaim(e2e.db.pool, {
      tenantId: 'acme',
      key: 'dup',
      status: 'completed',
      createdAt: at(20),
      responseCharge: 'x',
    });
    const kept = e2e.double.createCharge(null, {
      created: at(20),
      amount: 1000,
      metadata: meta('acme', 'dup'),
      customer: 'cus_1',
      paymentMethod: 'pm_card_visa',
    });
    const extra = e2e.double.createCharge(null, {
      created: at(21),
      amount: 1000,
      metadata: meta('acme', 'dup'),
      customer: 'cus_1',
      paymentMethod: 'pm_card_visa',
    });
    await seedEffect(e2e.db.pool, { chargeId: kept.id, tenantId: 'acme', key: 'dup', createdAt: at(20) });
    const crashed = await backfill(
      ['--refund-duplicates'],
      'platform',
      env({ SWEEPER_TEST_CRASH_AT: `refund:${extra.id}:posted` }),
    );
    expect(crashed.signal).toBe('SIGKILL');
    expect(e2e.double.refunds().map((r) => r.charge)).toEqual([extra.id]);
    expect(await q(`SELECT state FROM recon_refunds`)).toEqual([{ state: 'intent' }]);
    const posts = e2e.double.counters.get('POST /v1/refunds');

    const { code, report } = await backfill(['--refund-duplicates']);
    expect(code).toBe(0);
    expect(e2e.double.counters.get('POST /v1/refunds')).toBe(posts);
    expect(e2e.double.refunds()).toHaveLength(1);
    expect(report.repaired.duplicate_charge).toBe(1);
    expect(await q(`SELECT state, stripe_refund_id IS NOT NULL AS has_refund FROM recon_refunds`)).toEqual([
      { state: 'refunded', has_refund: true },
    ]);
    expect(await q(`SELECT count(*)::int AS n FROM recon_repairs WHERE action = 'refund_duplicate'`)).toEqual([
      { n: 1 },
    ]);
    expect(await q(`SELECT state FROM recon_findings WHERE category = 'duplicate_charge'`)).toEqual([
      { state: 'repaired' },
    ]);

    // Any number of reruns: no POST, no audit row.
    await backfill(['--refund-duplicates']);
    expect(e2e.double.counters.get('POST /v1/refunds')).toBe(posts);
    expect(await q(`SELECT count(*)::int AS n FROM recon_repairs WHERE action = 'refund_duplicate'`)).toEqual([
      { n: 1 },
    ]);
  });
});

describe('a dry run counts as the real run', () => {
  it('a key matched in one slice and duplicated in a later one, with repairs between: the same counts, category by category', async () => {
    await seedClaim(e2e.db.pool, {
      tenantId: 'acme',
      key: 'late-dup',
      status: 'in_flight',
      createdAt: at(30),
      amount: 1000,
      currency: 'usd',
    });
    e2e.double.createCharge(null, { created: at(31), amount: 1000, metadata: meta('acme', 'late-dup') });
    e2e.double.createCharge(null, { created: at(100), amount: 1000, metadata: meta('acme', 'late-dup') });
    await seedClaim(e2e.db.pool, { tenantId: 'acme', key: 'stale', status: 'in_flight', createdAt: at(40) });
    const before = await tableChecksums(e2e.db.pool);
    const dry = await backfill(['--dry-run']);
    expect(await tableChecksums(e2e.db.pool)).toEqual(before);
    const real = await backfill();
    expect({
      findings: dry.report.findings,
      repaired: dry.report.repaired,
      unreconciled: dry.report.unreconciled,
    }).toEqual({
      findings: real.report.findings,
      repaired: real.report.repaired,
      unreconciled: real.report.unreconciled,
    });
    expect(real.report.findings).toMatchObject({ duplicate_charge: 1, claim_without_effect: 1, stale_claim: 1 });
  });
});
