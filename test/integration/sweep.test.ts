import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LOCK_CLASS, LockObject } from '../../src/db/locks.js';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { createPool, type Queryable } from '../../src/db/pool.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { lockAccounts, SweepLockedError } from '../../src/sweep/lock.js';
import { sweep, SweepFailedError, sweepOptions, type SweepDeps, type SweepOptions } from '../../src/sweep/sweep.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import {
  charge,
  emptySweepTables,
  memoryChargeSource,
  memorySweepDeps,
  memoryEvidence,
  seedClaim,
  seedEffect,
} from '../support/scenario.js';
import { tableChecksums } from '../support/checksums.js';

const NOW = new Date('2026-11-10T12:00:00Z');
const at = (iso: string) => new Date(`2026-11-${iso}Z`);
const secs = (iso: string) => at(iso).getTime() / 1000;
const MIN = 60_000;

const baseOptions: SweepOptions = sweepOptions({
  mode: 'backfill',
  accounts: ['platform'],
  window: { from: at('09T08:00:00'), to: at('10T11:00:00') },
  dryRun: false,
  settleMs: 10 * MIN,
  overlapMs: 15 * MIN,
  sliceMs: 60 * MIN,
  leaseMs: 2 * MIN,
  retentionMs: 7 * 24 * 60 * MIN,
  firstRunLookbackMs: 24 * 60 * MIN,
  refundDuplicates: false,
  resume: false,
});

let db: TestDatabase;
let stripe: NormalizedCharge[];
const listCalls = { count: 0 };
let evidence: ReturnType<typeof memoryEvidence>;

/** A sweep of the scenario's Stripe at NOW, with any dependency or option replaced. */
function sweepWith(deps: Partial<SweepDeps> = {}, options: Partial<SweepOptions> = {}) {
  return sweep(
    memorySweepDeps(db.pool, () => stripe, NOW, { listCalls, evidence, ...deps }),
    {
      ...baseOptions,
      ...options,
    },
  );
}

function run(options: Partial<SweepOptions> = {}, clock = () => NOW) {
  return sweepWith({ clock }, options);
}

const meta = (key: string) => ({ tenantId: 'acme', idempotencyKey: key });

/** Ends the sessions idle inside a transaction right now (a sweep's, stopped at a fault point): its connection dies. */
const killIdleInTransaction = (killer: Queryable) =>
  killer.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'idle in transaction' AND pid <> pg_backend_pid()`,
  );

/** Every category of the table, as crashes and outside hands leave them. */
async function buildScenario(): Promise<void> {
  stripe = [];
  evidence = memoryEvidence(() => stripe);
  const q = db.pool;
  // matched
  await seedClaim(q, { tenantId: 'acme', key: 'k-matched', status: 'completed', createdAt: at('10T09:00:00') });
  await seedEffect(q, { chargeId: 'ch_matched', tenantId: 'acme', key: 'k-matched', createdAt: at('10T09:00:01') });
  stripe.push(charge({ id: 'ch_matched', created: secs('10T09:00:01'), ...meta('k-matched') }));
  // claim_without_effect: crashed after Stripe charged
  await seedClaim(q, { tenantId: 'acme', key: 'k-cwe', status: 'in_flight', createdAt: at('10T09:10:00') });
  stripe.push(charge({ id: 'ch_cwe', created: secs('10T09:10:01'), paymentIntent: 'pi_cwe', ...meta('k-cwe') }));
  // claim_without_effect: crashed after a decline
  await seedClaim(q, { tenantId: 'acme', key: 'k-cwf', status: 'in_flight', createdAt: at('10T09:20:00') });
  stripe.push(charge({ id: 'ch_cwf', created: secs('10T09:20:01'), status: 'failed', ...meta('k-cwf') }));
  // stale_claim: crashed before Stripe saw it
  await seedClaim(q, { tenantId: 'acme', key: 'k-stale', status: 'in_flight', createdAt: at('10T09:30:00') });
  // stale_claim older than 24 h: not released
  await seedClaim(q, { tenantId: 'acme', key: 'k-stale-old', status: 'in_flight', createdAt: at('09T09:00:00') });
  // lost_effect: success stored, no payment row, no charge
  await seedClaim(q, { tenantId: 'acme', key: 'k-lost', status: 'completed', createdAt: at('10T09:40:00') });
  // effect_without_claim
  await seedEffect(q, { chargeId: 'ch_ewc', tenantId: 'acme', key: 'k-ewc', createdAt: at('10T09:50:00') });
  stripe.push(charge({ id: 'ch_ewc', created: secs('10T09:50:00'), ...meta('k-ewc') }));
  // orphan_charge: made outside the library, metadata names a key
  stripe.push(charge({ id: 'ch_orphan', created: secs('10T10:00:00'), amount: 2500, ...meta('k-orphan') }));
  // unattributed_charge: no metadata
  stripe.push(charge({ id: 'ch_unattributed', created: secs('10T10:05:00') }));
  // effect_without_charge
  await seedClaim(q, { tenantId: 'acme', key: 'k-ghost', status: 'completed', createdAt: at('10T10:10:00') });
  await seedEffect(q, { chargeId: 'ch_ghost', tenantId: 'acme', key: 'k-ghost', createdAt: at('10T10:10:01') });
  // amount_mismatch
  await seedClaim(q, { tenantId: 'acme', key: 'k-amount', status: 'completed', createdAt: at('10T10:20:00') });
  await seedEffect(q, { chargeId: 'ch_amount', tenantId: 'acme', key: 'k-amount', createdAt: at('10T10:20:01') });
  stripe.push(charge({ id: 'ch_amount', created: secs('10T10:20:01'), amount: 1500, ...meta('k-amount') }));
  // status_drift: refunded and disputed at Stripe
  await seedClaim(q, { tenantId: 'acme', key: 'k-drift', status: 'completed', createdAt: at('10T10:30:00') });
  await seedEffect(q, { chargeId: 'ch_drift', tenantId: 'acme', key: 'k-drift', createdAt: at('10T10:30:01') });
  stripe.push(
    charge({ id: 'ch_drift', created: secs('10T10:30:01'), amountRefunded: 400, disputed: true, ...meta('k-drift') }),
  );
  // duplicate_charge
  await seedClaim(q, { tenantId: 'acme', key: 'k-dup', status: 'completed', createdAt: at('10T10:40:00') });
  await seedEffect(q, { chargeId: 'ch_dup1', tenantId: 'acme', key: 'k-dup', createdAt: at('10T10:40:01') });
  stripe.push(charge({ id: 'ch_dup1', created: secs('10T10:40:01'), ...meta('k-dup') }));
  stripe.push(charge({ id: 'ch_dup2', created: secs('10T10:41:00'), ...meta('k-dup') }));
  // a live writer: in flight, lease still running
  await seedClaim(q, {
    tenantId: 'acme',
    key: 'k-live',
    status: 'in_flight',
    createdAt: at('10T10:50:00'),
    lockedUntil: new Date(NOW.getTime() + MIN),
  });
}

async function query<T extends Record<string, unknown>>(sql: string, args: unknown[] = []): Promise<T[]> {
  return (await db.pool.query<T>(sql, args)).rows;
}

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: '2026-11-01', to: '2026-11-15' });
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  await emptySweepTables(db.pool);
  await buildScenario();
});

describe('a sweep over every category', () => {
  it('finds each category, repairs the safe ones, and leaves the rest open', async () => {
    const [report] = await run();
    expect(report).toMatchObject({
      findings: {
        matched: 2, // ch_matched, and ch_dup1: the duplicate's kept charge agrees with its claim and payment
        claim_without_effect: 2,
        stale_claim: 2,
        lost_effect: 1,
        effect_without_claim: 1,
        orphan_charge: 1,
        unattributed_charge: 1,
        effect_without_charge: 1,
        amount_mismatch: 1,
        status_drift: 1,
        duplicate_charge: 1,
      },
      repaired: { claim_without_effect: 2, stale_claim: 1, effect_without_claim: 1, orphan_charge: 1, status_drift: 1 },
      unreconciled: 6,
      charges_scanned: stripe.length,
    });

    const claims = Object.fromEntries(
      (
        await query<{ key: string; status: string; response_status: number | null; request_fingerprint: string }>(
          'SELECT key, status, response_status, request_fingerprint FROM idempotency_keys',
        )
      ).map((c) => [c.key, c]),
    );
    expect(claims['k-cwe']).toMatchObject({ status: 'completed', response_status: 200 });
    expect(claims['k-cwf']).toMatchObject({ status: 'completed', response_status: 402 });
    expect(claims['k-stale']).toMatchObject({ status: 'released' });
    expect(claims['k-stale-old']).toMatchObject({ status: 'in_flight' });
    expect(claims['k-ewc']).toMatchObject({ status: 'completed', request_fingerprint: 'sweeper:recreated' });
    expect(claims['k-orphan']).toMatchObject({ status: 'completed', request_fingerprint: 'sweeper:recreated' });
    expect(claims['k-live']).toMatchObject({ status: 'in_flight' });

    const payments = Object.fromEntries(
      (
        await query<{ charge_id: string; status: string; amount: number; amount_refunded: number; disputed: boolean }>(
          'SELECT charge_id, status, amount, amount_refunded, disputed FROM payments',
        )
      ).map((p) => [p.charge_id, p]),
    );
    expect(payments.ch_cwe).toMatchObject({ status: 'succeeded', amount: 1000 });
    expect(payments.ch_cwf).toMatchObject({ status: 'failed' });
    expect(payments.ch_orphan).toMatchObject({ amount: 2500 });
    expect(payments.ch_drift).toMatchObject({ amount_refunded: 400, disputed: true });
    expect(payments.ch_dup2).toBeUndefined();
    expect(payments.ch_unattributed).toBeUndefined();

    const open = await query<{ category: string }>(
      `SELECT category FROM recon_findings WHERE state = 'open' ORDER BY category`,
    );
    expect(open.map((f) => f.category)).toEqual([
      'amount_mismatch',
      'duplicate_charge',
      'effect_without_charge',
      'lost_effect',
      'stale_claim',
      'unattributed_charge',
    ]);
    const audit = await query<{ action: string; category: string }>(
      `SELECT r.action, f.category FROM recon_repairs r JOIN recon_findings f ON f.id = r.finding_id ORDER BY 2, 1`,
    );
    expect(audit).toEqual([
      { action: 'insert_effect_and_complete_claim', category: 'claim_without_effect' },
      { action: 'store_failure_and_effect', category: 'claim_without_effect' },
      { action: 'recreate_claim', category: 'effect_without_claim' },
      { action: 'create_claim_and_effect', category: 'orphan_charge' },
      { action: 'release_claim', category: 'stale_claim' },
      { action: 'update_effect_from_stripe', category: 'status_drift' },
    ]);
    const [runRow] = await query(`SELECT status, unreconciled FROM recon_runs WHERE id = $1`, [report?.run_id]);
    expect(runRow).toEqual({ status: 'succeeded', unreconciled: 6 });
  });

  it('a second sweep repairs nothing, keeps the same findings and moves last_seen_run', async () => {
    const [first] = await run();
    const before = await query(`SELECT id, category, subject, state, first_seen_run FROM recon_findings ORDER BY id`);
    const [second] = await run();
    expect(Object.values(second!.repaired).every((n) => n === 0)).toBe(true);
    const after = await query<{ last_seen_run: string; state: string }>(
      `SELECT id, category, subject, state, first_seen_run, last_seen_run FROM recon_findings ORDER BY id`,
    );
    expect(after.map(({ last_seen_run: _l, ...rest }) => rest)).toEqual(before);
    expect(after.filter((f) => f.state === 'open').every((f) => f.last_seen_run === second!.run_id)).toBe(true);
    expect(second!.unreconciled).toBe(first!.unreconciled);
    expect(await query(`SELECT count(*)::int AS n FROM recon_repairs`)).toEqual([{ n: 6 }]);
  });

  it('--dry-run leaves every table byte for byte as it was and reports what it would do', async () => {
    const before = await tableChecksums(db.pool);
    const [report] = await run({ dryRun: true });
    expect(report).toMatchObject({
      dry_run: true,
      repaired: { claim_without_effect: 2, stale_claim: 1 },
      unreconciled: 6,
    });
    expect(await tableChecksums(db.pool)).toEqual(before);
  });

  it('--dry-run does not keep the locks of what it would repair once the slice is judged', async () => {
    const other = await db.pool.connect();
    const seen: unknown[] = [];
    try {
      await sweepWith(
        {
          // k-stale (released) and k-ewc (re-created) were repaired in slice 25; slice 26 is under way.
          faultPoint: async (name) => {
            if (name !== 'slice:26:judged') return;
            await other.query('BEGIN');
            const row = await other.query(
              `SELECT status FROM idempotency_keys WHERE key = 'k-stale' FOR UPDATE NOWAIT`,
            );
            // Filing k-ewc would wait for the dry run's transaction if it still held the key.
            await other.query(`SET LOCAL lock_timeout = '2s'`);
            const lock = await other.query(
              `INSERT INTO idempotency_key_directory (tenant_id, key, created_at) VALUES ('acme', 'k-ewc', now())
               ON CONFLICT DO NOTHING RETURNING true AS free`,
            );
            await other.query('ROLLBACK');
            seen.push(row.rows[0], lock.rows[0]);
          },
        },
        { dryRun: true },
      );
      expect(seen).toEqual([{ status: 'in_flight' }, { free: true }]);
    } finally {
      other.release();
    }
  });

  it('a live writer wins: a claim stolen between read and repair is left to it', async () => {
    // The writer re-took k-stale (attempt 2) after the sweep judged attempt 1 and before it repaired.
    let raced = false;
    const [report] = await sweepWith(
      {
        faultPoint: async (name) => {
          if (name.endsWith(':judged') && !raced) {
            raced = true;
            await db.pool.query(`UPDATE idempotency_keys SET attempt = 2, locked_until = $1 WHERE key = 'k-stale'`, [
              new Date(NOW.getTime() + MIN),
            ]);
          }
        },
      },
      {},
    );
    expect(raced).toBe(true);
    expect(report!.repaired.stale_claim).toBe(0);
    expect(report!.findings.stale_claim).toBe(1); // only the 24 h one: the raced claim is no finding
    expect(report!.deferred_keys).toBe(2); // k-stale, left to its writer, and k-live (a live lease)
    const [claim] = await query(`SELECT status, attempt FROM idempotency_keys WHERE key = 'k-stale'`);
    expect(claim).toEqual({ status: 'in_flight', attempt: 2 });
  });
});

describe('--refund-duplicates', () => {
  it('refunds the extra charge through the outbox after the slice committed, with a key derived from the charge, once', async () => {
    const [report] = await sweepWith({}, { refundDuplicates: true });
    expect(evidence.refunds).toMatchObject([
      { chargeId: 'ch_dup2', metadata: { sweeper_refund_key: 'sweeper_refund_v1_ch_dup2' } },
    ]);
    expect(report).toMatchObject({ repaired: { duplicate_charge: 1 }, unreconciled: 5 });
    expect(await query(`SELECT state FROM recon_findings WHERE category = 'duplicate_charge'`)).toEqual([
      { state: 'repaired' },
    ]);
    expect(await query(`SELECT charge_id, kept_charge_id, state FROM recon_refunds`)).toEqual([
      { charge_id: 'ch_dup2', kept_charge_id: 'ch_dup1', state: 'refunded' },
    ]);
    expect(
      await query(
        `SELECT r.action FROM recon_repairs r JOIN recon_findings f ON f.id = r.finding_id WHERE f.category = 'duplicate_charge'`,
      ),
    ).toEqual([{ action: 'refund_duplicate' }]);
    // The mirror holds Stripe's answer after the refund.
    expect(await query(`SELECT refunded, amount_refunded FROM stripe_charges WHERE charge_id = 'ch_dup2'`)).toEqual([
      { refunded: true, amount_refunded: 1000 },
    ]);

    // A rerun of the range: the duplicate is settled, no POST, no new audit row.
    const [again] = await sweepWith({}, { refundDuplicates: true });
    expect(evidence.calls.refundPosts).toBe(1);
    expect(again?.findings.duplicate_charge).toBe(0);
    expect(await query(`SELECT state FROM recon_findings WHERE category = 'duplicate_charge'`)).toEqual([
      { state: 'repaired' },
    ]);
    expect(await query(`SELECT count(*)::int AS n FROM recon_repairs WHERE action = 'refund_duplicate'`)).toEqual([
      { n: 1 },
    ]);
  });

  it('a refund that Stripe refuses ends the run with the duplicate open and the intent kept; the next run finishes it', async () => {
    evidence.refundFails.next = 1;
    await expect(sweepWith({}, { refundDuplicates: true })).rejects.toThrow(/could not be reached/);
    expect(await query(`SELECT state FROM recon_findings WHERE category = 'duplicate_charge'`)).toEqual([
      { state: 'open' },
    ]);
    expect(await query(`SELECT state FROM recon_refunds`)).toEqual([{ state: 'intent' }]);
    const [next] = await sweepWith({}, { refundDuplicates: true });
    expect(next?.repaired.duplicate_charge).toBe(1);
    expect(await query(`SELECT state FROM recon_findings WHERE category = 'duplicate_charge'`)).toEqual([
      { state: 'repaired' },
    ]);
    expect(evidence.refunds).toHaveLength(1);
  });

  it('a crash after Stripe refunded but before the commit: the next run finds the refund and POSTs nothing', async () => {
    evidence.refundFails.next = 1;
    evidence.refundFails.afterStripeRefunded = true; // Stripe refunds, the answer is lost
    // The POST's own error path looks again and finds it: settled in the same run.
    const [report] = await sweepWith({}, { refundDuplicates: true });
    expect(report?.repaired.duplicate_charge).toBe(1);
    expect(evidence.calls.refundPosts).toBe(1);
    expect(await query(`SELECT state, reason FROM recon_refunds`)).toEqual([
      { state: 'refunded', reason: 'found at Stripe: already refunded by an earlier attempt' },
    ]);
  });
});

describe('charges Stripe returned malformed', () => {
  it('become open findings that say why, and are counted', async () => {
    const withMalformed = async function* (account: string, window: { from: Date; to: Date }) {
      yield* memoryChargeSource(() => stripe)(account, window);
      yield {
        charges: [],
        malformed: [
          { id: 'ch_broken', account: null, problem: 'amount is missing' },
          { id: null, account: null, problem: 'id is missing' },
        ],
      };
    };
    const [report] = await sweepWith({ listCharges: withMalformed }, {});
    expect(report!.malformed_charges).toBeGreaterThanOrEqual(2);
    expect(
      await query(`SELECT state, details->>'reason' AS reason FROM recon_findings WHERE subject = 'ch_broken'`),
    ).toEqual([
      {
        state: 'open',
        reason: 'Stripe returned this charge without what the sweep needs (amount is missing); it cannot be judged',
      },
    ]);
  });
});

describe('a charge the database refuses', () => {
  it('is an open finding naming the charge and the reason; the rest of its slice lands and is judged', async () => {
    // A rule the normaliser knows nothing about: what the guarded landing is for.
    await db.pool.query(`ALTER TABLE stripe_charges ADD CONSTRAINT test_no_poison CHECK (tenant_id <> 'poison')`);
    try {
      stripe.push(charge({ id: 'ch_poison', created: secs('10T09:00:30'), tenantId: 'poison', idempotencyKey: 'k' }));
      const [report] = await run();
      expect(report!.status).toBe('succeeded');
      const [finding] = await query<{ state: string; reason: string }>(
        `SELECT state, details->>'reason' AS reason FROM recon_findings WHERE subject = 'ch_poison'`,
      );
      expect(finding?.state).toBe('open');
      expect(finding?.reason).toMatch(/the database refused it: .*test_no_poison/);
      // Its neighbours in the slice landed and were judged as without it.
      expect(
        await query(`SELECT charge_id FROM stripe_charges WHERE charge_id IN ('ch_matched', 'ch_poison')`),
      ).toEqual([{ charge_id: 'ch_matched' }]);
      expect(report!.findings.matched).toBeGreaterThanOrEqual(1);
      expect(report!.repaired.claim_without_effect).toBeGreaterThanOrEqual(1);
    } finally {
      await db.pool.query('ALTER TABLE stripe_charges DROP CONSTRAINT test_no_poison');
    }
  });
});

describe('Stripe Connect', () => {
  it("judges each account on its own: a connected account's crashed charge is repaired there, with its own watermark", async () => {
    await seedClaim(db.pool, {
      tenantId: 'acme',
      key: 'k-connect',
      status: 'in_flight',
      createdAt: at('10T09:05:00'),
      accountId: 'acct_1Connected',
    });
    stripe.push(
      charge({ id: 'ch_connect', account: 'acct_1Connected', created: secs('10T09:05:01'), ...meta('k-connect') }),
    );
    const reports = await run({ mode: 'run', window: undefined, accounts: ['platform', 'acct_1Connected'] });
    expect(reports.map((r) => [r.account, r.repaired.claim_without_effect])).toEqual([
      ['platform', 2],
      ['acct_1Connected', 1],
    ]);
    expect(await query(`SELECT account_id FROM payments WHERE charge_id = 'ch_connect'`)).toEqual([
      { account_id: 'acct_1Connected' },
    ]);
    expect(await query(`SELECT account FROM recon_watermarks ORDER BY account`)).toEqual([
      { account: 'acct_1Connected' },
      { account: 'platform' },
    ]);
  });
});

describe('a dry run of several accounts', () => {
  // No claim for acme/k-shared anywhere. The platform's charge names it: the sweep
  // re-creates the claim there. A payment row of the connected account names the same
  // key: once the platform holds the claim, the connected account may not take it.
  const seedSharedKey = async () => {
    stripe.push(charge({ id: 'ch_shared_p', created: secs('10T09:30:01'), ...meta('k-shared') }));
    stripe.push(
      charge({ id: 'ch_shared_c', account: 'acct_1Connected', created: secs('10T09:31:01'), ...meta('k-shared') }),
    );
    await seedEffect(db.pool, {
      chargeId: 'ch_shared_c',
      tenantId: 'acme',
      key: 'k-shared',
      accountId: 'acct_1Connected',
      createdAt: at('10T09:31:02'),
    });
  };

  it('judges each account on what the accounts before it would have repaired, so it counts as the real run', async () => {
    await seedSharedKey();
    const accounts = ['platform', 'acct_1Connected'];
    const untouched = await tableChecksums(db.pool);
    const dry = await run({ dryRun: true, accounts });
    expect(await tableChecksums(db.pool), 'a dry run changed a table').toEqual(untouched);
    const real = await run({ accounts });
    const counted = (reports: typeof real) =>
      reports.map((r) => ({ account: r.account, findings: r.findings, repaired: r.repaired, open: r.unreconciled }));
    expect(counted(dry)).toEqual(counted(real));
    expect(await query(`SELECT account_id FROM idempotency_keys WHERE key = 'k-shared'`)).toEqual([
      { account_id: null },
    ]);
  });

  it('lays nothing of a batch that failed over the next account, as the real run keeps nothing of it', async () => {
    await seedSharedKey();
    // The first account swept (the platform) fails just before committing the slice that
    // holds k-shared, after its repairs were judged.
    const failOnce = () => {
      let failed = false;
      return async (name: string) => {
        if (name === 'slice:25:before-commit' && !failed) {
          failed = true;
          throw new Error('the database went away');
        }
      };
    };
    const accounts = ['platform', 'acct_1Connected'];
    const counted = (error: unknown) =>
      (error as SweepFailedError).reports.map((r) => ({
        account: r.account,
        status: r.status,
        findings: r.findings,
        repaired: r.repaired,
        open: r.unreconciled,
      }));
    const dry = await sweepWith({ faultPoint: failOnce() }, { dryRun: true, accounts }).catch((e: unknown) => e);
    const real = await sweepWith({ faultPoint: failOnce() }, { accounts }).catch((e: unknown) => e);
    expect(counted(real).map((r) => [r.account, r.status])).toEqual([
      ['platform', 'failed'],
      ['acct_1Connected', 'succeeded'],
    ]);
    expect(counted(dry)).toEqual(counted(real));
  });

  it('whose connection dies reports the accounts after it as not judged, leaves every table as it was, and frees the lock', async () => {
    const killer = await db.pool.connect();
    try {
      const untouched = await tableChecksums(db.pool);
      const error = await sweepWith(
        {
          faultPoint: async (name) => {
            if (name !== 'slice:25:judged') return;
            // The dry run's one connection is the one idle inside a transaction right now.
            await killIdleInTransaction(killer);
          },
        },
        { dryRun: true, accounts: ['platform', 'acct_1Connected'] },
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SweepFailedError);
      const reports = (error as SweepFailedError).reports;
      expect(reports.map((r) => [r.account, r.status])).toEqual([
        ['platform', 'failed'],
        ['acct_1Connected', 'failed'],
      ]);
      expect(reports[1]?.error).toMatch(/^not judged: the dry run's database transaction broke while judging platform/);
      expect(await tableChecksums(db.pool)).toEqual(untouched);
      // The lock went with it: a real run of both accounts goes ahead at once.
      const real = await run({ accounts: ['platform', 'acct_1Connected'] });
      expect(real.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    } finally {
      killer.release();
    }
  });
});

describe('claims written by other clients', () => {
  it('repairs a claim whose created_at carries microseconds (a JavaScript Date cannot hold them)', async () => {
    await db.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, attempt, downstream_key,
                                     created_at, updated_at)
       VALUES ('acme', 'k-micro', 'fp', 'in_flight', '2026-11-10T09:17:00.654321Z', 1, 'd',
               '2026-11-10T09:15:00.123456Z', '2026-11-10T09:15:00.123456Z')`,
    );
    stripe.push(charge({ id: 'ch_micro', created: secs('10T09:15:01'), ...meta('k-micro') }));
    const [report] = await run();
    expect(report!.repaired.claim_without_effect).toBe(3);
    expect(await query(`SELECT status FROM idempotency_keys WHERE key = 'k-micro'`)).toEqual([{ status: 'completed' }]);
    expect(await query(`SELECT charge_id FROM payments WHERE idempotency_key = 'k-micro'`)).toEqual([
      { charge_id: 'ch_micro' },
    ]);
  });
});

describe('claims loaded with the triggers off', () => {
  it("a claim with no directory entry (session_replication_role = replica) is still its key's claim: judged, never re-created beside it", async () => {
    const client = await db.pool.connect();
    try {
      await client.query('SET session_replication_role = replica');
      await client.query(
        `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, attempt, downstream_key, response_status,
                                       response_body, created_at, completed_at, updated_at)
         VALUES ('acme', 'k-replica', 'fp', 'completed', 1, 'd', 200, '{"charge": "ch_replica"}',
                 '2026-11-10T09:05:00Z', '2026-11-10T09:05:02Z', '2026-11-10T09:05:02Z')`,
      );
    } finally {
      await client.query('RESET session_replication_role');
      client.release();
    }
    await seedEffect(db.pool, {
      chargeId: 'ch_replica',
      tenantId: 'acme',
      key: 'k-replica',
      createdAt: at('10T09:05:01'),
    });
    stripe.push(charge({ id: 'ch_replica', created: secs('10T09:05:01'), ...meta('k-replica') }));
    const [report] = await run();
    expect(report!.repaired.effect_without_claim).toBe(1); // k-ewc only
    expect(await query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = 'k-replica'`)).toEqual([{ n: 1 }]);
    expect(await query(`SELECT count(*)::int AS n FROM recon_findings WHERE idempotency_key = 'k-replica'`)).toEqual([
      { n: 0 },
    ]);
  });
});

describe('a directory entry whose claim is gone', () => {
  it('does not stop the repair of its key: the claim is re-created and the entry names it', async () => {
    // Outside the sweeper: the claim of k-ewc lived on a day whose partition was dropped by hand.
    await db.pool.query(
      `INSERT INTO idempotency_key_directory (tenant_id, key, created_at) VALUES ('acme', 'k-ewc', '2026-10-01T00:00:00Z')`,
    );
    const [report] = await run();
    expect(report!.repaired.effect_without_claim).toBe(1);
    expect(
      await query(
        `SELECT k.status, d.created_at = k.created_at AS filed FROM idempotency_keys k
           JOIN idempotency_key_directory d USING (tenant_id, key) WHERE k.key = 'k-ewc'`,
      ),
    ).toEqual([{ status: 'completed', filed: true }]);
  });
});

describe('runs, watermarks and locks', () => {
  it('a scheduled run advances the watermark to now − settle; a backfill never moves it', async () => {
    await db.pool.query(`DELETE FROM idempotency_keys WHERE key = 'k-live'`); // see the next test
    const [scheduled] = await run({ mode: 'run', window: undefined });
    expect(scheduled?.window).toEqual({ from: '2026-11-09T12:00:00.000Z', to: '2026-11-10T11:50:00.000Z' });
    const watermark = async () =>
      (await query<{ watermark: Date }>('SELECT watermark FROM recon_watermarks'))[0]?.watermark;
    expect(await watermark()).toEqual(new Date('2026-11-10T11:50:00Z'));
    await run({ mode: 'backfill', window: { from: at('01T00:00:00'), to: at('02T00:00:00') } });
    expect(await watermark()).toEqual(new Date('2026-11-10T11:50:00Z'));
    const [next] = await run({ mode: 'run', window: undefined }, () => new Date(NOW.getTime() + 60 * MIN));
    expect(next?.window).toEqual({ from: '2026-11-10T11:35:00.000Z', to: '2026-11-10T12:50:00.000Z' });
  });

  it('a key in a live lease inside the settled window holds the watermark at its slice until the lease ends', async () => {
    // k-live (10:50, lease until NOW + 1 min) is settled by time but still leased: a
    // claim library with a longer lease than the sweeper's, or a clock behind.
    const watermark = async () =>
      (await query<{ watermark: Date }>('SELECT watermark FROM recon_watermarks'))[0]?.watermark;
    const live = `SELECT status FROM idempotency_keys WHERE key = 'k-live'`;
    const [first] = await run({ mode: 'run', window: undefined });
    expect(first?.window?.to).toBe('2026-11-10T11:50:00.000Z');
    expect(first?.deferred_keys).toBe(1);
    expect(await watermark()).toEqual(new Date('2026-11-10T10:00:00Z')); // the start of k-live's slice
    expect(await query(live)).toEqual([{ status: 'in_flight' }]);
    expect(await query(`SELECT count(*)::int AS n FROM recon_findings WHERE idempotency_key = 'k-live'`)).toEqual([
      { n: 0 },
    ]);

    // The lease has ended and nobody finished the attempt: the next run judges it.
    const later = () => new Date(NOW.getTime() + 2 * MIN);
    const [second] = await run({ mode: 'run', window: undefined }, later);
    expect(second?.window).toEqual({ from: '2026-11-10T09:45:00.000Z', to: '2026-11-10T11:52:00.000Z' });
    expect(second?.deferred_keys).toBe(0);
    expect(await query(live)).toEqual([{ status: 'released' }]);
    expect(await query(`SELECT category FROM recon_findings WHERE idempotency_key = 'k-live'`)).toEqual([
      { category: 'stale_claim' },
    ]);
    expect(await watermark()).toEqual(new Date('2026-11-10T11:52:00Z'));
  });

  it('a backfill counts keys held by a live writer in deferred_keys and checkpoints before them', async () => {
    const [report] = await run(); // 09T08:00 → 10T11:00; k-live is in the last slice, 10:00–11:00
    expect(report).toMatchObject({ status: 'succeeded', deferred_keys: 1 });
    expect(await query(`SELECT status, checkpoint FROM recon_runs`)).toEqual([
      { status: 'succeeded', checkpoint: new Date('2026-11-10T10:00:00Z') },
    ]);
    expect(await query(`SELECT count(*)::int AS n FROM recon_watermarks`)).toEqual([{ n: 0 }]);
  });

  it('a second sweep while the lock is held stops at once with exit code 75', async () => {
    const held = await lockAccounts(db.pool, ['platform']);
    try {
      const error = await run().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SweepLockedError);
      expect((error as SweepLockedError).exitCode).toBe(75);
      expect(await query('SELECT count(*)::int AS n FROM recon_runs')).toEqual([{ n: 0 }]);
    } finally {
      await held.release();
    }
  });

  it('Stripe failing mid-run rolls the slice back, keeps earlier slices, and marks the run failed', async () => {
    let slices = 0;
    const failing = async function* (account: string, window: { from: Date; to: Date }) {
      slices += 1;
      if (slices === 3) throw new Error('Stripe is down');
      yield* memoryChargeSource(() => stripe)(account, window);
    };
    const error = await sweepWith(
      { listCharges: failing },
      { mode: 'run', window: undefined, firstRunLookbackMs: 4 * 60 * MIN },
    ).catch((e: unknown) => e);
    expect((error as Error).message).toBe('Stripe is down');
    const [runRow] = await query<{ status: string; checkpoint: Date; error: string }>(
      'SELECT status, checkpoint, error FROM recon_runs',
    );
    expect(runRow).toMatchObject({
      status: 'failed',
      error: 'Stripe is down',
      checkpoint: new Date('2026-11-10T10:00:00Z'),
    });
    expect((await query<{ watermark: Date }>('SELECT watermark FROM recon_watermarks'))[0]?.watermark).toEqual(
      new Date('2026-11-10T10:00:00Z'),
    );
  });

  it('one account failing does not hide the others: every report comes back with the error', async () => {
    const source = async function* (account: string, window: { from: Date; to: Date }) {
      if (account === 'acct_1Broken') throw new Error('The provided key does not have access to account acct_1Broken');
      yield* memoryChargeSource(() => stripe)(account, window);
    };
    const error = await sweepWith({ listCharges: source }, { accounts: ['acct_1Broken', 'platform'] }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SweepFailedError);
    const reports = (error as SweepFailedError).reports;
    expect(reports.map((r) => [r.account, r.status])).toEqual([
      ['acct_1Broken', 'failed'],
      ['platform', 'succeeded'],
    ]);
    expect(reports[0]?.error).toMatch(/does not have access/);
    expect(reports[0]?.run_id).toMatch(/^run_/);
    expect(reports[1]?.repaired.claim_without_effect).toBe(2);
  });

  it('the database connection dying mid-slice fails the run, rolls the slice back and keeps the watermark', async () => {
    const killer = await db.pool.connect();
    try {
      const error = await sweepWith(
        {
          faultPoint: async (name) => {
            if (name !== 'slice:2:judged') return;
            // The slice's own connection is the one idle inside a transaction right now.
            await killIdleInTransaction(killer);
          },
        },
        { mode: 'run', window: undefined, firstRunLookbackMs: 4 * 60 * MIN },
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      const [runRow] = await query<{ status: string; checkpoint: Date }>('SELECT status, checkpoint FROM recon_runs');
      expect(runRow).toEqual({ status: 'failed', checkpoint: new Date('2026-11-10T10:00:00Z') });
      expect((await query<{ watermark: Date }>('SELECT watermark FROM recon_watermarks'))[0]?.watermark).toEqual(
        new Date('2026-11-10T10:00:00Z'),
      );
      // Slice 2 (10:00–11:00) rolled back: nothing it judged was recorded.
      expect(
        await query(`SELECT count(*)::int AS n FROM recon_findings WHERE subject IN ('ch_amount', 'ch_drift')`),
      ).toEqual([{ n: 0 }]);
      const next = await run({ mode: 'run', window: undefined });
      expect(next[0]?.findings.amount_mismatch).toBe(1); // the next run does that slice again
    } finally {
      killer.release();
    }
  });

  it('a run whose lock connection dies stops before committing another slice', async () => {
    const killer = await db.pool.connect();
    try {
      const error = await sweepWith(
        {
          faultPoint: async (name) => {
            if (name !== 'slice:1:repaired') return;
            await killer.query(
              // The run's lock session: holds an advisory lock of our class and is idle (the slice is not).
              // With a timeout, pg_terminate_backend waits until the backend has exited, so its
              // lock is gone from pg_locks before the slice asks (PostgreSQL 14+).
              `SELECT pg_terminate_backend(l.pid, 10000) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.classid = $1 AND l.granted AND a.state = 'idle'
                  AND a.datname = current_database()`, // other test files run beside this one
              [0x53574550],
            );
          },
        },
        { mode: 'run', window: undefined, firstRunLookbackMs: 4 * 60 * MIN },
      ).catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/lost the database connection that held the sweep lock/);
      // Slice 0 committed; slice 1, in progress when the lock went, rolled back.
      expect((await query<{ watermark: Date }>('SELECT watermark FROM recon_watermarks'))[0]?.watermark).toEqual(
        new Date('2026-11-10T09:00:00Z'),
      );
    } finally {
      killer.release();
    }
  });

  it('an unfinished backfill resumes from its last committed slice', async () => {
    let slices = 0;
    const failOnce = async function* (account: string, window: { from: Date; to: Date }) {
      slices += 1;
      if (slices === 27) throw new Error('connection reset');
      yield* memoryChargeSource(() => stripe)(account, window);
    };
    await sweepWith({ listCharges: failOnce }, { resume: true }).catch(() => undefined);
    const [failed] = await query<{ checkpoint: Date }>(`SELECT checkpoint FROM recon_runs WHERE status = 'failed'`);
    expect(failed?.checkpoint).toEqual(at('10T10:00:00'));
    const [resumed] = await run({ resume: true });
    expect(resumed?.resumed_from).toBeDefined();
    expect(await query(`SELECT count(*)::int AS n FROM recon_findings WHERE category = 'duplicate_charge'`)).toEqual([
      { n: 1 },
    ]);
  });
});

describe('a dense slice judged in parts (batchCharges)', () => {
  const findings = () =>
    query('SELECT category, subject, state, charge_id FROM recon_findings ORDER BY category, subject');

  it('names its parts, checkpoints after each, stops between two, and resumes to what a whole run finds', async () => {
    const [whole] = await run({ resume: true });
    const expected = await findings();
    await emptySweepTables(db.pool);
    await buildScenario();

    // The last slice (10:00–11:00) holds six charges: parts of two, cut at 10:20:01 and 10:40:01.
    const controller = new AbortController();
    const points: string[] = [];
    const [stopped] = await sweepWith(
      {
        faultPoint: (name) => {
          points.push(name);
          if (name === 'slice:26.0:committed') controller.abort(); // SIGTERM after the first part
        },
      },
      { batchCharges: 2, resume: true, signal: controller.signal },
    );
    expect(stopped?.status).toBe('interrupted');
    expect(points.filter((p) => p.startsWith('slice:26'))).toEqual([
      'slice:26:listed',
      'slice:26.0:ingested',
      'slice:26.0:verified', // the orphan's charge is read again from Stripe before its critical finding
      'slice:26.0:judged',
      'slice:26.0:repaired',
      'slice:26.0:before-commit',
      'slice:26.0:committed',
    ]);
    expect(points).toContain('slice:0:committed'); // a slice within the bound is one batch, named as before
    expect(points).toContain('slice:25.1:committed'); // 09:00–10:00 holds four: two parts
    const [runRow] = await query<{ status: string; checkpoint: Date }>('SELECT status, checkpoint FROM recon_runs');
    expect(runRow).toEqual({ status: 'interrupted', checkpoint: at('10T10:20:01') });

    const [resumed] = await run({ batchCharges: 2, resume: true });
    expect(resumed?.status).toBe('succeeded');
    expect(resumed?.window?.from).toBe(at('09T08:00:00').toISOString());
    expect(await findings()).toEqual(expected);
    expect(stopped!.charges_scanned + resumed!.charges_scanned).toBe(whole!.charges_scanned);
  });

  it('keeps `expire` out of the mirror between its parts, and lets it in once the slice is done', async () => {
    const expire = await db.pool.connect();
    // What `expire` takes before it detaches a mirror day, waiting 100 ms at most.
    const tryExpire = async () => {
      await expire.query(`SET lock_timeout = '100ms'`);
      return expire.query('SELECT pg_advisory_lock($1, $2)', [LOCK_CLASS, LockObject.partitions]).then(
        async () => {
          await expire.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_CLASS, LockObject.partitions]);
          return 'locked';
        },
        (error: { code?: string }) => error.code,
      );
    };
    try {
      const seen: Record<string, string | undefined> = {};
      const [report] = await sweepWith(
        {
          faultPoint: async (name) => {
            // Between the two parts of 09:00–10:00, and after that slice.
            if (name === 'slice:25.0:committed' || name === 'slice:25.1:committed' || name === 'slice:26:listed')
              seen[name] = await tryExpire();
          },
        },
        { batchCharges: 2 },
      );
      expect(report?.status).toBe('succeeded');
      expect(seen).toEqual({
        'slice:25.0:committed': '55P03', // lock_not_available
        'slice:25.1:committed': '55P03',
        'slice:26:listed': 'locked',
      });
    } finally {
      expire.release();
    }
  });

  it('waits for an `expire` detaching a day at most SWEEPER_DB_LOCK_TIMEOUT, and says so', async () => {
    const impatient = createPool(db.url, { max: 4, timeouts: { lockTimeoutMs: 200 } });
    const expire = await db.pool.connect();
    try {
      const error = await sweepWith(
        {
          pool: impatient,
          faultPoint: async (name) => {
            // `expire` takes the mirror's partitions just as the dense slice 09:00–10:00 starts.
            if (name === 'slice:25:listed')
              await expire.query('SELECT pg_advisory_lock($1, $2)', [LOCK_CLASS, LockObject.partitions]);
          },
        },
        { batchCharges: 2 },
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SweepFailedError);
      expect((error as SweepFailedError).reports[0]?.error).toMatch(/SWEEPER_DB_LOCK_TIMEOUT/);
      const [runRow] = await query<{ status: string; checkpoint: Date }>('SELECT status, checkpoint FROM recon_runs');
      expect(runRow).toEqual({ status: 'failed', checkpoint: at('10T09:00:00') });
    } finally {
      await expire.query('SELECT pg_advisory_unlock_all()');
      expire.release();
      await impatient.end();
    }
  });
});

describe('a dense slice judged in parts, with a charge Stripe now returns malformed', () => {
  it('keeps its finding open in every part, though a later part judges its older read from the mirror', async () => {
    await run({ batchCharges: 2 }); // ch_drift (10:30:01) lands in the mirror, well read
    const listing = async function* (account: string, window: { from: Date; to: Date }) {
      yield* memoryChargeSource(() => stripe.filter((c) => c.id !== 'ch_drift'))(account, window);
      const created = secs('10T10:30:01');
      if (created >= window.from.getTime() / 1000 && created < window.to.getTime() / 1000)
        yield { charges: [], malformed: [{ id: 'ch_drift', account: null, problem: 'amount is missing', created }] };
    };
    const [report] = await sweepWith({ listCharges: listing }, { batchCharges: 2 });
    expect(report!.malformed_charges).toBe(1);
    expect(
      await query(`SELECT state FROM recon_findings WHERE subject = 'ch_drift' AND details ? 'malformed'`),
    ).toEqual([{ state: 'open' }]);
  });
});

describe('stopping', () => {
  it("a stop while Stripe's word is read: the report counts only what committed, as the run row does", async () => {
    // Slice 26 (10:00–11:00) needs Stripe's own word before its critical findings; the stop
    // comes while it is read, so that slice's judgement rolls back (its ingest stands).
    const controller = new AbortController();
    let stopNow = false;
    const stopping = async <T>(read: () => Promise<T>): Promise<T> => {
      if (!stopNow) return read();
      controller.abort(new Error('SIGTERM received'));
      throw controller.signal.reason;
    };
    const [report] = await sweepWith(
      {
        evidence: {
          ...evidence,
          chargesById: (...args) => stopping(() => evidence.chargesById(...args)),
          chargesNaming: (...args) => stopping(() => evidence.chargesNaming(...args)),
        },
        faultPoint: (name) => {
          if (name === 'slice:26:ingested') stopNow = true;
        },
      },
      { signal: controller.signal },
    );
    expect(report?.status).toBe('interrupted');
    const [row] = await query<{ charges_scanned: string; findings: Record<string, number>; checkpoint: Date }>(
      'SELECT charges_scanned, findings, checkpoint FROM recon_runs',
    );
    expect(row?.checkpoint).toEqual(at('10T10:00:00'));
    expect(report?.charges_scanned).toBe(Number(row?.charges_scanned));
    expect(report?.findings).toEqual(row?.findings);
    // Every charge of the committed slices is in exactly one of the counts, and none of slice 26's.
    const committed = stripe.filter((c) => c.created < secs('10T10:00:00')).length;
    expect(report?.charges_scanned).toBe(committed);
  });

  it('an abort mid-run finishes the slice in progress, records the run interrupted and frees the lock', async () => {
    const controller = new AbortController();
    const [report] = await sweepWith(
      {
        faultPoint: (name) => {
          if (name === 'slice:1:repaired') controller.abort(); // SIGTERM arrives during slice 1
        },
      },
      { mode: 'run', window: undefined, firstRunLookbackMs: 4 * 60 * MIN, signal: controller.signal },
    );
    expect(report?.status).toBe('interrupted');
    const [runRow] = await query<{ status: string; checkpoint: Date }>('SELECT status, checkpoint FROM recon_runs');
    expect(runRow).toEqual({ status: 'interrupted', checkpoint: new Date('2026-11-10T10:00:00Z') });
    const lock = await lockAccounts(db.pool, ['platform']);
    await lock.release();
    const [next] = await run({ mode: 'run', window: undefined });
    expect(next?.window?.from).toBe('2026-11-10T09:45:00.000Z'); // watermark 10:00 − 15m overlap
  });
});
