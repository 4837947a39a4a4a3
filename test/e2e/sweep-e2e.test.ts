import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/alerts/index.js';
import { createClaimClient, type ClaimClientDeps } from '../../src/claims/index.js';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { cloneDatabase, partitionedDatabase, type TestDatabase } from '../support/db.js';
import { cliEnv, runCli, startCli } from '../support/cli.js';
import { tableChecksums } from '../support/checksums.js';
import { normalizedTables } from '../support/normalized-tables.js';
import { buildScenario, type Scenario } from '../support/traffic.js';
import { startValveProxy } from '../support/valve-proxy.js';
import { deferred } from '../support/promises.js';
import { atDepth } from '../support/depth.js';

const HOUR = 3_600_000;
// Three hours back, on an hour boundary: the scenario happens in the first 40 minutes,
// and the backfill [base, base + 150m) ends at least 30 minutes before now (settled).
const base = new Date(Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR);
const to = new Date(base.getTime() + 150 * 60_000);

let double: StripeDouble;
let scenarioDb: TestDatabase;
let scenario: Scenario;
const clones: TestDatabase[] = [];

function envFor(db: TestDatabase, extra: Record<string, string> = {}): Record<string, string> {
  return cliEnv(
    { db, stripe: double.url, key: 'sk_test_e2e' },
    { SWEEPER_SLICE: '30m', SWEEPER_LOG_LEVEL: 'info', ...extra },
  );
}
const backfill = ['backfill', '--from', base.toISOString(), '--to', to.toISOString(), '--json'];

/** The claim library as payment code would set it up, against the double. */
function paymentCode(db: TestDatabase, options: Partial<ClaimClientDeps> = {}) {
  return createClaimClient({
    pool: db.pool,
    stripe: createStripeClient({ apiKey: 'sk_test_e2e', apiBase: double.url }),
    leaseMs: 120_000,
    maxAmount: 1_000_000,
    metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
    ...options,
  });
}

async function clone(): Promise<TestDatabase> {
  const db = await cloneDatabase(scenarioDb.name);
  clones.push(db);
  return db;
}

beforeAll(async () => {
  double = await startStripeDouble();
  scenarioDb = await partitionedDatabase(new Date(Date.now() - 2 * 86_400_000));
  scenario = await buildScenario(scenarioDb.pool, double, new Date(base.getTime() + 60_000));
  await scenarioDb.pool.end(); // a template must have no connections
}, 120_000);

afterAll(async () => {
  for (const db of clones) await db.drop();
  await scenarioDb.drop();
  await double.close();
});

describe('sweeper on real traffic against the Stripe double', () => {
  it('finds every category, repairs what is safe, and exits 3 while findings stay open', async () => {
    const db = await clone();
    const result = await runCli(backfill, envFor(db));
    expect(result.code, result.stderr).toBe(3);
    const report = JSON.parse(result.stdout);
    expect(report.findings).toEqual(expect.objectContaining(scenario.expected.findings));
    expect(report.repaired).toEqual(expect.objectContaining(scenario.expected.repaired));
    expect(report.unreconciled).toBe(scenario.expected.unreconciled);

    const claim = async (key: string) =>
      (
        await db.pool.query(
          `SELECT status, response_status, request_fingerprint FROM idempotency_keys WHERE key = $1`,
          [key],
        )
      ).rows[0];
    const payment = async (where: string, arg: string) =>
      (
        await db.pool.query(
          `SELECT charge_id, status, amount, amount_refunded, disputed FROM payments WHERE ${where} = $1`,
          [arg],
        )
      ).rows;
    expect(await claim('crash-after-claim')).toMatchObject({ status: 'released' });
    expect(await claim('crash-after-stripe')).toMatchObject({ status: 'completed', response_status: 200 });
    expect(await payment('idempotency_key', 'crash-after-stripe')).toMatchObject([
      { status: 'succeeded', amount: 1200 },
    ]);
    expect(await claim('crash-after-decline')).toMatchObject({ status: 'completed', response_status: 402 });
    expect(await payment('idempotency_key', 'crash-after-decline')).toMatchObject([{ status: 'failed' }]);
    expect(await claim('dashboard-1')).toMatchObject({ status: 'completed', request_fingerprint: 'sweeper:recreated' });
    expect(await payment('idempotency_key', 'dashboard-1')).toMatchObject([{ amount: 4200 }]);
    expect(await claim('ok-3')).toMatchObject({ status: 'completed', request_fingerprint: 'sweeper:recreated' });
    expect(await payment('charge_id', scenario.charges.refunded!)).toMatchObject([{ amount_refunded: 400 }]);
    expect(await payment('charge_id', scenario.charges.disputed!)).toMatchObject([{ disputed: true }]);
    expect(await payment('charge_id', scenario.charges.second!)).toEqual([]); // a duplicate is never recorded as a payment
    const open = await db.pool.query(
      `SELECT category, subject FROM recon_findings WHERE state = 'open' ORDER BY category`,
    );
    expect(open.rows.map((r) => r.category)).toEqual([
      'amount_mismatch',
      'duplicate_charge',
      'duplicate_effect',
      'effect_without_charge',
      'lost_effect',
      'refund_status_drift',
      'unattributed_charge',
      'unstable_keys',
    ]);
    // The application's refund that the bank returned: the row says so now, and a person is told.
    expect(
      (await db.pool.query(`SELECT status FROM payment_refunds WHERE idempotency_key = 'refund-ok-5'`)).rows,
    ).toEqual([{ status: 'failed' }]);

    // The repaired claims now replay to the caller's retry, with no new Stripe call.
    const before = double.counters.get('POST /v1/payment_intents');
    const retry = await createClaimClient({
      pool: db.pool,
      stripe: createStripeClient({ apiKey: 'sk_test_e2e', apiBase: double.url }),
      leaseMs: 120_000,
      maxAmount: 1_000_000,
      metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
    }).chargeOnce({
      tenantId: 'acme',
      key: 'crash-after-stripe',
      request: { amount: 1200, currency: 'usd', paymentMethod: 'pm_card_visa' },
    });
    expect(retry).toMatchObject({ outcome: 'replayed', status: 200 });
    expect(double.counters.get('POST /v1/payment_intents')).toBe(before);

    // Running it again changes nothing: no repair, the same findings, last_seen_run moved.
    const tables = await normalizedTables(db.pool);
    const again = await runCli([...backfill, '--no-resume'], envFor(db));
    expect(again.code).toBe(3);
    const second = JSON.parse(again.stdout);
    expect(Object.values(second.repaired).every((n) => n === 0)).toBe(true);
    expect(await normalizedTables(db.pool)).toEqual(tables);
    // A refund that failed after it was recorded stays open for a person, but the row agrees
    // with Stripe now: no run sees the drift again (docs/judgement.md "Refunds the application makes").
    const seen = await db.pool.query(
      `SELECT DISTINCT last_seen_run FROM recon_findings WHERE state = 'open' AND category <> 'refund_status_drift'`,
    );
    expect(seen.rows).toEqual([{ last_seen_run: second.run_id }]);

    // A person closes one; status and the audit show it; it cannot be closed twice.
    const {
      rows: [lost],
    } = await db.pool.query(`SELECT id FROM recon_findings WHERE category = 'lost_effect'`);
    const resolved = await runCli(
      ['resolve', String(lost.id), '--note', 'order cancelled, customer told', '--actor', 'alice'],
      envFor(db),
    );
    expect([resolved.code, resolved.stdout.trim()]).toEqual([0, `finding ${lost.id}: open → resolved`]);
    const audit = await db.pool.query(
      `SELECT action, actor, after ->> 'note' AS note FROM recon_repairs WHERE finding_id = $1`,
      [lost.id],
    );
    expect(audit.rows).toEqual([{ action: 'resolved', actor: 'alice', note: 'order cancelled, customer told' }]);
    const twice = await runCli(['resolve', String(lost.id), '--note', 'again'], envFor(db));
    expect([twice.code, twice.stderr.trim()]).toEqual([
      64,
      `sweeper: finding ${lost.id} is already resolved (by alice): only open findings are resolved`,
    ]);
    const {
      rows: [repaired],
    } = await db.pool.query(`SELECT id FROM recon_findings WHERE state = 'repaired' LIMIT 1`);
    expect((await runCli(['resolve', String(repaired.id), '--note', 'x'], envFor(db))).code).toBe(64);
    const status = JSON.parse((await runCli(['status', '--json'], envFor(db))).stdout);
    expect(status.unreconciled).toBe(scenario.expected.unreconciled - 1);
    expect(status.open_findings.platform.lost_effect).toBeUndefined();
  });

  it('--dry-run changes no table, byte for byte, and reports what it would repair', async () => {
    const db = await clone();
    const before = await tableChecksums(db.pool);
    const result = await runCli([...backfill, '--dry-run'], envFor(db));
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({ dry_run: true, repaired: scenario.expected.repaired });
    expect(await tableChecksums(db.pool)).toEqual(before);
  });

  it('a second run started during the first exits 75 at once; the first is unaffected', async () => {
    const db = await clone();
    const proxy = await startValveProxy(double.url, () => true); // holds the first run's Stripe reads
    try {
      const first = startCli(backfill, envFor(db, { STRIPE_API_BASE: proxy.url }));
      await proxy.held; // the first run holds its lock and waits on Stripe
      const second = await runCli([...backfill, '--wait', '0'], envFor(db)); // a backfill waits by default
      expect(second.code).toBe(75);
      expect(second.stderr).toMatch(/another sweep is running for account platform/);
      proxy.release();
      const done = await first.done;
      expect(done.code).toBe(3);
      expect(JSON.parse(done.stdout).repaired).toEqual(expect.objectContaining(scenario.expected.repaired));
    } finally {
      proxy.release();
      await proxy.close();
    }
  });

  it('live payment traffic during a sweep yields no finding and no repair for claims in a live lease', async () => {
    const db = await clone();
    const live = paymentCode(db);
    const sweeping = startCli(['run', '--json'], envFor(db, { SWEEPER_SETTLE: '3m' }));
    const sweep = { finished: false };
    void sweeping.done.then(() => (sweep.finished = true));
    const outcomes: string[] = [];
    for (let i = 0; !sweep.finished || i < 10; i += 1) {
      const r = await live.chargeOnce({
        tenantId: 'live',
        key: `live-${i}`,
        request: { amount: 100 + i, currency: 'usd', paymentMethod: 'pm_card_visa' },
      });
      outcomes.push(r.outcome);
    }
    const result = await sweeping.done;
    expect(result.code).toBe(3);
    expect(outcomes.every((o) => o === 'charged')).toBe(true);
    const touched = await db.pool.query(`SELECT count(*)::int AS n FROM recon_findings WHERE tenant_id = 'live'`);
    expect(touched.rows[0].n).toBe(0);
    const claims = await db.pool.query(`SELECT DISTINCT status FROM idempotency_keys WHERE tenant_id = 'live'`);
    expect(claims.rows).toEqual([{ status: 'completed' }]);
  });
});

describe('a claim library whose lease disagrees with the sweeper', () => {
  it('keys it holds inside the settled window are neither judged nor repaired, and are judged once it lets go', async () => {
    const db = await clone();
    // The app servers' library leases for an hour and its clock is 10 minutes behind:
    // its in-flight claims (and the charge one of them made) sit inside the window
    // [.., now − 3m) while their leases are live.
    const behind = new Date(Date.now() - 10 * 60_000);
    double.clock.set(behind);
    const paused = (point: 'afterClaim' | 'afterStripeCall') => {
      const reached = deferred();
      const resume = deferred();
      const client = paymentCode(db, {
        leaseMs: HOUR,
        clock: () => behind,
        hooks: { [point]: async () => (reached.resolve(), resume.promise) },
      });
      const attempt = client.chargeOnce({
        tenantId: 'skewed',
        key: point,
        request: { amount: 777, currency: 'usd', paymentMethod: 'pm_card_visa' },
      });
      return { reached: reached.promise, resume: resume.resolve, attempt };
    };
    const beforeStripe = paused('afterClaim');
    const afterStripe = paused('afterStripeCall');
    try {
      await Promise.all([beforeStripe.reached, afterStripe.reached]);
      const claims = async () =>
        (await db.pool.query(`SELECT key, status FROM idempotency_keys WHERE tenant_id = 'skewed' ORDER BY key`)).rows;
      const touched = async () =>
        (
          await db.pool.query(
            `SELECT (SELECT count(*) FROM recon_findings WHERE tenant_id = 'skewed')::int AS findings,
                    (SELECT count(*) FROM payments WHERE tenant_id = 'skewed')::int AS payments`,
          )
        ).rows[0];
      const watermark = async () =>
        (await db.pool.query(`SELECT watermark FROM recon_watermarks`)).rows[0]?.watermark as Date;

      const first = await runCli(['run', '--json'], envFor(db, { SWEEPER_SETTLE: '3m' }));
      expect(first.code, first.stderr).toBe(3);
      expect(first.stderr).toMatch(/keys held by a live writer inside the settled window were not judged/);
      expect(JSON.parse(first.stdout).deferred_keys).toBe(2);
      expect(await claims()).toEqual([
        { key: 'afterClaim', status: 'in_flight' },
        { key: 'afterStripeCall', status: 'in_flight' },
      ]);
      expect(await touched()).toEqual({ findings: 0, payments: 0 }); // the charge made at Stripe is not "repaired" under the writer
      expect((await watermark()).getTime()).toBeLessThanOrEqual(behind.getTime());

      beforeStripe.resume();
      afterStripe.resume();
      expect((await beforeStripe.attempt).outcome).toBe('charged');
      expect((await afterStripe.attempt).outcome).toBe('charged');
      expect(await touched()).toEqual({ findings: 0, payments: 2 });

      // Settled now, the next run judges them. To see that it does, one payment row is
      // lost first: the sweep must find that key's charge without its effect and repair it.
      await db.pool.query(`DELETE FROM payments WHERE tenant_id = 'skewed' AND idempotency_key = 'afterStripeCall'`);
      const second = await runCli(['run', '--json'], envFor(db, { SWEEPER_SETTLE: '3m' }));
      expect(second.code, second.stderr).toBe(3); // the scenario's findings, still open
      expect(second.stderr).not.toMatch(/held by a live writer/);
      expect(JSON.parse(second.stdout).deferred_keys).toBe(0);
      expect(await touched()).toEqual({ findings: 1, payments: 2 });
      expect(
        (await db.pool.query(`SELECT category, state FROM recon_findings WHERE tenant_id = 'skewed'`)).rows,
      ).toEqual([{ category: 'claim_without_effect', state: 'repaired' }]);
      expect((await watermark()).getTime()).toBeGreaterThan(Date.now() - 4 * 60_000);
    } finally {
      beforeStripe.resume();
      afterStripe.resume();
      await Promise.allSettled([beforeStripe.attempt, afterStripe.attempt]);
      double.clock.useRealTime();
    }
  });
});

describe('crash safety', () => {
  const phases = ['listed', 'ingested', 'judged', 'repaired', 'before-commit', 'committed'];
  // npm test: every phase once, over the slices in turn; test:deep: every phase of every slice.
  const points = atDepth({
    normal: phases.map((phase, i) => `slice:${i % 4}:${phase}`),
    deep: [0, 1, 2, 3].flatMap((slice) => phases.map((phase) => `slice:${slice}:${phase}`)),
  });

  it(`a backfill killed with SIGKILL at any of ${points.length} points, then rerun, ends in the same tables`, async () => {
    const reference = await clone();
    expect((await runCli(backfill, envFor(reference))).code).toBe(3);
    const expected = await normalizedTables(reference.pool);
    expect(expected.repairs).toHaveLength(8);

    const batches = [];
    for (let i = 0; i < points.length; i += 3) batches.push(points.slice(i, i + 3));
    for (const batch of batches) {
      await Promise.all(
        batch.map(async (point) => {
          const db = await clone();
          const killed = await runCli(backfill, envFor(db, { SWEEPER_TEST_CRASH_AT: point }));
          expect(killed.signal, `${point}: ${killed.stderr.slice(-500)}`).toBe('SIGKILL');
          const rerun = await runCli(backfill, envFor(db));
          expect(rerun.code, `${point} rerun: ${rerun.stderr.slice(-500)}`).toBe(3);
          expect(await normalizedTables(db.pool), point).toEqual(expected);
          await db.drop();
          clones.splice(clones.indexOf(db), 1);
        }),
      );
    }
  }, 600_000);
});

describe('operating it', () => {
  it('an alert that cannot be delivered exits 1 and keeps the results; a delivered one is signed', async () => {
    const received: Array<{ status: number; body: string; signature: string | undefined }> = [];
    let answer = 500;
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ status: answer, body, signature: req.headers['x-sweeper-signature'] as string | undefined });
        res.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as { port: number }).port;
    const secret = 'whsec_e2e_0123456789abcdef';
    const db = await clone();
    const env = envFor(db, { SWEEPER_WEBHOOK_URL: `http://127.0.0.1:${port}/hook`, SWEEPER_WEBHOOK_SECRET: secret });
    try {
      const failed = await runCli(backfill, env);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/alert not delivered/);
      expect(JSON.parse(failed.stdout).unreconciled).toBe(scenario.expected.unreconciled); // results printed
      const open = await db.pool.query(`SELECT count(*)::int AS n FROM recon_findings WHERE state = 'open'`);
      expect(open.rows[0].n).toBe(scenario.expected.unreconciled); // and kept

      answer = 200;
      const delivered = await runCli([...backfill, '--no-resume'], env);
      expect(delivered.code).toBe(3);
      const last = received.at(-1)!;
      expect(verifySignature(secret, last.signature, last.body)).toMatchObject({ valid: true });
      expect(JSON.parse(last.body)).toMatchObject({
        event: 'findings.open',
        account: 'platform',
        unreconciled: scenario.expected.unreconciled,
      });
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  it('SIGTERM mid-run: exits 1 within the grace period, records the run interrupted, frees the lock; the next run completes', async () => {
    const db = await clone();
    const proxy = await startValveProxy(double.url, () => true); // Stripe never answers the first run
    try {
      const running = startCli(backfill, envFor(db, { STRIPE_API_BASE: proxy.url, SWEEPER_SHUTDOWN_GRACE: '30s' }));
      await proxy.held;
      running.child.kill('SIGTERM');
      const stopped = await running.done;
      expect(stopped.code).toBe(1);
      expect(stopped.stderr).toMatch(/SIGTERM received; finishing the current slice/);
      expect(stopped.stderr).not.toMatch(/grace period over/); // it stopped by itself, not by the timer
      const runs = await db.pool.query(`SELECT status FROM recon_runs`);
      expect(runs.rows).toEqual([{ status: 'interrupted' }]);
      const next = await runCli(backfill, envFor(db));
      expect(next.code).toBe(3); // the lock was free and the backfill resumed to the end
      expect(JSON.parse(next.stdout).repaired).toEqual(expect.objectContaining(scenario.expected.repaired));
    } finally {
      proxy.release();
      await proxy.close();
    }
  });
});

// Last: it refunds a charge in the shared Stripe double, which the tests above rely on.
describe('refunding duplicates', () => {
  it('--refund-duplicates refunds the extra charge at Stripe once, and the duplicate is settled', async () => {
    const db = await clone();
    const result = await runCli([...backfill, '--refund-duplicates'], envFor(db));
    expect(result.code, result.stderr).toBe(3); // the other open findings remain
    expect(JSON.parse(result.stdout).repaired.duplicate_charge).toBe(1);
    const refunds = double.refunds(scenario.charges.second);
    expect(refunds).toHaveLength(1);
    expect(double.charge(scenario.charges.second!)?.refunded).toBe(true);
    const again = await runCli([...backfill, '--no-resume', '--refund-duplicates'], envFor(db));
    expect(JSON.parse(again.stdout).findings.duplicate_charge).toBe(0);
    expect(double.refunds(scenario.charges.second)).toHaveLength(1);
    const state = await db.pool.query(`SELECT state FROM recon_findings WHERE category = 'duplicate_charge'`);
    expect(state.rows).toEqual([{ state: 'repaired' }]);
  });
});
