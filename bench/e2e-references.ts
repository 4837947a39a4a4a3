/**
 * End to end with business references (issue 25, "Cost"): `sweeper backfill` (the built
 * CLI) of 100,000 realistic charges (BENCH_SCALE) over 3 days, against the Stripe double
 * with no latency and no limit (SWEEPER_STRIPE_RATE = 1000, BENCH_UNTHROTTLED_RATE), in
 * three variants of one workload, run in turns in one session:
 *
 * - `duplicates`: every charge names a business reference (its metadata's `order_id`),
 *   and 1% of the charges are a second payment for another charge's order: the same
 *   tenant, reference, amount and currency under a key of its own, both with their claim
 *   and payment row (both `matched`), so each such pair is one `duplicate_effect`;
 * - `unique`: the same charges, every reference its own (no duplicate);
 * - `none`: the same charges with no reference at all, and SWEEPER_SUSPECT_WINDOW=0 (the
 *   reference path and the suspect path have nothing to do: the sweep as before issue 25).
 *
 * For each run: wall time, the CPU of each party (cpu-parties.ts), SQL statements per page
 * (pg_stat_statements, track = all) and the calls and time of the statements of the
 * reference path, and the size of stripe_charge_references. The report must count exactly
 * the expected findings (the mix of the other end-to-end runs, plus one duplicate_effect
 * per pair), and the database must hold exactly those duplicate_effect findings, each
 * naming its two charges: otherwise the benchmark fails.
 *
 * The pairs: in every 100 charges, slots 0 and 1 are a pair (both matched), seeded in a
 * separate batch with one fixed amount (the listing's amounts are otherwise drawn at
 * random), and the tenant of charge i is that of floor(i / 2). Every variant seeds the
 * same charges: only their metadata differs.
 *
 * Run alone with `npm run bench -- references` (BENCH_REFERENCES_ROUNDS turns, default 3;
 * the median of each variant counts; BENCH_SCALE scales the 100,000).
 */
import pg from 'pg';
import { startStripeDouble, type StripeDouble } from '../testkit/stripe-double/index.js';
import { readStatements, readStatementsMatching, resetStatements, startBenchServer } from './pg-server.js';
import {
  codeState,
  DAY_MS,
  ensureBuilt,
  expectedFindings,
  floorHour,
  HOUR_MS,
  keyOf,
  kindOf,
  LIST,
  log,
  LOG_DIR,
  machine,
  memoryLimitSetting,
  MIX,
  perPage,
  reportCounts,
  resultHeader,
  round,
  runSweeper,
  samplePageBytes,
  scaled,
  seedLocal,
  summary,
  sweeperEnv,
  sweeperOverrides,
  tenantOf,
  type SeededSet,
} from './e2e-support.js';
import { writeResult } from './support.js';
import { countCpu } from './cpu-parties.js';

const N = Math.max(1_000, Math.round(scaled(100_000) / 100) * 100);
const STRIPE_RATE = process.env.BENCH_UNTHROTTLED_RATE ?? '1000';
const ROUNDS = Math.max(1, Number(process.env.BENCH_REFERENCES_ROUNDS ?? 3));
/** The amount of every charge of a pair's slots (0 and 1 of each 100), in every variant. */
const PAIR_AMOUNT = 4_200;
const REFERENCE_KEY = process.env.SWEEPER_METADATA_REFERENCE_KEY ?? 'order_id';
const VARIANTS = ['none', 'unique', 'duplicates'] as const;
type Variant = (typeof VARIANTS)[number];
const VARIANT_ENV: Record<Variant, Record<string, string>> = {
  none: { SWEEPER_SUSPECT_WINDOW: '0' },
  unique: {},
  duplicates: {},
};

/** The statements of the reference and suspect paths, by their normalised text (SQL LIKE). */
const PATH_STATEMENTS: Record<string, string> = {
  references_probe: '%JOIN stripe_charge_references cr ON%',
  references_trigger_insert: 'INSERT INTO stripe_charge_references%',
  suspects: '%sc.reference IS NULL%',
  verdicts: '%FROM recon_finding_charges WHERE account = $1 AND charge_id = ANY%',
  close_healed_duplicates: '%JOIN unnest($2::text[], $3::text[]) AS g(tenant_id, reference)%',
  // Not the duplicate path: the closing of healed findings every batch runs, for comparison.
  close_healed_findings: '%CROSS JOIN LATERAL (SELECT x.id FROM recon_findings x%',
  // PostgreSQL's own foreign-key check, one per row of recon_finding_charges (nested: counted "in all").
  finding_charges_key_checks: '%FROM ONLY "public"."recon_findings" x WHERE "id"%FOR KEY SHARE%',
};

/** Charge `index` is in a pair's slot (0 or 1 of each 100): both matched (kindOf), one amount. */
const inPair = (index: number) => index % 100 < 2;
const pairTenant = (index: number) => tenantOf(Math.floor(index / 2));

function referenceOf(variant: Variant, tag: string): (index: number) => string | null {
  if (variant === 'none') return () => null;
  if (variant === 'unique') return (i) => `ord_${tag}_${i}`;
  return (i) => `ord_${tag}_${inPair(i) ? i - (i % 2) : i}`;
}

/**
 * `n` (a multiple of 100) realistic charges over `[from, to)`: the pairs' slots in one
 * batch with PAIR_AMOUNT (consecutive in time: slots 2k and 2k + 1 of the batch), the
 * others in another with random amounts; attributed per the mix, named by `variant`.
 */
function seedReferences(
  double: StripeDouble,
  variant: Variant,
  tag: string,
  n: number,
  from: Date,
  to: Date,
  seed: number,
): SeededSet {
  const reference = referenceOf(variant, tag);
  const set: SeededSet = {
    tag,
    n,
    ids: new Array<string>(n),
    created: new Float64Array(n),
    amount: new Float64Array(n),
    from,
    to,
    tenantOf: pairTenant,
    referenceOf: reference,
  };
  const metadata = (i: number, c: { id: string; created: number; amount: number }): Record<string, string> => {
    set.ids[i] = c.id;
    set.created[i] = c.created;
    set.amount[i] = c.amount;
    const ref = reference(i);
    const named = ref === null ? {} : { [REFERENCE_KEY]: ref };
    if (kindOf(i) === 'unattributed_charge') return { source: 'dashboard', note: 'refund goodwill', ...named };
    return { tenant_id: pairTenant(i), idempotency_key: keyOf(tag, i), ...named };
  };
  const pairs = (n / 100) * 2;
  double.seedCharges(null, n - pairs, {
    from,
    to,
    seed,
    realistic: true,
    metadataOf: (c) => metadata(Math.floor(c.index / 98) * 100 + 2 + (c.index % 98), c),
  });
  double.seedCharges(null, pairs, {
    from,
    to,
    seed: seed + 1,
    amount: PAIR_AMOUNT,
    realistic: true,
    metadataOf: (c) => metadata(Math.floor(c.index / 2) * 100 + (c.index % 2), c),
  });
  for (let i = 0; i < n; i += 1) if (!set.ids[i]) throw new Error(`seedReferences: charge ${i} was not seeded`);
  return set;
}

/** The duplicate_effect findings the database holds: each reference, its charges, its kept charge. */
async function duplicateFindings(dbUrl: string) {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ reference: string; state: string; kept: string; members: string[] }>(
      `SELECT f.reference, f.state, f.details->>'kept' AS kept,
              array(SELECT c.charge_id FROM recon_finding_charges c WHERE c.finding_id = f.id ORDER BY c.charge_id) AS members
         FROM recon_findings f WHERE f.category = 'duplicate_effect'`,
    );
    const size = await client.query<{ rows: string; bytes: string }>(
      `SELECT (SELECT count(*) FROM stripe_charge_references)::bigint AS rows,
              pg_total_relation_size('stripe_charge_references')::bigint AS bytes`,
    );
    return {
      findings: rows,
      references_index: { rows: Number(size.rows[0]?.rows), mb: round(Number(size.rows[0]?.bytes) / 2 ** 20, 1) },
    };
  } finally {
    await client.end();
  }
}

/** What must hold after a run of `variant`: the report's counts, and the duplicate_effect findings themselves. */
function check(
  variant: Variant,
  set: SeededSet,
  counts: ReturnType<typeof reportCounts>,
  held: Awaited<ReturnType<typeof duplicateFindings>>,
): { expected: Record<string, number>; problems: string[] } {
  const expected: Record<string, number> = { ...expectedFindings(set) };
  const pairs = variant === 'duplicates' ? set.n / 100 : 0;
  if (pairs > 0) expected.duplicate_effect = pairs;
  const problems: string[] = [];
  if (counts.charges_scanned !== set.n) problems.push(`scanned ${counts.charges_scanned} charges of ${set.n}`);
  for (const category of new Set([...Object.keys(expected), ...Object.keys(counts.findings)])) {
    const want = expected[category] ?? 0;
    const got = counts.findings[category] ?? 0;
    if (got !== want) problems.push(`report: ${got} ${category}, expected ${want}`);
  }
  const reference = referenceOf(variant, set.tag);
  const wanted = new Map<string, string[]>();
  if (pairs > 0)
    for (let k = 0; k < set.n; k += 100) wanted.set(reference(k) as string, [set.ids[k]!, set.ids[k + 1]!].sort());
  if (held.findings.length !== wanted.size)
    problems.push(`database: ${held.findings.length} duplicate_effect findings, expected ${wanted.size}`);
  for (const f of held.findings) {
    const members = wanted.get(f.reference);
    if (!members) problems.push(`database: a duplicate_effect finding for ${f.reference}, not a pair`);
    else if (f.state !== 'open' || f.members.join() !== members.join())
      problems.push(
        `database: ${f.reference}: ${f.state}, charges ${f.members.join()}, expected open, ${members.join()}`,
      );
    else {
      const k = Number(f.reference.slice(f.reference.lastIndexOf('_') + 1));
      const earlier =
        (set.created[k] as number) <= (set.created[k + 1] as number)
          ? (set.ids[k] as string)
          : (set.ids[k + 1] as string);
      if ((set.created[k] as number) !== (set.created[k + 1] as number) && f.kept !== earlier)
        problems.push(`database: ${f.reference} keeps ${f.kept}, not the earlier ${earlier}`);
    }
  }
  const indexed = variant === 'none' ? 0 : set.n;
  if (held.references_index.rows !== indexed)
    problems.push(`stripe_charge_references holds ${held.references_index.rows} rows, expected ${indexed}`);
  return { expected, problems };
}

ensureBuilt();
const code = codeState();
const server = await startBenchServer(log);
const machineAtStart = machine(server);
try {
  const end = floorHour(Date.now() - HOUR_MS);
  const to = new Date(end.getTime() - 3 * DAY_MS);
  const from = new Date(to.getTime() - 3 * DAY_MS);
  const runs: Record<Variant, Array<Record<string, unknown>>> = { none: [], unique: [], duplicates: [] };
  const failures: string[] = [];
  let pageBytes = 0;
  for (let round_ = 0; round_ < ROUNDS; round_ += 1) {
    for (const variant of VARIANTS) {
      const label = `references-${variant}-${round_ + 1}`;
      const name = `bench_references_${variant}_${round_}`;
      const double = await startStripeDouble({ seed: 200 });
      const db = await server.createDatabase(name);
      try {
        log(
          `${label}: seeding ${N.toLocaleString('en')} realistic charges over ${from.toISOString()} .. ${to.toISOString()}`,
        );
        // The same seeds in every variant and turn: the same charges, amounts and times.
        const set = seedReferences(double, variant, 'r', N, from, to, 17);
        pageBytes = await samplePageBytes(double, set);
        await runSweeper(`${label}-migrate`, ['migrate'], sweeperEnv(db.url, double));
        const local = await seedLocal(db.url, set);
        if (server.statements) await resetStatements(server.url);
        double.counters.reset();
        log(`${label}: sweeper backfill`);
        const cpu = await countCpu(server.url, name);
        const run = await runSweeper(
          label,
          ['backfill', '--from', from.toISOString(), '--to', to.toISOString(), '--json'],
          sweeperEnv(db.url, double, { SWEEPER_STRIPE_RATE: STRIPE_RATE, ...VARIANT_ENV[variant] }),
        );
        const parties = await cpu(summary(run).cpu_s);
        const pages = double.counters.status(LIST, 200);
        const statements = server.statements ? await readStatements(server.url, name) : null;
        const pathStatements = server.statements
          ? await readStatementsMatching(server.url, name, PATH_STATEMENTS)
          : null;
        const counts = reportCounts(run);
        const held = await duplicateFindings(db.url);
        const { expected, problems } = check(variant, set, counts, held);
        for (const p of problems) failures.push(`${label}: ${p}`);
        log(
          `${label}: ${run.wall_s} s, CPU ${summary(run).cpu_s} s, PostgreSQL ${parties.postgres_s} s, ` +
            `${counts.charges_scanned} charges, duplicate_effect ${counts.findings.duplicate_effect ?? 0}` +
            (problems.length ? `; ${problems.length} problem(s): ${problems.slice(0, 3).join('; ')}` : ''),
        );
        runs[variant].push({
          round: round_ + 1,
          charges: N,
          ...summary(run),
          charges_per_second: Math.round(N / run.wall_s),
          run_duration_s: counts.duration_s,
          charges_scanned: counts.charges_scanned,
          findings: counts.findings,
          repaired: counts.repaired,
          expected,
          problems,
          duplicate_findings_held: held.findings.length,
          references_index: held.references_index,
          local_rows: local,
          requests: double.counters.get(LIST),
          pages,
          statements: statements ? perPage(statements, pages, counts.charges_scanned) : null,
          path_statements: pathStatements,
          cpu_parties: parties,
        });
      } finally {
        await db.drop();
        await double.close();
      }
    }
  }

  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2
      ? (s[(s.length - 1) / 2] as number)
      : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
  };
  type Run = {
    wall_s: number;
    cpu_s: number | null;
    cpu_parties: { postgres_s: number | null; sweep_and_postgres_over_cores_s: number | null };
    statements: { per_page_top_level: number; per_page_all: number; top_level_exec_s: number } | null;
    path_statements: Record<string, { calls: number; ms: number }> | null;
  };
  const med = (variant: Variant, pick: (r: Run) => number | null | undefined) => {
    const xs = (runs[variant] as unknown as Run[]).map(pick).filter((x): x is number => typeof x === 'number');
    return xs.length ? round(median(xs), 2) : null;
  };
  const summarise = (v: Variant) => ({
    wall_s: med(v, (r) => r.wall_s),
    sweep_cpu_s: med(v, (r) => r.cpu_s),
    postgres_cpu_s: med(v, (r) => r.cpu_parties.postgres_s),
    sweep_and_postgres_over_cores_s: med(v, (r) => r.cpu_parties.sweep_and_postgres_over_cores_s),
    sql_per_page_top_level: med(v, (r) => r.statements?.per_page_top_level),
    sql_per_page_all: med(v, (r) => r.statements?.per_page_all),
    top_level_exec_s: med(v, (r) => r.statements?.top_level_exec_s),
    path_statements_ms: Object.fromEntries(
      Object.keys(PATH_STATEMENTS).map((k) => [k, med(v, (r) => r.path_statements?.[k]?.ms)]),
    ),
    path_statements_calls: Object.fromEntries(
      Object.keys(PATH_STATEMENTS).map((k) => [k, med(v, (r) => r.path_statements?.[k]?.calls)]),
    ),
  });
  const medians = { none: summarise('none'), unique: summarise('unique'), duplicates: summarise('duplicates') };
  type Figure = 'wall_s' | 'sweep_cpu_s' | 'postgres_cpu_s' | 'sweep_and_postgres_over_cores_s' | 'top_level_exec_s';
  const ratio = (a: Variant, b: Variant, k: Figure) => {
    const x = medians[a][k];
    const y = medians[b][k];
    return x !== null && y !== null && y > 0 ? round(x / y, 2) : null;
  };
  const ratios = (a: Variant, b: Variant) => ({
    wall: ratio(a, b, 'wall_s'),
    sweep_cpu: ratio(a, b, 'sweep_cpu_s'),
    postgres_cpu: ratio(a, b, 'postgres_cpu_s'),
    sweep_and_postgres_over_cores: ratio(a, b, 'sweep_and_postgres_over_cores_s'),
    top_level_exec: ratio(a, b, 'top_level_exec_s'),
  });
  const result = {
    ...resultHeader('e2e-references', code, machineAtStart),
    settings: {
      charges: N,
      window: { from: from.toISOString(), to: to.toISOString() },
      latency_ms: 0,
      server_limit: 'none',
      sweeper_stripe_rate: Number(STRIPE_RATE),
      sweeper_overrides: sweeperOverrides(),
      variant_env: VARIANT_ENV,
      memory_limit: memoryLimitSetting(),
      page_bytes: pageBytes,
      mix_per_100: MIX,
      duplicates_per_100: 1,
      pair_amount: PAIR_AMOUNT,
      reference_key: REFERENCE_KEY,
      rounds: ROUNDS,
      order: 'each round runs none, unique, duplicates in turn; medians over the rounds',
      path_statements: PATH_STATEMENTS,
      logs: LOG_DIR,
    },
    ok: failures.length === 0,
    failures,
    medians,
    duplicates_over_unique: ratios('duplicates', 'unique'),
    unique_over_none: ratios('unique', 'none'),
    duplicates_over_none: ratios('duplicates', 'none'),
    runs,
  };
  await writeResult('e2e-references', result);
  const m = (v: Variant) => medians[v];
  const lines = [
    `e2e with references (SWEEPER_STRIPE_RATE=${STRIPE_RATE}), ${N.toLocaleString('en')} charges over 3 days, medians of ${ROUNDS}`,
    ...VARIANTS.map(
      (v) =>
        `  ${v.padEnd(10)}: ${m(v).wall_s} s, sweep CPU ${m(v).sweep_cpu_s} s, PostgreSQL CPU ${m(v).postgres_cpu_s} s, ` +
        `SQL per page ${m(v).sql_per_page_top_level} top level / ${m(v).sql_per_page_all} in all`,
    ),
    `  duplicates / unique: wall ${result.duplicates_over_unique.wall}, sweep CPU ${result.duplicates_over_unique.sweep_cpu}, PostgreSQL CPU ${result.duplicates_over_unique.postgres_cpu}`,
    `  unique / none: wall ${result.unique_over_none.wall}, sweep CPU ${result.unique_over_none.sweep_cpu}, PostgreSQL CPU ${result.unique_over_none.postgres_cpu}`,
    failures.length
      ? `  FAILED: ${failures.length} problem(s):\n    ${failures.join('\n    ')}`
      : '  every run found exactly the expected findings',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (failures.length) process.exitCode = 1;
} finally {
  await server.stop();
}
