/**
 * End to end without a rate limit (issue 12, rows 3, 4, 5 and 6): `sweeper backfill`
 * (the built CLI) over 10,000, 100,000 and 1,000,000 realistic charges created over the
 * same 3 days, against the Stripe double with no latency and no limit, and
 * SWEEPER_STRIPE_RATE = 1000 (BENCH_UNTHROTTLED_RATE; the most the sweeper accepts).
 *
 * - wall time of the largest against the floor (floor.ts): JSON decode of the same pages
 *   (parsed here, in-process) + COPY of the same rows into a table shaped like
 *   stripe_charges (pg-copy-streams);
 * - its CPU against the floor's CPU: (sweep + PostgreSQL) over (the decode's CPU + the
 *   COPY's server process's CPU), the issue 29 goal;
 * - peak RSS of the sweeper process at each size;
 * - the CPU each party spent at each size (sweep, PostgreSQL, the Stripe double, the
 *   machine's idle time: cpu-parties.ts), and (sweep + PostgreSQL) / cores against the floor;
 * - SQL statements per page (pg_stat_statements, track = all) at each size;
 * - one scheduled run (`sweeper run`) of 5,000 new charges over the smallest and over
 *   the largest history: a first `sweeper run` sets the watermark, the events cursor
 *   and the daily deep re-read; then 5,000 new charges appear in the double, inside the
 *   next run's window (its overlap), with their claims and payment rows; the next
 *   `sweeper run` is the one timed (three times, each on its own copy of the database:
 *   BENCH_SCHEDULED_REPEATS; the median).
 *
 * The same mix as the rate-limited run (90% matched, 10% findings or repairs).
 * Run with `npm run bench -- e2e-unthrottled` (BENCH_SCALE=0.05: 500, 5,000 and 50,000).
 */
import { startStripeDouble } from '../testkit/stripe-double/index.js';
import { readStatements, resetStatements, startBenchServer } from './pg-server.js';
import {
  codeState,
  DAY_MS,
  ensureBuilt,
  expectedFindings,
  floorHour,
  HOUR_MS,
  LIST,
  log,
  LOG_DIR,
  machine,
  MIX,
  perPage,
  reportCounts,
  resultHeader,
  round,
  runSweeper,
  scaled,
  seedLocal,
  seedStripe,
  samplePageBytes,
  summary,
  sweeperEnv,
  sweeperOverrides,
  memoryLimitSetting,
} from './e2e-support.js';
import { writeResult } from './support.js';
import { countCpu } from './cpu-parties.js';
import { measureFloor } from './floor.js';
import { MINUTE_MS } from '../src/time/units.js';

const SIZES = [scaled(10_000), scaled(100_000), scaled(1_000_000)];
const NEW_CHARGES = scaled(5_000);
const STRIPE_RATE = process.env.BENCH_UNTHROTTLED_RATE ?? '1000';
const REPEATS = Math.max(1, Number(process.env.BENCH_SCHEDULED_REPEATS ?? 3));

ensureBuilt();
const code = codeState();
const server = await startBenchServer(log);
const machineAtStart = machine(server);
try {
  // History: 3 days, ending 3 days before now, so a scheduled run's 3-day deep re-read does not reach it.
  const end = floorHour(Date.now() - HOUR_MS);
  const to = new Date(end.getTime() - 3 * DAY_MS);
  const from = new Date(to.getTime() - 3 * DAY_MS);
  const sizes = [];
  const scheduled: Record<string, unknown> = {};
  let floor: Awaited<ReturnType<typeof measureFloor>> | null = null;
  let pageBytes = 0;
  for (const [i, n] of SIZES.entries()) {
    const label = `unthrottled-${n}`;
    const double = await startStripeDouble({ seed: 100 + i });
    const name = `bench_unthrottled_${i}`;
    const db = await server.createDatabase(name);
    try {
      log(
        `${label}: seeding ${n.toLocaleString('en')} realistic charges over ${from.toISOString()} .. ${to.toISOString()}`,
      );
      const set = seedStripe(double, `h${i}`, n, from, to, 7 + i);
      pageBytes = await samplePageBytes(double, set);
      await runSweeper(`${label}-migrate`, ['migrate'], sweeperEnv(db.url, double));
      log(`${label}: local claims and payment rows`);
      const local = await seedLocal(db.url, set);
      if (server.statements) await resetStatements(server.url);
      double.counters.reset();
      log(`${label}: sweeper backfill`);
      const cpu = await countCpu(server.url, name);
      const run = await runSweeper(
        label,
        ['backfill', '--from', from.toISOString(), '--to', to.toISOString(), '--json'],
        sweeperEnv(db.url, double, { SWEEPER_STRIPE_RATE: STRIPE_RATE }),
      );
      const parties = await cpu(summary(run).cpu_s);
      const pages = double.counters.status(LIST, 200);
      const statements = server.statements ? await readStatements(server.url, name) : null;
      const counts = reportCounts(run);
      log(
        `${label}: ${run.wall_s} s, exit ${run.exit_code}, peak RSS ${run.max_rss_mb} MB, ${counts.charges_scanned} charges scanned`,
      );
      sizes.push({
        charges: n,
        ...summary(run),
        charges_per_second: Math.round(n / run.wall_s),
        run_duration_s: counts.duration_s,
        charges_scanned: counts.charges_scanned,
        findings: counts.findings,
        repaired: counts.repaired,
        expected: expectedFindings(set),
        local_rows: local,
        requests: double.counters.get(LIST),
        pages,
        statements: statements ? perPage(statements, pages, counts.charges_scanned) : null,
        cpu_parties: parties,
      });
      if (i === SIZES.length - 1) floor = await measureFloor(db.url, double.url, set);
      if (i === 0 || i === SIZES.length - 1) scheduled[String(n)] = await scheduledRun(label, name, double, db.url, i);
    } finally {
      // BENCH_KEEP=1: the databases stay, to look into (EXPLAIN) after the run.
      if (process.env.BENCH_KEEP !== '1') await db.drop();
      await double.close();
    }
  }

  const first = sizes[0] as (typeof sizes)[number];
  const last = sizes.at(-1) as (typeof sizes)[number];
  const small = scheduled[String(first.charges)] as { median_wall_s: number };
  const large = scheduled[String(last.charges)] as { median_wall_s: number };
  const f = floor as NonNullable<typeof floor>;
  const result = {
    ...resultHeader('e2e-unthrottled', code, machineAtStart),
    settings: {
      sizes: SIZES,
      window: { from: from.toISOString(), to: to.toISOString() },
      latency_ms: 0,
      server_limit: 'none',
      sweeper_stripe_rate: Number(STRIPE_RATE),
      client_budget_floor_s: round(last.charges / (Number(STRIPE_RATE) * 100), 1),
      sweeper_overrides: sweeperOverrides(),
      memory_limit: memoryLimitSetting(),
      page_bytes: pageBytes,
      mix_per_100: MIX,
      new_charges_per_scheduled_run: NEW_CHARGES,
      scheduled_repeats: REPEATS,
      logs: LOG_DIR,
    },
    sizes,
    floor: f,
    wall_over_floor: round(last.wall_s / f.floor_s, 2),
    // The least wall the sweep's and PostgreSQL's CPU allow on these cores, over the floor.
    cpu_bound_over_floor:
      last.cpu_parties.sweep_and_postgres_over_cores_s === null
        ? null
        : round(last.cpu_parties.sweep_and_postgres_over_cores_s / f.floor_s, 2),
    // The CPU goal (issue 29): (sweep + PostgreSQL CPU) over the floor's CPU (decode + the COPY's server process).
    cpu_over_floor_cpu:
      last.cpu_parties.sweep_s === null || last.cpu_parties.postgres_s === null || f.cpu_s === null
        ? null
        : round((last.cpu_parties.sweep_s + last.cpu_parties.postgres_s) / f.cpu_s, 2),
    rss: {
      by_size_mb: Object.fromEntries(sizes.map((s) => [s.charges, s.max_rss_mb])),
      largest_over_smallest: last.max_rss_mb && first.max_rss_mb ? round(last.max_rss_mb / first.max_rss_mb, 2) : null,
    },
    scheduled: {
      ...scheduled,
      large_over_small: round(large.median_wall_s / small.median_wall_s, 2),
    },
  };
  await writeResult('e2e-unthrottled', result);
  const lines = [
    `e2e without a rate limit (SWEEPER_STRIPE_RATE=${STRIPE_RATE}), charges over 3 days, pages of ${Math.round(pageBytes / 1024)} KB`,
    ...sizes.map(
      (s) =>
        `  ${s.charges.toLocaleString('en').padStart(9)} charges: ${s.wall_s} s (${s.charges_per_second.toLocaleString('en')}/s), peak RSS ${s.max_rss_mb} MB, CPU ${s.cpu_s} s` +
        (s.statements
          ? `, SQL per page ${s.statements.per_page_top_level} top level / ${s.statements.per_page_all} in all`
          : ''),
    ),
    `  floor at ${last.charges.toLocaleString('en')}: decode ${f.decode_s} s + COPY ${f.copy_s} s = ${f.floor_s} s; wall / floor = ${result.wall_over_floor}`,
    `  floor CPU at ${last.charges.toLocaleString('en')}: decode ${f.decode_cpu_s} s + COPY (server) ${f.copy_cpu_s} s = ${f.cpu_s} s; (sweep + PostgreSQL CPU) / floor CPU = ${result.cpu_over_floor_cpu}`,
    `  CPU at ${last.charges.toLocaleString('en')}: sweep ${last.cpu_parties.sweep_s} s, PostgreSQL ${last.cpu_parties.postgres_s} s, Stripe double ${last.cpu_parties.stripe_double_s} s; machine busy ${last.cpu_parties.machine_busy_s} s, idle ${last.cpu_parties.machine_idle_s} s on ${last.cpu_parties.cores} cores; (sweep + PostgreSQL) / cores = ${last.cpu_parties.sweep_and_postgres_over_cores_s} s = ${result.cpu_bound_over_floor}x the floor`,
    `  peak RSS ${last.charges.toLocaleString('en')} / ${first.charges.toLocaleString('en')}: ${result.rss.largest_over_smallest}`,
    `  scheduled run of ${NEW_CHARGES.toLocaleString('en')} new charges (median of ${REPEATS}): over ${last.charges.toLocaleString('en')} ${large.median_wall_s} s, over ${first.charges.toLocaleString('en')} ${small.median_wall_s} s = ${result.scheduled.large_over_small}x`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await server.stop();
}

/**
 * The scheduled-run measure on a database holding a backfilled history: a first
 * `sweeper run` sets the watermark, the events cursor and the daily deep re-read.
 * Then, REPEATS times, on a copy of that database (CREATE DATABASE … TEMPLATE) and a
 * Stripe double of its own: new charges inside the next run's window (its overlap),
 * with their claims and payment rows, and the timed `sweeper run`, which lists only
 * its window (the history is in the database, and the deep re-read is not due), so
 * each repeat judges exactly the new charges. A run is a few seconds on a shared
 * machine: the median of the repeats is the figure.
 */
async function scheduledRun(
  label: string,
  source: string,
  double: Awaited<ReturnType<typeof startStripeDouble>>,
  dbUrl: string,
  i: number,
) {
  log(`${label}: first scheduled run (sets the watermark)`);
  const prime = await runSweeper(
    `${label}-run-first`,
    ['run', '--json'],
    sweeperEnv(dbUrl, double, { SWEEPER_STRIPE_RATE: STRIPE_RATE }),
  );
  const runs = [];
  for (let r = 0; r < REPEATS; r += 1) {
    const copy = await server.createDatabase(`${source}_run${r}`, source);
    const fresh = await startStripeDouble({ seed: 500 + r });
    try {
      const before = Date.now();
      // The next window starts at watermark − overlap = (first run − settle) − overlap: 25 minutes before it with the defaults.
      const set = seedStripe(
        fresh,
        `n${i}r${r}`,
        NEW_CHARGES,
        new Date(before - 24 * MINUTE_MS),
        new Date(before - 11 * MINUTE_MS),
        300 + 10 * i + r,
      );
      await seedLocal(copy.url, set);
      const run = await runSweeper(
        `${label}-run-${r + 1}`,
        ['run', '--json'],
        sweeperEnv(copy.url, fresh, { SWEEPER_STRIPE_RATE: STRIPE_RATE }),
      );
      const counts = reportCounts(run);
      log(
        `${label}: scheduled run ${r + 1} over ${NEW_CHARGES.toLocaleString('en')} new charges: ${run.wall_s} s, ${counts.charges_scanned} charges scanned`,
      );
      runs.push({
        ...summary(run),
        run_duration_s: counts.duration_s,
        charges_scanned: counts.charges_scanned,
        findings: counts.findings,
        repaired: counts.repaired,
        requests: fresh.counters.snapshot(),
        window: run.reports[0]?.window ?? null,
      });
    } finally {
      await fresh.close();
      await copy.drop();
    }
  }
  const walls = runs.map((r) => r.wall_s).sort((a, b) => a - b);
  return {
    first: { wall_s: prime.wall_s, charges_scanned: reportCounts(prime).charges_scanned },
    median_wall_s: walls[Math.floor(walls.length / 2)] as number,
    runs,
  };
}
