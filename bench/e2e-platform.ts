/**
 * End to end, a Connect platform (issue 29): `sweeper run` (the built CLI) with
 * SWEEPER_ACCOUNTS=platform,connected over 2,000 connected accounts, 1,900 idle and 100
 * with 20 charges each, against the Stripe double enforcing Stripe's two limits (25
 * requests a second per account and endpoint, 100 a second per key) and answering in
 * 100 ms, with PostgreSQL 15 on the same machine.
 *
 * - first run (every account new): wall time against the request bound, the requests it
 *   made at the key's limit (requests / 100 per second);
 * - second run (every account swept before, nothing new): requests per idle account (the
 *   goal: at most 2), wall time against its bound, SQL statements per account
 *   (pg_stat_statements, when loaded);
 * - both: 429s answered, and 429s whose request was never asked again (must be 0).
 *
 * The sweeper runs with SWEEPER_STRIPE_GLOBAL_RATE=100 (the double's limit) and its other
 * defaults. Run just this one with `npm run bench -- e2e-platform`; BENCH_SCALE scales the
 * account counts (0.1: 200 accounts, 10 busy).
 */
import { startStripeDouble, type StripeDouble } from '../testkit/stripe-double/index.js';
import { readStatements, resetStatements, startBenchServer, type BenchServer } from './pg-server.js';
import {
  codeState,
  ensureBuilt,
  HOUR_MS,
  log,
  machine,
  resultHeader,
  round,
  runSweeper,
  SCALE,
  summary,
  sweeperEnv,
  sweeperOverrides,
  type CliRun,
} from './e2e-support.js';
import { writeResult } from './support.js';

const ACCOUNTS = Math.max(20, Math.round(2_000 * SCALE));
const BUSY = Math.max(1, Math.round(100 * SCALE));
const CHARGES_EACH = 20;
const LATENCY_MS = 100;
const PER_ACCOUNT = 25;
const GLOBAL = 100;
const ENV = { SWEEPER_ACCOUNTS: 'platform,connected', SWEEPER_STRIPE_GLOBAL_RATE: String(GLOBAL) };

ensureBuilt();
const code = codeState();
const server = await startBenchServer(log);
const machineAtStart = machine(server);
const double = await startStripeDouble({ seed: 29 });
try {
  const now = Date.now();
  log(`seeding ${ACCOUNTS} connected accounts, ${BUSY} with ${CHARGES_EACH} charges each`);
  const ids = double.seedAccounts(ACCOUNTS, {
    chargesEach: CHARGES_EACH,
    withCharges: BUSY,
    charges: { from: new Date(now - 3 * HOUR_MS), to: new Date(now - HOUR_MS) },
  });
  const busy = new Set(ids.slice(0, BUSY));
  double.setLatency(LATENCY_MS);
  double.setAccountRateLimit(PER_ACCOUNT);
  double.setGlobalRateLimit(GLOBAL);

  const db = await server.createDatabase('bench_platform');
  try {
    await runSweeper('platform-migrate', ['migrate'], sweeperEnv(db.url, double));
    const first = await timedRun(server, double, db.url, 'platform-first', busy);
    const second = await timedRun(server, double, db.url, 'platform-second', busy);
    const result = {
      ...resultHeader('e2e-platform', code, machineAtStart),
      settings: {
        accounts: ACCOUNTS,
        busy_accounts: BUSY,
        charges_each: CHARGES_EACH,
        latency_ms: LATENCY_MS,
        server_limit_per_account_endpoint: PER_ACCOUNT,
        server_limit_global: GLOBAL,
        sweeper_env: ENV,
        sweeper_overrides: sweeperOverrides(),
      },
      first,
      second,
    };
    await writeResult('e2e-platform', result);
    const line = (name: string, r: typeof first) =>
      `  ${name}: ${r.wall_s} s for ${r.requests} requests (bound ${r.bound_s} s at ${GLOBAL}/s: ${r.wall_over_bound}x); ` +
      `requests per idle account ${r.requests_per_idle_account.mean} (max ${r.requests_per_idle_account.max}); ` +
      `429s ${r.rate_limited_429}, unretried ${r.unretried_429}; accounts ${r.accounts_reported} (${r.failed} failed); ` +
      `SQL per account ${r.statements_per_account ? `${r.statements_per_account.top_level} top level, ${r.statements_per_account.all} in all` : 'not counted'}; CPU ${r.cpu_s} s, peak RSS ${r.max_rss_mb} MB`;
    process.stdout.write(
      `${[`platform: ${ACCOUNTS} connected accounts (${BUSY} × ${CHARGES_EACH} charges), ${LATENCY_MS} ms, ${PER_ACCOUNT}/s per account and endpoint, ${GLOBAL}/s per key`, line('first run', first), line('second run', second)].join('\n')}\n`,
    );
  } finally {
    await db.drop();
  }
} finally {
  await double.close();
  await server.stop();
}

async function timedRun(server: BenchServer, double: StripeDouble, dbUrl: string, label: string, busy: Set<string>) {
  double.counters.reset();
  if (server.statements) await resetStatements(server.url);
  log(`${label}: sweeper run --json`);
  const run: CliRun = await runSweeper(label, ['run', '--json'], sweeperEnv(dbUrl, double, ENV));
  const requests = double.counters.total();
  const idle = double.counters
    .accounts()
    .filter((a) => a.account !== null && !busy.has(a.account))
    .map((a) => a.requests);
  const statements = server.statements ? await readStatements(server.url, 'bench_platform') : null;
  const bound = requests / GLOBAL;
  const reports = run.reports.filter((r) => typeof r.account === 'string');
  log(`${label}: ${run.wall_s} s, exit ${run.exit_code}, ${requests} requests`);
  return {
    ...summary(run),
    requests,
    bound_s: round(bound, 1),
    wall_over_bound: round(run.wall_s / bound, 2),
    requests_per_idle_account: {
      mean: round(idle.reduce((s, n) => s + n, 0) / Math.max(1, idle.length), 2),
      max: Math.max(0, ...idle),
      accounts: idle.length,
    },
    accounts_listing_requests: double.counters.get('GET /v1/accounts'),
    rate_limited_429: double.counters.rateLimited(),
    unretried_429: double.counters.unretried429s().length,
    accounts_reported: reports.length,
    failed: reports.filter((r) => r.status === 'failed').length,
    statements_per_account: statements
      ? {
          top_level: round(statements.top_level / Math.max(1, reports.length), 2),
          all: round(statements.all / Math.max(1, reports.length), 2),
        }
      : null,
  };
}
