/**
 * A 256 MiB pod (issue 29): the 1,000,000-charge backfill of bench/e2e-unthrottled.ts
 * (`sweeper backfill`, the built CLI, realistic charges over 3 days, no latency, no
 * limit, SWEEPER_STRIPE_RATE = 1000) run without a memory limit and inside a memory
 * cgroup of the shipped CronJob's `resources.limits.memory` with its NODE_OPTIONS
 * (jobs/k8s/cronjob.yaml; BENCH_POD_MEMORY and BENCH_POD_NODE_OPTIONS override them), over
 * the same seeded database (each run on its own copy: CREATE DATABASE … TEMPLATE) and
 * the same Stripe double, in turns for BENCH_POD_ROUNDS rounds (default 1; the order
 * flips each round).
 *
 * Figures: whether the limited run completes (exit 0 or 3, every charge scanned, the
 * same findings as the unlimited run), the peak RSS of each (`/usr/bin/time -v`), the
 * cgroup's own peak (page cache included) and how often it hit its limit, and the
 * sweep process's CPU (user + system) limited over unlimited: the goal is at most 1.15.
 * Needs root and a cgroup memory controller (bench/memory-limit.ts).
 * Run with `npm run bench -- pod-memory` (BENCH_SCALE=0.1: 100,000 charges).
 */
import { startStripeDouble } from '../testkit/stripe-double/index.js';
import { startBenchServer } from './pg-server.js';
import {
  codeState,
  DAY_MS,
  ensureBuilt,
  expectedFindings,
  floorHour,
  HOUR_MS,
  log,
  LOG_DIR,
  machine,
  reportCounts,
  resultHeader,
  round,
  runSweeper,
  runTimed,
  ROOT,
  scaled,
  seedLocal,
  seedStripe,
  summary,
  sweeperEnv,
  sweeperOverrides,
} from './e2e-support.js';
import { makeMemoryLimit, memoryLimitUsage } from './memory-limit.js';
import { writeResult } from './support.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

const CHARGES = scaled(1_000_000);
const SHIPPED = shippedPod();
const LIMIT = process.env.BENCH_POD_MEMORY ?? SHIPPED.memory;
const ROUNDS = Math.max(1, Number(process.env.BENCH_POD_ROUNDS ?? 1));
const STRIPE_RATE = process.env.BENCH_UNTHROTTLED_RATE ?? '1000';
const GOAL = 1.15;
const POD_NODE_OPTIONS = process.env.BENCH_POD_NODE_OPTIONS ?? SHIPPED.nodeOptions;
/** BENCH_POD_TRIALS: other NODE_OPTIONS to try inside the limit (`;` between them), reported beside the headline. */
const TRIALS = (process.env.BENCH_POD_TRIALS ?? '').split(';').filter((t) => t.trim() !== '');

interface Variant {
  name: 'unlimited' | 'limited' | 'trial';
  /** Inside the memory limit, with these NODE_OPTIONS. */
  nodeOptions: string | null;
}
const VARIANTS: Variant[] = [
  { name: 'unlimited', nodeOptions: null },
  { name: 'limited', nodeOptions: POD_NODE_OPTIONS },
  ...TRIALS.map((t): Variant => ({ name: 'trial', nodeOptions: t.trim() })),
];

ensureBuilt();
const code = codeState();
const server = await startBenchServer(log);
const machineAtStart = machine(server);
const double = await startStripeDouble({ seed: 102 });
try {
  const end = floorHour(Date.now() - HOUR_MS);
  const to = new Date(end.getTime() - 3 * DAY_MS);
  const from = new Date(to.getTime() - 3 * DAY_MS);
  const source = 'bench_pod_source';
  const db = await server.createDatabase(source);
  try {
    log(`pod-memory: seeding ${CHARGES.toLocaleString('en')} realistic charges`);
    const set = seedStripe(double, 'pod', CHARGES, from, to, 9);
    await runSweeper('pod-migrate', ['migrate'], sweeperEnv(db.url, double), null);
    const local = await seedLocal(db.url, set);
    const runs: Array<Awaited<ReturnType<typeof backfill>>> = [];
    for (let r = 0; r < ROUNDS; r += 1) {
      const order = r % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
      for (const [v, variant] of order.entries()) runs.push(await backfill(variant, r, v, source, from, to));
    }
    const of = (name: Variant['name']) => runs.filter((x) => x.variant === name);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    const unlimited = of('unlimited');
    const limited = of('limited');
    const expected = expectedFindings(set);
    const sameFindings = limited.every(
      (l) => l.charges_scanned === CHARGES && JSON.stringify(l.findings) === JSON.stringify(unlimited[0]?.findings),
    );
    const completes = limited.every((l) => l.completed) && sameFindings;
    const cpu = (xs: typeof runs) => median(xs.map((x) => x.cpu_s ?? Number.NaN));
    const ratio = completes ? round(cpu(limited) / cpu(unlimited), 2) : null;
    const result = {
      ...resultHeader('e2e-pod-memory', code, machineAtStart),
      settings: {
        charges: CHARGES,
        window: { from: from.toISOString(), to: to.toISOString() },
        memory_limit: LIMIT,
        limited_node_options: POD_NODE_OPTIONS,
        trials: TRIALS,
        rounds: ROUNDS,
        sweeper_stripe_rate: Number(STRIPE_RATE),
        sweeper_overrides: sweeperOverrides(),
        logs: LOG_DIR,
      },
      local_rows: local,
      expected,
      runs,
      completes,
      unlimited: { cpu_s: cpu(unlimited), max_rss_mb: median(unlimited.map((x) => x.max_rss_mb ?? Number.NaN)) },
      limited: {
        cpu_s: completes ? cpu(limited) : null,
        max_rss_mb: median(limited.map((x) => x.max_rss_mb ?? Number.NaN)),
        cgroup_peak_mb: Math.max(...limited.map((x) => x.cgroup?.peak_mb ?? 0)),
        limit_hits: Math.max(...limited.map((x) => x.cgroup?.limit_hits ?? 0)),
      },
      cpu_limited_over_unlimited: ratio,
      goal: GOAL,
    };
    await writeResult('e2e-pod-memory', result);
    process.stdout.write(
      [
        `backfill of ${CHARGES.toLocaleString('en')} charges inside ${LIMIT}: completes ${completes ? 'yes' : 'no'}`,
        ...runs.map(
          (x) =>
            `  ${x.variant}${x.node_options ? ` (NODE_OPTIONS=${x.node_options})` : ''}, round ${x.round + 1}: exit ${x.exit_code}, ${x.wall_s} s, CPU ${x.cpu_s} s, peak RSS ${x.max_rss_mb} MB` +
            (x.cgroup ? `, cgroup peak ${x.cgroup.peak_mb} MB, limit hit ${x.cgroup.limit_hits} times` : ''),
        ),
        `  CPU limited / unlimited = ${ratio ?? 'n/a'} (goal <= ${GOAL})`,
      ].join('\n') + '\n',
    );
  } finally {
    await db.drop();
  }
} finally {
  await double.close();
  await server.stop();
}

/**
 * What the shipped CronJob's container gets (jobs/k8s/cronjob.yaml): its memory limit and
 * NODE_OPTIONS, measured unless BENCH_POD_MEMORY / BENCH_POD_NODE_OPTIONS say otherwise.
 */
function shippedPod(): { memory: string; nodeOptions: string } {
  type Container = {
    env?: Array<{ name: string; value?: string }>;
    resources?: { limits?: { memory?: string } };
  };
  const docs = parseAllDocuments(readFileSync(path.join(ROOT, 'jobs/k8s/cronjob.yaml'), 'utf8')).map(
    (d) =>
      d.toJS() as {
        kind?: string;
        spec?: { jobTemplate?: { spec?: { template?: { spec?: { containers?: Container[] } } } } };
      },
  );
  const container = docs.find((d) => d.kind === 'CronJob')?.spec?.jobTemplate?.spec?.template?.spec?.containers?.[0];
  const memory = container?.resources?.limits?.memory;
  if (!memory) throw new Error('jobs/k8s/cronjob.yaml: no resources.limits.memory on its container');
  return { memory, nodeOptions: container.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '' };
}

/** One backfill of the seeded window on a copy of `source`, limited or not. */
async function backfill(variant: Variant, r: number, v: number, source: string, from: Date, to: Date) {
  const label = `pod-${variant.name}${variant.name === 'trial' ? v : ''}-${r + 1}`;
  const copy = await server.createDatabase(`bench_pod_${r}_${v}`, source);
  const limit = variant.nodeOptions === null ? null : makeMemoryLimit(LIMIT, `pod-${r}-${v}`);
  try {
    double.counters.reset();
    log(`${label}: sweeper backfill${limit ? ` inside ${LIMIT}` : ''}`);
    // Not runSweeper: a run the limit kills is a figure (completes: no), not a failed benchmark.
    const run = await runTimed(
      label,
      [path.join(ROOT, 'bin/sweeper.js'), 'backfill', '--from', from.toISOString(), '--to', to.toISOString(), '--json'],
      sweeperEnv(copy.url, double, {
        SWEEPER_STRIPE_RATE: STRIPE_RATE,
        ...(variant.nodeOptions ? { NODE_OPTIONS: variant.nodeOptions } : {}),
      }),
      limit,
    );
    const counts = reportCounts(run);
    const completed = run.exit_code === 0 || run.exit_code === 3;
    const cgroup = limit ? memoryLimitUsage(limit) : null;
    log(
      `${label}: exit ${run.exit_code}, ${run.wall_s} s, CPU ${summary(run).cpu_s} s, peak RSS ${run.max_rss_mb} MB` +
        (cgroup ? `, cgroup peak ${cgroup.peak_mb} MB, limit hit ${cgroup.limit_hits} times` : ''),
    );
    return {
      variant: variant.name,
      node_options: variant.nodeOptions,
      round: r,
      ...summary(run),
      completed,
      charges_scanned: counts.charges_scanned,
      findings: counts.findings,
      repaired: counts.repaired,
      cgroup,
    };
  } finally {
    limit?.remove();
    await copy.drop();
  }
}
