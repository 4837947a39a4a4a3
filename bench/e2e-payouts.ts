/**
 * End to end, payouts (issue 27): `sweeper backfill --json` (the built CLI) over a history
 * whose one automatic payout holds 10,000 balance transactions (charges over two days, full
 * refunds of every tenth charge and Stripe fees over the next day, and the payout's own
 * transaction), with every charge's
 * claim and payment row and every refund's row written locally before the run. The Stripe
 * double enforces 25 requests a second per account and endpoint and answers in 300 ms (the
 * rate-limited benchmark's latency), then, on a fresh database, in 100 ms (the platform
 * benchmark's); PostgreSQL 15 runs on the same machine.
 *
 * - the payouts step's wall time, from its first request (`GET /v1/payouts`) to the end of
 *   the run, against the request bound: the step's requests at 25 a second (goal ≤ 1.2×),
 *   and against the floor (two round trips in sequence before the rest can go at once, and
 *   the last answer's latency);
 * - every charge and refund transaction linked, no finding, the payout's residual 0
 *   and its payment rows' fees recorded.
 *
 * Run just this one with `npm run bench -- e2e-payouts`; BENCH_SCALE scales the
 * transactions (0.1: 1,000).
 */
import pg from 'pg';
import { ensureDayPartitions, utcDay } from '../src/db/partitions.js';
import { startStripeDouble, type StripeDouble } from '../testkit/stripe-double/index.js';
import { startBenchServer } from './pg-server.js';
import {
  codeState,
  DAY_MS,
  ensureBuilt,
  HOUR_MS,
  log,
  machine,
  reportCounts,
  resultHeader,
  round,
  runSweeper,
  SCALE,
  summary,
  sweeperEnv,
  sweeperOverrides,
} from './e2e-support.js';
import { writeResult } from './support.js';

const TRANSACTIONS = Math.max(500, Math.round(10_000 * SCALE));
/** Every REFUND_EVERY-th charge is refunded in full. */
const REFUND_EVERY = 10;
/** The rate-limited benchmark's latency, and the platform benchmark's. */
const LATENCIES = [300, 100];
const LIMIT_PER_SECOND = 25;
const TENANT = 'tenant_payouts';
/** One tenant's random amounts repeat: no suspected_duplicate judgement (bench/e2e-references.ts measures it). */
const ENV = { SWEEPER_SUSPECT_WINDOW: '0' };
const TXN_ENDPOINTS = ['GET /v1/payouts', 'GET /v1/balance_transactions'] as const;

// charges + refunds (every tenth charge) + about ten fees + the payout's own = TRANSACTIONS.
const CHARGES = Math.floor(((TRANSACTIONS - 11) * REFUND_EVERY) / (REFUND_EVERY + 1));
const REFUNDS = Math.ceil(CHARGES / REFUND_EVERY);
const FEES = TRANSACTIONS - 1 - CHARGES - REFUNDS;

ensureBuilt();
const code = codeState();
const server = await startBenchServer(log);
const machineAtStart = machine(server);
const double = await startStripeDouble({ seed: 27 });
try {
  const now = Date.now();
  const from = new Date(now - 5 * DAY_MS);
  const to = new Date(now - 3 * DAY_MS);
  const history = seedHistory(double, { from, to, now });
  log(
    `payout ${history.payoutId}: ${history.members} balance transactions (${CHARGES} charges, ${REFUNDS} refunds, ${FEES} fees)`,
  );
  const window = { from: new Date(from.getTime() - HOUR_MS), to: new Date(now - 30 * 60_000) };
  const runs = [];
  for (const latency of LATENCIES) runs.push(await timedRun(double, history, { from, now, window, latency }));
  const ok = runs.every((r) => r.checks_ok) && runs.every((r) => r.payouts_step.wall_over_bound <= 1.2);
  const result = {
    ...resultHeader('e2e-payouts', code, machineAtStart),
    settings: {
      transactions: TRANSACTIONS,
      charges: CHARGES,
      refunds: REFUNDS,
      fees: FEES,
      charges_window: { from: from.toISOString(), to: to.toISOString() },
      backfill_window: { from: window.from.toISOString(), to: window.to.toISOString() },
      latencies_ms: LATENCIES,
      server_limit_per_account_endpoint: LIMIT_PER_SECOND,
      sweeper_env: ENV,
      sweeper_overrides: sweeperOverrides(),
    },
    runs,
    ok,
  };
  await writeResult('e2e-payouts', result);
  const lines = runs.map((r) => {
    const step = r.payouts_step;
    return (
      `  ${r.latency_ms} ms: payouts step ${step.wall_s} s for ${step.requests} requests (bound ${step.bound_s} s: ${step.wall_over_bound}x; ` +
      `floor ${step.floor_s} s: ${step.wall_over_floor}x); listing alone ${step.listing_s} s (${step.listing_requests_per_second}/s, ` +
      `${step.mean_in_flight} in flight, the double ${step.double_ms_per_answer.mean} ms an answer); 429s ${step.rate_limited_429}\n` +
      `    transactions ${String(r.payouts_report.transactions)}, linked ${String(r.payouts_report.linked)}, findings ${JSON.stringify(r.findings)}, ` +
      `residual ${String(r.database.residual)}, fees recorded on ${r.database.fees_recorded} payment rows; checks ${r.checks_ok ? 'ok' : 'FAILED'}`
    );
  });
  process.stdout.write(
    `payouts: ${TRANSACTIONS} balance transactions in one payout, ${LIMIT_PER_SECOND}/s per endpoint\n${lines.join('\n')}\n`,
  );
  if (!runs.every((r) => r.checks_ok)) process.exitCode = 1;
} finally {
  await double.close();
  await server.stop();
}

/** One backfill on a fresh database, the double answering in `latency` ms. */
async function timedRun(
  double: StripeDouble,
  history: History,
  args: { from: Date; now: number; window: { from: Date; to: Date }; latency: number },
) {
  const { from, now, window, latency } = args;
  const db = await server.createDatabase(`bench_payouts_${latency}`);
  try {
    await runSweeper('payouts-migrate', ['migrate'], sweeperEnv(db.url, double));
    await seedRows(db.url, history, from, now);
    double.setLatency(latency);
    double.setAccountRateLimit(LIMIT_PER_SECOND);
    double.counters.reset();
    const arrivals = recordArrivals(double, latency);
    log(`${latency} ms: sweeper backfill --from ${window.from.toISOString()} --to ${window.to.toISOString()} --json`);
    const started = performance.now();
    const run = await runSweeper(
      `payouts-backfill-${latency}`,
      ['backfill', '--from', window.from.toISOString(), '--to', window.to.toISOString(), '--json'],
      sweeperEnv(db.url, double, ENV),
    );
    const ended = performance.now();
    arrivals.stop();
    const step = payoutStep(double, arrivals, ended, latency);
    const checks = await checkOutcome(db.url, history.payoutId);
    const counts = reportCounts(run);
    // Charges that agree are counted as `matched`; every other category is a finding.
    const found = Object.fromEntries(Object.entries(counts.findings).filter(([k]) => k !== 'matched'));
    const payouts = run.reports.map((r) => r.payouts as Record<string, unknown> | undefined).find(Boolean) ?? {};
    const checksOk =
      payouts.transactions === TRANSACTIONS - 1 &&
      payouts.linked === CHARGES + REFUNDS &&
      Object.keys(found).length === 0 &&
      checks.reconciled === 1 &&
      checks.residual === 0 &&
      checks.mirrored === TRANSACTIONS &&
      checks.fees_recorded === CHARGES;
    log(`${latency} ms: ${run.wall_s} s, payouts step ${step.wall_s} s (${step.wall_over_bound}x)`);
    return {
      latency_ms: latency,
      run: { ...summary(run), requests: double.counters.snapshot(), run_wall_s: round((ended - started) / 1000, 2) },
      payouts_step: step,
      payouts_report: payouts,
      findings: found,
      matched: counts.findings.matched ?? 0,
      repaired: counts.repaired,
      database: checks,
      checks_ok: checksOk,
    };
  } finally {
    await db.drop();
  }
}

interface History {
  payoutId: string;
  members: number;
  charges: Array<{ id: string; created: number; amount: number; key: string }>;
  refunds: Array<{ id: string; charge: string; created: number; amount: number }>;
}

/**
 * Charges over `[from, to)`, available two days later; over the day before the payout every
 * tenth is refunded in full and Stripe takes its fees; an hour before `now` the platform's
 * automatic payout pays it all out, paid and reconciled.
 */
function seedHistory(double: StripeDouble, window: { from: Date; to: Date; now: number }): History {
  const charges: History['charges'] = [];
  double.seedCharges(null, CHARGES, {
    from: window.from,
    to: window.to,
    seed: 27,
    realistic: true,
    metadataOf: (c) => {
      const key = `payouts-order-${c.index}`;
      charges[c.index] = { id: c.id, created: c.created, amount: c.amount, key };
      return { tenant_id: TENANT, idempotency_key: key };
    },
  });
  // Refunds and fees over the day before the payout, as an account's day goes.
  const dayStart = window.now - 25 * HOUR_MS;
  const refunds: History['refunds'] = [];
  for (let i = 0; i < CHARGES; i += REFUND_EVERY) {
    const charge = charges[i] as History['charges'][number];
    double.clock.set(new Date(dayStart + Math.floor((i / CHARGES) * 24 * HOUR_MS)));
    const refund = double.createRefund(charge.id, { events: { emit: false } });
    refunds.push({ id: refund.id, charge: charge.id, created: refund.created as number, amount: refund.amount });
  }
  for (let i = 0; i < FEES; i += 1) {
    double.clock.set(new Date(dayStart + Math.floor(((i + 0.5) / FEES) * 24 * HOUR_MS)));
    double.addAdjustment(null, { amount: -(1_000 + i), reportingCategory: 'fee', description: 'Radar fees' });
  }
  double.clock.set(new Date(window.now - HOUR_MS));
  const payout = double.runPayout(null, { events: { emit: false } });
  double.clock.useRealTime();
  const members = double.balanceTransactions(null, { payout: payout.id }).length;
  if (members !== TRANSACTIONS)
    throw new Error(`the payout holds ${members} balance transactions, not ${TRANSACTIONS}`);
  if (payout.reconciliation_status !== 'completed') throw new Error(`payout ${payout.id} is not reconciled`);
  return { payoutId: payout.id, members, charges, refunds };
}

/** Every charge's completed claim and payment row, every refund's row: as the application wrote them. */
async function seedRows(dbUrl: string, history: History, from: Date, now: number): Promise<void> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    await ensureDayPartitions(client, { from: utcDay(new Date(from.getTime() - DAY_MS)), to: utcDay(new Date(now)) });
    await client.query('SET session_replication_role = replica');
    const refunded = new Set(history.refunds.map((r) => r.charge));
    const c = history.charges;
    const args = [
      c.map((x) => x.key),
      c.map((x) => x.id),
      c.map((x) => x.created),
      c.map((x) => x.amount),
      c.map((x) => (refunded.has(x.id) ? x.amount : 0)),
    ];
    await client.query(
      `WITH filed AS (
         INSERT INTO idempotency_key_directory (tenant_id, key, created_at)
         SELECT $5, r.key, to_timestamp(r.created - 2) FROM unnest($1::text[], $3::float8[]) AS r(key, created)
       )
       INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, attempt, downstream_key, response_status,
                                     response_body, response_outcome, amount, currency, created_at, completed_at, updated_at)
       SELECT $5, r.key, md5(r.key), 'completed', 1, 'sweeper_' || md5(r.key), 200,
              jsonb_build_object('object', 'charge_result', 'payment_intent', NULL, 'charge', r.charge,
                                 'status', 'succeeded', 'amount', r.amount, 'currency', 'usd'),
              'success', r.amount, 'usd', to_timestamp(r.created - 2), to_timestamp(r.created + 1), to_timestamp(r.created + 1)
         FROM unnest($1::text[], $2::text[], $3::float8[], $4::bigint[]) AS r(key, charge, created, amount)`,
      [...args.slice(0, 4), TENANT],
    );
    await client.query(
      `INSERT INTO payments (charge_id, tenant_id, idempotency_key, amount, currency, status, amount_refunded, created_at, updated_at)
       SELECT r.charge, $6, r.key, r.amount, 'usd', 'succeeded', r.refunded, to_timestamp(r.created), to_timestamp(r.created + 1)
         FROM unnest($1::text[], $2::text[], $3::float8[], $4::bigint[], $5::bigint[]) AS r(key, charge, created, amount, refunded)`,
      [...args, TENANT],
    );
    const f = history.refunds;
    await client.query(
      `INSERT INTO payment_refunds (refund_id, charge_id, amount, currency, status, created_at, updated_at)
       SELECT r.id, r.charge, r.amount, 'usd', 'succeeded', to_timestamp(r.created), to_timestamp(r.created)
         FROM unnest($1::text[], $2::text[], $3::bigint[], $4::float8[]) AS r(id, charge, amount, created)`,
      [f.map((x) => x.id), f.map((x) => x.charge), f.map((x) => x.amount), f.map((x) => x.created)],
    );
    await client.query('RESET session_replication_role');
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}

interface Arrivals {
  /** When each request of the payouts step reached the double, by endpoint (ms, performance.now()). */
  at: Map<string, number[]>;
  /** Balance transactions requests: arrival to answer, less the latency (the double's own time, and its waits for CPU). */
  serverMs: number[];
  /** Balance transactions requests in the double at once, integrated over time (ms). */
  inFlightMs: number;
}

/** Wraps the double's counters to time the payouts step's requests. */
function recordArrivals(double: StripeDouble, latency: number): Arrivals & { stop(): void } {
  const out: Arrivals = { at: new Map(), serverMs: [], inFlightMs: 0 };
  const counters = double.counters;
  const record = counters.record.bind(counters);
  const answered = counters.answered.bind(counters);
  const open: number[] = [];
  let inFlight = 0;
  let since = 0;
  const move = (by: number) => {
    const t = performance.now();
    out.inFlightMs += inFlight * (t - since);
    since = t;
    inFlight += by;
  };
  counters.record = (endpoint: string, account: string | null = null) => {
    if ((TXN_ENDPOINTS as readonly string[]).includes(endpoint)) {
      const list = out.at.get(endpoint) ?? [];
      list.push(performance.now());
      out.at.set(endpoint, list);
    }
    if (endpoint === 'GET /v1/balance_transactions') {
      open.push(performance.now());
      move(1);
    }
    record(endpoint, account);
  };
  counters.answered = (endpoint, status, account, request) => {
    if (endpoint === 'GET /v1/balance_transactions') {
      // Answers leave in about arrival order (one latency for all); the oldest open request is near enough.
      out.serverMs.push(performance.now() - (open.shift() as number) - latency);
      move(-1);
    }
    answered(endpoint, status, account, request);
  };
  return {
    ...out,
    get inFlightMs() {
      return out.inFlightMs;
    },
    stop() {
      counters.record = record;
      counters.answered = answered;
    },
  };
}

function payoutStep(double: StripeDouble, arrivals: Arrivals, ended: number, latency: number) {
  const first = arrivals.at.get('GET /v1/payouts')?.[0];
  const listing = arrivals.at.get('GET /v1/balance_transactions') ?? [];
  if (first === undefined || listing.length === 0) throw new Error('the run never listed the payout');
  const requests = TXN_ENDPOINTS.reduce((n, e) => n + double.counters.get(e), 0);
  const wall = (ended - first) / 1000;
  const listingMs = (listing.at(-1) as number) - first + latency;
  const bound = requests / LIMIT_PER_SECOND;
  const floor = (2 * latency) / 1000 + (requests - 2) / LIMIT_PER_SECOND + latency / 1000;
  return {
    wall_s: round(wall, 2),
    requests,
    by_endpoint: Object.fromEntries(TXN_ENDPOINTS.map((e) => [e, double.counters.get(e)])),
    bound_s: round(bound, 2),
    wall_over_bound: round(wall / bound, 2),
    /**
     * The least wall any client could take for these requests: the payouts listing and the
     * first page of transactions go one after the other (the page names what to split), the
     * rest at the limit, and the last answer takes its latency.
     */
    floor_s: round(floor, 2),
    wall_over_floor: round(wall / floor, 2),
    /** Full pages of 100 the transactions fill, against the requests made (each split ends in a partial page). */
    pages_needed: Math.ceil(TRANSACTIONS / 100),
    /** From the payouts listing to the last balance transactions page's request (plus its latency). */
    listing_s: round(listingMs / 1000, 2),
    /** The balance transactions requests: their rate, how many the double held at once, its own time per answer. */
    listing_requests_per_second: round(
      (listing.length / ((listing.at(-1) as number) - (listing[0] as number) + 1)) * 1000,
      1,
    ),
    mean_in_flight: round(arrivals.inFlightMs / listingMs, 2),
    double_ms_per_answer: {
      mean: round(arrivals.serverMs.reduce((a, b) => a + b, 0) / Math.max(1, arrivals.serverMs.length), 1),
      max: round(Math.max(0, ...arrivals.serverMs), 1),
    },
    rate_limited_429: double.counters.rateLimited(),
    unretried_429: double.counters.unretried429s().length,
  };
}

async function checkOutcome(dbUrl: string, payoutId: string) {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    type Checks = { fees_recorded: number; reconciled: number; residual: number | null; mirrored: number };
    const { rows } = await client.query<Checks>(
      `SELECT (SELECT count(*)::int FROM payments WHERE fee IS NOT NULL AND net IS NOT NULL) AS fees_recorded,
              (SELECT count(*)::int FROM recon_payouts WHERE payout_id = $1 AND itemised) AS reconciled,
              (SELECT residual::float8 FROM recon_payouts WHERE payout_id = $1) AS residual,
              (SELECT count(*)::int FROM stripe_balance_transactions WHERE payout_id = $1) AS mirrored`,
      [payoutId],
    );
    return rows[0] as Checks;
  } finally {
    await client.end();
  }
}
