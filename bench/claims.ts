/**
 * The claim library's speed (issue 12, "the claim library"): claims per second and
 * p50/p99 latency of
 *   - `chargeOnce` (src/claims) against the Stripe double with no latency: take the
 *     claim, create and confirm the PaymentIntent, store the payment row and complete
 *     the claim;
 *   - `sweeper_take_claim` alone (takeClaim, one statement), new keys;
 *   - the baseline: a plain `INSERT … ON CONFLICT (tenant_id, key) DO NOTHING` of the
 *     same columns into an unpartitioned table with the same unique key;
 * each with one caller and with BENCH_CLAIMS_CONCURRENCY (8) callers at once, on a
 * freshly migrated database (the default 7-day retention: 15 day partitions). The take
 * and the baseline run in ten alternating rounds (a noisy moment falls on both).
 * Run with `npm run bench -- claims`.
 */
import { createClaimClient } from '../src/claims/index.js';
import { takeClaim } from '../src/claims/claim-store.js';
import { downstreamKey, requestFingerprint } from '../src/claims/keys.js';
import { createPool } from '../src/db/pool.js';
import { startStripeDouble } from '../testkit/stripe-double/index.js';
import { createStripeClient } from '../src/providers/stripe/client.js';
import { startBenchServer } from './pg-server.js';
import { codeState, ensureBuilt, log, machine, resultHeader, round, runSweeper, scaled } from './e2e-support.js';
import { writeResult } from './support.js';

/** The take and its baseline alternate in this many rounds of OPS / ROUNDS calls each. */
const ROUNDS = 10;
/** Operations per measure: a multiple of ROUNDS whatever BENCH_SCALE says, so every measure reports what it ran. */
const OPS = Math.ceil(scaled(3_000, 500) / ROUNDS) * ROUNDS;
const WARMUP = 200;
const CONCURRENCY = Math.max(2, Number(process.env.BENCH_CLAIMS_CONCURRENCY ?? 8));
const LEASE_MS = 120_000;
let keyCounter = 0;

ensureBuilt();
const code = codeState();
const server = await startBenchServer(log);
const machineAtStart = machine(server);
const double = await startStripeDouble({ seed: 3 });
const database = await server.createDatabase('bench_claims');
const pool = createPool(database.url, { max: CONCURRENCY + 2 });
try {
  await runSweeper('claims-migrate', ['migrate'], { DATABASE_URL: database.url });
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'idempotency_keys'::regclass`,
  );
  const partitions = rows[0]?.n ?? 0;
  await pool.query(`CREATE TABLE bench_plain_claims (
    tenant_id text NOT NULL, key text NOT NULL, request_fingerprint text NOT NULL, status text NOT NULL,
    locked_until timestamptz, attempt int NOT NULL DEFAULT 1, downstream_key text NOT NULL, account_id text,
    amount bigint, currency text, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
    UNIQUE (tenant_id, key))`);

  const stripe = createStripeClient({ apiKey: 'sk_test_bench', apiBase: double.url });
  const client = createClaimClient({
    pool,
    stripe,
    leaseMs: LEASE_MS,
    maxAmount: 99_999_999,
    metadataKeys: { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' },
  });
  const request = { amount: 1999, currency: 'usd', paymentMethod: 'pm_card_visa' };
  const fingerprint = requestFingerprint(request);

  const subjects: Record<string, (tenant: string, key: string) => Promise<unknown>> = {
    baseline_insert_on_conflict: (tenant, key) =>
      pool.query(
        `INSERT INTO bench_plain_claims (tenant_id, key, request_fingerprint, status, locked_until, attempt, downstream_key, account_id, amount, currency, created_at, updated_at)
         VALUES ($1, $2, $3, 'in_flight', $4::timestamptz + interval '2 minutes', 1, $5, NULL, $6, $7, $4, $4)
         ON CONFLICT (tenant_id, key) DO NOTHING RETURNING attempt, status, created_at, locked_until`,
        [tenant, key, fingerprint, new Date(), downstreamKey(tenant, key), request.amount, request.currency],
      ),
    sweeper_take_claim: (tenant, key) =>
      takeClaim(pool, {
        tenantId: tenant,
        key,
        fingerprint,
        downstreamKey: downstreamKey(tenant, key),
        now: new Date(),
        leaseMs: LEASE_MS,
        accountId: null,
        amount: request.amount,
        currency: request.currency,
      }),
    charge_once: async (tenant, key) => {
      const result = await client.chargeOnce({ tenantId: tenant, key, request });
      if (result.status !== 200)
        throw new Error(`chargeOnce answered ${result.status}: ${JSON.stringify(result.body)}`);
    },
  };

  const results: Record<string, Record<string, unknown>> = {};
  for (const name of Object.keys(subjects)) results[name] = {};
  for (const callers of [1, CONCURRENCY]) {
    for (const [name, op] of Object.entries(subjects)) await runOps(`${name}-warmup-${callers}`, op, WARMUP, callers);
    // The take and its baseline in alternating rounds: a noisy moment on a shared machine
    // falls on both, not on whichever happened to run then.
    const paired = ['baseline_insert_on_conflict', 'sweeper_take_claim'];
    const runs = Object.fromEntries(paired.map((name) => [name, { latencies: [] as number[], seconds: 0 }]));
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const name of round % 2 === 0 ? paired : [...paired].reverse()) {
        const r = await runOps(`${name}-${callers}-${round}`, subjects[name]!, OPS / ROUNDS, callers);
        runs[name]!.latencies.push(...r.latencies);
        runs[name]!.seconds += r.seconds;
      }
    }
    const chargeOnce = await runOps(`charge_once-${callers}`, subjects.charge_once!, OPS, callers);
    runs.charge_once = { latencies: chargeOnce.latencies, seconds: chargeOnce.seconds };
    for (const [name, r] of Object.entries(runs)) {
      const m = summarize(r.latencies, r.seconds, callers);
      results[name]![`callers_${callers}`] = m;
      log(`${name}, ${callers} caller(s): ${m.per_second}/s, p50 ${m.p50_ms} ms, p99 ${m.p99_ms} ms`);
    }
  }
  const ratio = (name: string, callers: number, p: 'p50_ms' | 'p99_ms') => {
    const a = results[name]?.[`callers_${callers}`] as { [k: string]: number };
    const b = results.baseline_insert_on_conflict?.[`callers_${callers}`] as { [k: string]: number };
    return round((a[p] as number) / (b[p] as number), 2);
  };
  const ratios = Object.fromEntries(
    ['sweeper_take_claim', 'charge_once'].map((name) => [
      name,
      Object.fromEntries(
        [1, CONCURRENCY].flatMap((callers) => [
          [`p50_callers_${callers}`, ratio(name, callers, 'p50_ms')],
          [`p99_callers_${callers}`, ratio(name, callers, 'p99_ms')],
        ]),
      ),
    ]),
  );
  const result = {
    ...resultHeader('claims', code, machineAtStart),
    settings: {
      ops: OPS,
      warmup: WARMUP,
      rounds: ROUNDS,
      concurrency: CONCURRENCY,
      partitions,
      double_latency_ms: 0,
      lease_ms: LEASE_MS,
    },
    results,
    latency_over_baseline: ratios,
  };
  await writeResult('claims', result);
  process.stdout.write(
    `claim library, ${OPS.toLocaleString('en')} operations each, ${partitions} day partitions:\n` +
      Object.entries(results)
        .map(([name, byCallers]) =>
          Object.entries(byCallers)
            .map(([callers, m]) => {
              const x = m as { per_second: number; p50_ms: number; p99_ms: number };
              return `  ${name.padEnd(28)} ${callers.replace('callers_', '').padStart(2)} caller(s): ${String(x.per_second).padStart(6)}/s  p50 ${x.p50_ms} ms  p99 ${x.p99_ms} ms`;
            })
            .join('\n'),
        )
        .join('\n') +
      `\n  latency over the baseline: ${JSON.stringify(ratios)}\n`,
  );
} finally {
  await pool.end();
  await database.drop();
  await double.close();
  await server.stop();
}

/** `ops` calls of `op` on new keys from `callers` concurrent loops: each call's latency, and the wall time. */
async function runOps(
  label: string,
  op: (tenant: string, key: string) => Promise<unknown>,
  ops: number,
  callers: number,
): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = new Array<number>(ops);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (;;) {
        const i = next++;
        if (i >= ops) return;
        const n = keyCounter++;
        const started = performance.now();
        await op(`tenant_${n % 97}`, `${label}-${n}`);
        latencies[i] = performance.now() - started;
      }
    }),
  );
  return { latencies, seconds: (performance.now() - t0) / 1000 };
}

/** Throughput and latency percentiles of the calls measured. */
function summarize(latencies: number[], seconds: number, callers: number) {
  const ops = latencies.length;
  const sorted = Float64Array.from(latencies).sort();
  const at = (q: number) => round(sorted[Math.min(ops - 1, Math.floor(q * ops))] as number, 3);
  return {
    ops,
    callers,
    seconds: round(seconds, 2),
    per_second: Math.round(ops / seconds),
    p50_ms: at(0.5),
    p99_ms: at(0.99),
    mean_ms: round(latencies.reduce((a, b) => a + b, 0) / ops, 3),
  };
}
