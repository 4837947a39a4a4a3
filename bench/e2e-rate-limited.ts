/**
 * End to end, at Stripe's rate limit (issue 12, rows 1, 2 and 5): `sweeper backfill`
 * (the built CLI, as a user runs it) over 200,000 realistic charges (about 2 KB each)
 * created over 7 days, against the Stripe double answering in 300 ms and allowing 25
 * requests/s on GET /v1/charges, with PostgreSQL 15 on the same machine.
 *
 * - wall time against the bound: 200,000 charges / (25 requests/s × 100 charges) = 80 s;
 * - SQL statements per page (pg_stat_statements, track = all): top level and all;
 * - the same backfill with the peer, @supabase/stripe-sync-engine 0.48.5 (installed in
 *   a scratch directory outside the repository), in the same session.
 *
 * 90% of the charges have their claim and payment row; 10% produce findings or
 * repairs (bench/e2e-support.ts, MIX). The sweeper runs with default settings
 * (SWEEPER_STRIPE_RATE unset: 25, the server's limit, which the bound assumes;
 * BENCH_STRIPE_RATE sets it). BENCH_PEER=0 skips the peer.
 *
 * Run with `npm run bench -- e2e-rate-limited`. BENCH_SCALE=0.05 is a smoke run: 10,000
 * charges over 8 hours (the window shrinks with the count, so slices hold as many
 * charges as in the full run).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startStripeDouble, type StripeDouble } from '../testkit/stripe-double/index.js';
import { startBenchServer, readStatements, resetStatements, type BenchServer } from './pg-server.js';
import {
  codeState,
  ensureBuilt,
  expectedFindings,
  floorHour,
  HOUR_MS,
  LIST,
  log,
  LOG_DIR,
  machine,
  MIX,
  reportCounts,
  resultHeader,
  round,
  runSweeper,
  runTimed,
  ROOT,
  SCALE,
  seedLocal,
  seedStripe,
  samplePageBytes,
  sweeperEnv,
  summary,
  sweeperOverrides,
  memoryLimitSetting,
  perPage,
  type SeededSet,
} from './e2e-support.js';
import { writeResult } from './support.js';

const CHARGES = Math.max(1_000, Math.round(200_000 * SCALE));
// Below scale 1 the window shrinks with the count: the same charges per slice as the full run.
const HOURS = SCALE >= 1 ? 7 * 24 : Math.max(1, Math.round(7 * 24 * SCALE));
const LATENCY_MS = 300;
const LIMIT_PER_SECOND = 25;
const PAGE = 100;
// Unset: the sweeper's default.
const STRIPE_RATE = process.env.BENCH_STRIPE_RATE ?? '';
const PEER_PACKAGE = '@supabase/stripe-sync-engine@0.48.5';
const BOUND_S = CHARGES / (LIMIT_PER_SECOND * PAGE);

ensureBuilt();
const code = codeState();
const server = await startBenchServer(log);
const machineAtStart = machine(server);
const double = await startStripeDouble({ seed: 12 });
try {
  const to = floorHour(Date.now() - HOUR_MS);
  const from = new Date(to.getTime() - HOURS * HOUR_MS);
  log(`seeding ${CHARGES.toLocaleString('en')} realistic charges over ${from.toISOString()} .. ${to.toISOString()}`);
  const set = seedStripe(double, 'rl', CHARGES, from, to, 2026);
  const pageBytes = await samplePageBytes(double, set);

  const sweeper = await sweeperCase(server, double, set, 'rate-limited', { SWEEPER_STRIPE_RATE: STRIPE_RATE });
  const peer = process.env.BENCH_PEER === '0' ? { skipped: 'BENCH_PEER=0' } : await peerCase(server, double, set);

  const result = {
    ...resultHeader('e2e-rate-limited', code, machineAtStart),
    settings: {
      charges: CHARGES,
      hours: HOURS,
      window: { from: from.toISOString(), to: to.toISOString() },
      latency_ms: LATENCY_MS,
      server_limit_requests_per_second: LIMIT_PER_SECOND,
      sweeper_stripe_rate: STRIPE_RATE === '' ? 'default' : Number(STRIPE_RATE),
      sweeper_overrides: sweeperOverrides(),
      memory_limit: memoryLimitSetting(),
      page_bytes: pageBytes,
      charge_bytes: Math.round(pageBytes / PAGE),
      mix_per_100: MIX,
      expected: expectedFindings(set),
      logs: LOG_DIR,
    },
    bound_s: BOUND_S,
    sweeper,
    peer,
    sweeper_vs_peer: 'wall_s' in peer ? round(peer.wall_s / sweeper.wall_s, 2) : null,
  };
  await writeResult('e2e-rate-limited', result);
  const lines = [
    `e2e at the rate limit: ${CHARGES.toLocaleString('en')} charges over ${HOURS} h, ${LATENCY_MS} ms, ${LIMIT_PER_SECOND} requests/s (bound ${round(BOUND_S, 1)} s), pages of ${Math.round(pageBytes / 1024)} KB`,
    `  sweeper backfill (SWEEPER_STRIPE_RATE=${STRIPE_RATE || 'unset'}): ${sweeper.wall_s} s = ${sweeper.bound_over_wall} of the bound; ${sweeper.requests} requests (${sweeper.achieved_requests_per_second}/s), 429s ${sweeper.rate_limited_429}; peak RSS ${sweeper.max_rss_mb} MB; CPU ${sweeper.cpu_s} s`,
    sweeper.statements
      ? `    SQL per page: ${sweeper.statements.per_page_top_level} top level, ${sweeper.statements.per_page_all} in all (per 100 charges: ${sweeper.statements.per_100_charges_top_level} / ${sweeper.statements.per_100_charges_all})`
      : '    SQL per page: not counted (pg_stat_statements not loaded)',
    'wall_s' in peer
      ? `  peer ${PEER_PACKAGE}: ${peer.wall_s} s (${peer.synced} charges, ${peer.requests} requests); sweeper ${result.sweeper_vs_peer}x faster`
      : `  peer: ${peer.skipped}`,
  ].filter(Boolean);
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await double.close();
  await server.stop();
}

function throttle(on: boolean): void {
  double.setLatency(on ? LATENCY_MS : 0);
  double.setRateLimit(LIST, on ? { perSecond: LIMIT_PER_SECOND } : null);
  double.counters.reset();
}

async function sweeperCase(
  server: BenchServer,
  double: StripeDouble,
  set: SeededSet,
  label: string,
  env: Record<string, string>,
) {
  const name = `bench_${label.replace(/-/g, '_')}`;
  const db = await server.createDatabase(name);
  try {
    await runSweeper(`${label}-migrate`, ['migrate'], sweeperEnv(db.url, double));
    log(`${label}: local claims and payment rows`);
    const local = await seedLocal(db.url, set);
    if (server.statements) await resetStatements(server.url);
    throttle(true);
    log(`${label}: sweeper backfill --from ${set.from.toISOString()} --to ${set.to.toISOString()}`);
    const run = await runSweeper(
      label,
      ['backfill', '--from', set.from.toISOString(), '--to', set.to.toISOString(), '--json'],
      sweeperEnv(db.url, double, env),
    );
    const requests = double.counters.get(LIST);
    const limited = double.counters.status(LIST, 429);
    const pages = double.counters.status(LIST, 200);
    throttle(false);
    const statements = server.statements ? await readStatements(server.url, name) : null;
    const counts = reportCounts(run);
    log(`${label}: ${run.wall_s} s, exit ${run.exit_code}, ${counts.charges_scanned} charges scanned`);
    return {
      ...summary(run),
      bound_over_wall: round(BOUND_S / run.wall_s, 3),
      run_duration_s: counts.duration_s,
      charges_scanned: counts.charges_scanned,
      findings: counts.findings,
      repaired: counts.repaired,
      local_rows: local,
      requests,
      pages,
      rate_limited_429: limited,
      achieved_requests_per_second: round(requests / run.wall_s, 1),
      statements: statements ? perPage(statements, pages, counts.charges_scanned) : null,
    };
  } finally {
    await db.drop();
  }
}

async function peerCase(server: BenchServer, double: StripeDouble, set: SeededSet) {
  const dir = process.env.BENCH_PEER_DIR ?? path.join(tmpdir(), 'sweeper-bench-peer');
  const entry = path.join(dir, 'node_modules/@supabase/stripe-sync-engine/package.json');
  if (!existsSync(entry)) {
    log(`peer: npm install ${PEER_PACKAGE} into ${dir}`);
    const install = spawnSync(
      'npm',
      ['install', '--prefix', dir, '--no-audit', '--no-fund', '--no-save', PEER_PACKAGE],
      { encoding: 'utf8' },
    );
    if (install.status !== 0 || !existsSync(entry)) {
      return {
        skipped: `could not install ${PEER_PACKAGE} into ${dir}: ${(install.stderr || install.stdout).trim().split('\n').slice(-3).join(' ')}`,
      };
    }
  }
  const db = await server.createDatabase('bench_peer');
  try {
    const script = path.join(ROOT, 'bench/peer-backfill.ts');
    const migrate = await runTimed('peer-migrate', ['--import', 'tsx', script, dir, 'migrate', db.url], {});
    if (migrate.exit_code !== 0)
      return { skipped: `the peer's migrations failed (exit ${migrate.exit_code}): see ${migrate.log_file}` };
    throttle(true);
    log(`peer: syncBackfill({ object: 'charge', created: [${set.from.toISOString()}, ${set.to.toISOString()}) })`);
    const run = await runTimed(
      'peer-backfill',
      [
        '--import',
        'tsx',
        script,
        dir,
        'backfill',
        db.url,
        double.url,
        String(set.from.getTime() / 1000),
        String(set.to.getTime() / 1000),
      ],
      {},
    );
    const requests = double.counters.get(LIST);
    const limited = double.counters.status(LIST, 429);
    throttle(false);
    if (run.exit_code !== 0)
      return { skipped: `the peer's backfill failed (exit ${run.exit_code}): see ${run.log_file}` };
    const inner = run.reports[0] as { synced: number; ms: number } | undefined;
    log(`peer: ${run.wall_s} s, ${inner?.synced} charges`);
    return {
      package: PEER_PACKAGE,
      stripe_node: (
        JSON.parse(readFileSync(path.join(dir, 'node_modules/stripe/package.json'), 'utf8')) as { version: string }
      ).version,
      how: "StripeSync.syncBackfill({ object: 'charge', created: { gte, lt } }); its Stripe client replaced by one with the same options plus host/port/protocol of the double",
      ...summary(run),
      call_s: inner ? round(inner.ms / 1000, 2) : null,
      synced: inner?.synced ?? null,
      requests,
      rate_limited_429: limited,
      bound_over_wall: round(BOUND_S / run.wall_s, 3),
    };
  } finally {
    await db.drop();
  }
}
