/**
 * What the end-to-end benchmarks share: the build, the machine, the workload (charges
 * in the Stripe double and the local claims and payment rows they are judged
 * against), and the CLI run as a user runs it, timed from spawn to exit, with its
 * peak RSS and CPU time.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { StripeDouble } from '../testkit/stripe-double/index.js';
import { ensureDayPartitions, utcDay } from '../src/db/partitions.js';
import type { BenchServer, StatementCounts } from './pg-server.js';
import { insideLimit, memoryLimitFromEnv, type MemoryLimit } from './memory-limit.js';
import { DAY_MS, HOUR_MS } from '../src/time/units.js';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const LIST = 'GET /v1/charges';
export { DAY_MS, HOUR_MS } from '../src/time/units.js';

/** BENCH_SCALE multiplies every charge count (1 = the sizes; 0.05 for a smoke run of a few minutes). */
export const SCALE = (() => {
  const scale = Number(process.env.BENCH_SCALE ?? 1);
  if (!(scale > 0) || !Number.isFinite(scale))
    throw new Error(`BENCH_SCALE must be a positive number (got ${process.env.BENCH_SCALE})`);
  return scale;
})();

export function scaled(n: number, min = 100): number {
  return Math.max(min, Math.round(n * SCALE));
}

/** One `npm run bench` is one session: ratios are only computed between results of the same session. */
export const SESSION = process.env.BENCH_SESSION ?? `single-${new Date().toISOString()}`;

const started = performance.now();
export function log(line: string): void {
  const s = ((performance.now() - started) / 1000).toFixed(1).padStart(7);
  process.stderr.write(`[${s} s] ${line}\n`);
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Where the CLI's logs go (not committed). */
export const LOG_DIR = path.join(tmpdir(), `sweeper-bench-${SESSION.replace(/[^A-Za-z0-9-]/g, '')}`);

/**
 * Builds dist/ when it is missing or older than a source file: the benchmark runs the
 * CLI users run. Under `npm run bench` the session built it once at its start
 * (BENCH_BUILT=1), so every benchmark of the session measures the same code.
 */
export function ensureBuilt(): void {
  if (process.env.BENCH_BUILT === '1') return;
  const entry = path.join(ROOT, 'dist/cli/main.js');
  const builtAt = existsSync(entry) ? statSync(entry).mtimeMs : 0;
  const newest = newestMtime(path.join(ROOT, 'src'));
  if (builtAt >= newest) return;
  log('dist/ is older than src/: npm run build');
  const result = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) throw new Error('npm run build failed');
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

/** The code measured: the commit, and the files under src/ and migrations/ that differ from it. */
export function codeState(): { commit: string; uncommitted: string[] } {
  if (process.env.BENCH_CODE) return JSON.parse(process.env.BENCH_CODE) as { commit: string; uncommitted: string[] };
  const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
  const status = spawnSync('git', ['status', '--porcelain', '--', 'src', 'migrations'], {
    cwd: ROOT,
    encoding: 'utf8',
  }).stdout;
  return {
    commit,
    uncommitted: status
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(3)),
  };
}

/** The fields every end-to-end result starts with: which benchmark, session, scale, code and machine. */
export function resultHeader(benchmark: string, code: unknown, machineAtStart: Record<string, unknown>) {
  return {
    benchmark,
    session: SESSION,
    date: new Date().toISOString(),
    scale: SCALE,
    code,
    machine: machineAtStart,
    load_average_at_end: loadavg().map((l) => round(l, 2)),
  };
}

export function machine(server: BenchServer): Record<string, unknown> {
  const cpu = cpus();
  return {
    cores: cpu.length,
    cpu_model: cpu[0]?.model ?? 'unknown',
    memory_gb: round(totalmem() / 2 ** 30, 1),
    os: `${process.platform} ${release()}`,
    node: process.version,
    postgres: server.version.split(' on ')[0],
    postgres_source: server.source,
    postgres_settings: server.settings,
    load_average_at_start: loadavg().map((l) => round(l, 2)),
  };
}

/** Environment variables of the sweeper set in the bench's own environment (passed through, and reported). */
export function sweeperOverrides(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(([k, v]) => k.startsWith('SWEEPER_') && v !== undefined && v !== ''),
  ) as Record<string, string>;
}

// ---------------------------------------------------------------------------------------------
// The workload

/**
 * What each charge is, locally: 90% matched (a completed claim and a payment row that
 * agree), 10% producing findings or repairs, none of which needs a Stripe re-read
 * (those would be requests outside the listing, against the same budget).
 */
export const KINDS = [
  'matched',
  'orphan_charge',
  'claim_without_effect',
  'effect_without_claim',
  'status_drift',
  'amount_mismatch',
  'unattributed_charge',
] as const;
export type Kind = (typeof KINDS)[number];
/** Per 100 charges. */
export const MIX: Record<Kind, number> = {
  matched: 90,
  orphan_charge: 3,
  claim_without_effect: 2,
  effect_without_claim: 2,
  status_drift: 1,
  amount_mismatch: 1,
  unattributed_charge: 1,
};
/** Which of these the sweep repairs (the others stay open findings). */
export const REPAIRED: readonly Kind[] = [
  'orphan_charge',
  'claim_without_effect',
  'effect_without_claim',
  'status_drift',
];

const KIND_BY_SLOT: Kind[] = KINDS.flatMap((kind) => Array<Kind>(MIX[kind]).fill(kind));

export function kindOf(index: number): Kind {
  return KIND_BY_SLOT[index % 100] as Kind;
}

export interface SeededSet {
  tag: string;
  n: number;
  ids: string[];
  created: Float64Array;
  amount: Float64Array;
  from: Date;
  to: Date;
  /** The tenant of charge `index` (default: `tenantOf`), for its claim and payment row. */
  tenantOf?: (index: number) => string;
  /** The business reference of charge `index`, stored on its claim and payment row (default: none). */
  referenceOf?: (index: number) => string | null;
}

const TENANTS = 53;
export const tenantOf = (index: number) => `tenant_${(index * 7919) % TENANTS}`;
export const keyOf = (tag: string, index: number) => `${tag}-order-${index}`;

/** `n` realistic (about 2 KB) charges on the platform account, spread over `[from, to)`, attributed per the mix. */
export function seedStripe(
  double: StripeDouble,
  tag: string,
  n: number,
  from: Date,
  to: Date,
  seed: number,
): SeededSet {
  const set: SeededSet = {
    tag,
    n,
    ids: new Array<string>(n),
    created: new Float64Array(n),
    amount: new Float64Array(n),
    from,
    to,
  };
  double.seedCharges(null, n, {
    from,
    to,
    seed,
    realistic: true,
    metadataOf: (c): Record<string, string> => {
      set.ids[c.index] = c.id;
      set.created[c.index] = c.created;
      set.amount[c.index] = c.amount;
      if (kindOf(c.index) === 'unattributed_charge') return { source: 'dashboard', note: 'refund goodwill' };
      return { tenant_id: tenantOf(c.index), idempotency_key: keyOf(tag, c.index), order_id: `ord_${tag}_${c.index}` };
    },
  });
  return set;
}

/** What the sweep should find in a set: per category, and how many of them it repairs. */
export function expectedFindings(set: SeededSet): Record<Kind, number> {
  const counts = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>;
  for (let i = 0; i < set.n; i += 1) counts[kindOf(i)] += 1;
  return counts;
}

/**
 * The local side of a seeded set: claims and payment rows as the payment service
 * would have written them, in bulk. Inserted with `session_replication_role = replica`
 * (no triggers): the rows are unique by construction, and this is set-up, not what is
 * measured. With the triggers off, the claims' directory (idempotency_key_directory) is filed here,
 * in the same statement, as the insert trigger would have.
 */
export async function seedLocal(dbUrl: string, set: SeededSet): Promise<{ claims: number; payments: number }> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  let claims = 0;
  let payments = 0;
  try {
    await ensureDayPartitions(client, { from: utcDay(new Date(set.from.getTime() - DAY_MS)), to: utcDay(set.to) });
    await client.query('SET session_replication_role = replica');
    // Only a set with references names the column (a schema from before it can be seeded too).
    const references = set.referenceOf !== undefined;
    const CHUNK = 20_000;
    for (let first = 0; first < set.n; first += CHUNK) {
      const c = {
        tenant: [] as string[],
        key: [] as string[],
        charge: [] as string[],
        created: [] as number[],
        amount: [] as number[],
        done: [] as boolean[],
        reference: [] as Array<string | null>,
      };
      const p = {
        tenant: [] as string[],
        key: [] as string[],
        charge: [] as string[],
        created: [] as number[],
        amount: [] as number[],
        disputed: [] as boolean[],
        reference: [] as Array<string | null>,
      };
      const tenant = set.tenantOf ?? tenantOf;
      for (let i = first; i < Math.min(set.n, first + CHUNK); i += 1) {
        const kind = kindOf(i);
        const base = {
          tenant: tenant(i),
          key: keyOf(set.tag, i),
          charge: set.ids[i] as string,
          created: set.created[i] as number,
          amount: set.amount[i] as number,
          reference: set.referenceOf?.(i) ?? null,
        };
        if (
          kind === 'matched' ||
          kind === 'status_drift' ||
          kind === 'amount_mismatch' ||
          kind === 'claim_without_effect'
        ) {
          c.tenant.push(base.tenant);
          c.key.push(base.key);
          c.charge.push(base.charge);
          c.created.push(base.created);
          c.amount.push(base.amount);
          c.done.push(kind !== 'claim_without_effect');
          c.reference.push(base.reference);
        }
        if (
          kind === 'matched' ||
          kind === 'status_drift' ||
          kind === 'amount_mismatch' ||
          kind === 'effect_without_claim'
        ) {
          p.tenant.push(base.tenant);
          p.key.push(base.key);
          p.charge.push(base.charge);
          p.created.push(base.created);
          p.amount.push(kind === 'amount_mismatch' ? base.amount + 1 : base.amount);
          p.disputed.push(kind === 'status_drift');
          p.reference.push(base.reference);
        }
      }
      if (c.key.length > 0) {
        const r = await client.query(
          `WITH filed AS (
             INSERT INTO idempotency_key_directory (tenant_id, key, created_at)
             SELECT r.tenant, r.key, to_timestamp(r.created - 2)
               FROM unnest($1::text[], $2::text[], $4::float8[]) AS r(tenant, key, created)
           )
           INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, attempt, downstream_key, account_id,
                                         response_status, response_body, response_outcome, amount, currency, created_at, completed_at, updated_at
                                         ${references ? ', reference' : ''})
           SELECT r.tenant, r.key, md5(r.key || ':request'),
                  CASE WHEN r.done THEN 'completed' ELSE 'in_flight' END,
                  CASE WHEN r.done THEN NULL ELSE to_timestamp(r.created - 2) + interval '2 minutes' END,
                  1, 'sweeper_' || md5(r.tenant || chr(31) || r.key), NULL,
                  CASE WHEN r.done THEN 200 END,
                  CASE WHEN r.done THEN jsonb_build_object('object', 'charge_result', 'payment_intent', NULL, 'charge', r.charge,
                                                           'status', 'succeeded', 'amount', r.amount, 'currency', 'usd') END,
                  CASE WHEN r.done THEN 'success' END,
                  r.amount, 'usd', to_timestamp(r.created - 2),
                  CASE WHEN r.done THEN to_timestamp(r.created + 1) END,
                  CASE WHEN r.done THEN to_timestamp(r.created + 1) ELSE to_timestamp(r.created - 2) END
                  ${references ? ', r.reference' : ''}
             FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::bigint[], $6::bool[], $7::text[])
                  AS r(tenant, key, charge, created, amount, done, reference)`,
          [c.tenant, c.key, c.charge, c.created, c.amount, c.done, c.reference],
        );
        claims += r.rowCount ?? 0;
      }
      if (p.key.length > 0) {
        const r = await client.query(
          `INSERT INTO payments (charge_id, tenant_id, idempotency_key, payment_intent_id, account_id, amount, currency, status,
                                 amount_refunded, disputed, created_at, updated_at${references ? ', reference' : ''})
           SELECT r.charge, r.tenant, r.key, NULL, NULL, r.amount, 'usd', 'succeeded', 0, r.disputed, to_timestamp(r.created), to_timestamp(r.created + 1)
                  ${references ? ', r.reference' : ''}
             FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::bigint[], $6::bool[], $7::text[])
                  AS r(tenant, key, charge, created, amount, disputed, reference)`,
          [p.tenant, p.key, p.charge, p.created, p.amount, p.disputed, p.reference],
        );
        payments += r.rowCount ?? 0;
      }
    }
    await client.query('RESET session_replication_role');
    await client.query('ANALYZE idempotency_keys');
    await client.query('ANALYZE payments');
  } finally {
    await client.end();
  }
  return { claims, payments };
}

/** Bytes of one full page of the listing (100 charges), as the double sends it. */
export async function samplePageBytes(double: StripeDouble, set: SeededSet): Promise<number> {
  const url = `${double.url}/v1/charges?limit=100&created[gte]=${Math.floor(set.from.getTime() / 1000)}&created[lt]=${Math.floor(set.to.getTime() / 1000)}`;
  const response = await fetch(url, { headers: { authorization: 'Bearer sk_test_bench' } });
  return (await response.arrayBuffer()).byteLength;
}

// ---------------------------------------------------------------------------------------------
// The CLI, as a user runs it

export interface CliRun {
  label: string;
  args: string[];
  exit_code: number | null;
  /** From spawn to exit, as a user waits for it. */
  wall_s: number;
  /** Peak RSS of the sweeper process. */
  max_rss_mb: number | null;
  rss_method: string;
  cpu_user_s: number | null;
  cpu_system_s: number | null;
  /** The `--json` objects it printed. */
  reports: Array<Record<string, unknown>>;
  log_file: string;
}

const TIME = '/usr/bin/time';

let memoryLimit: MemoryLimit | null | undefined;
/** The cgroup BENCH_MEMORY_LIMIT asks for, made on first use and removed at exit. */
function cgroupLimit(): MemoryLimit | null {
  if (memoryLimit === undefined) {
    const made = memoryLimitFromEnv();
    memoryLimit = made;
    // At exit the timed processes are gone; one left behind (a killed run's) keeps the
    // cgroup busy, and an exit handler must not throw over that.
    if (made) process.on('exit', () => tryRemove(made));
  }
  return memoryLimit;
}

function tryRemove(limit: MemoryLimit): void {
  try {
    limit.remove();
  } catch (error) {
    console.error(`BENCH_MEMORY_LIMIT: could not remove the cgroup (${String(error)})`);
  }
}

/** For a result's settings: the memory limit the timed processes ran under. */
export function memoryLimitSetting(): string {
  const limit = cgroupLimit();
  return limit ? `${limit.limit} (memory cgroup)` : 'none';
}

/**
 * `node bin/sweeper.js <args>` (the built CLI) with `env` on top of a clean
 * environment (the bench's own SWEEPER_* variables pass through), stdout parsed as
 * JSON lines, stderr to a log file. Exit 0 and 3 (findings open) are success.
 */
export async function runSweeper(
  label: string,
  args: string[],
  env: Record<string, string>,
  limit: MemoryLimit | null = cgroupLimit(),
): Promise<CliRun> {
  const run = await runTimed(label, [path.join(ROOT, 'bin/sweeper.js'), ...args], env, limit);
  if (run.exit_code !== 0 && run.exit_code !== 3) {
    const tail = readFileSync(run.log_file, 'utf8').split('\n').slice(-15).join('\n');
    throw new Error(`sweeper ${args.join(' ')} exited ${run.exit_code} (${label}); log ${run.log_file}:\n${tail}`);
  }
  return { ...run, args };
}

/**
 * `node <argv>` timed from spawn to exit, under /usr/bin/time -v when the machine has
 * it (peak RSS and CPU time of the process), else with its VmHWM sampled from /proc.
 * The environment: the bench's own minus database and Stripe settings, plus `env`.
 * `limit`: the memory cgroup it runs in (BENCH_MEMORY_LIMIT's unless given; null: none).
 */
export async function runTimed(
  label: string,
  argv: string[],
  env: Record<string, string>,
  limit: MemoryLimit | null = cgroupLimit(),
): Promise<CliRun> {
  mkdirSync(LOG_DIR, { recursive: true });
  const logFile = path.join(LOG_DIR, `${label}.log`);
  const timeFile = path.join(LOG_DIR, `${label}.time`);
  const useTime = existsSync(TIME);
  // BENCH_NODE_ARGS: flags for the timed node (e.g. --cpu-prof, which NODE_OPTIONS refuses).
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const timed: [string, string[]] = useTime
    ? [TIME, ['-v', '-o', timeFile, process.execPath, ...nodeArgs, ...argv]]
    : [process.execPath, [...nodeArgs, ...argv]];
  const [file, args] = limit ? insideLimit(limit, ...timed) : timed;
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(DATABASE_URL|STRIPE_|PG[A-Z]+$)/.test(k)),
  ) as Record<string, string>;
  const fd = openSync(logFile, 'w');
  const t0 = performance.now();
  const child = spawn(file, args, { cwd: ROOT, env: { ...clean, ...env }, stdio: ['ignore', 'pipe', fd] });
  let stdout = '';
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => (stdout += chunk));
  let hwmKb = 0;
  const poll = useTime
    ? null
    : setInterval(() => {
        try {
          const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
          if (m) hwmKb = Math.max(hwmKb, Number(m[1]));
        } catch {
          // gone
        }
      }, 100);
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  const wall = (performance.now() - t0) / 1000;
  if (poll) clearInterval(poll);
  closeSync(fd);
  let maxRssKb: number | null = hwmKb || null;
  let user: number | null = null;
  let system: number | null = null;
  if (useTime && existsSync(timeFile)) {
    const t = readFileSync(timeFile, 'utf8');
    maxRssKb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(t)?.[1]) || null;
    user = Number(/User time \(seconds\): ([\d.]+)/.exec(t)?.[1] ?? NaN);
    system = Number(/System time \(seconds\): ([\d.]+)/.exec(t)?.[1] ?? NaN);
  }
  const reports = stdout
    .split('\n')
    .filter((l) => l.trim().startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    label,
    args: argv,
    exit_code: code,
    wall_s: round(wall, 2),
    max_rss_mb: maxRssKb === null ? null : Math.round(maxRssKb / 1024),
    rss_method: useTime
      ? '/usr/bin/time -v (maximum resident set size)'
      : '/proc/<pid>/status VmHWM, sampled every 100 ms',
    cpu_user_s: user,
    cpu_system_s: system,
    reports,
    log_file: logFile,
  };
}

/** The environment of every sweeper run: the database, the double, and what the caller sets. */
export function sweeperEnv(
  dbUrl: string,
  double: StripeDouble,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    DATABASE_URL: dbUrl,
    STRIPE_API_KEY: 'sk_test_bench',
    STRIPE_API_BASE: double.url,
    ...sweeperOverrides(),
    ...extra,
  };
}

/** A finding report's counts, summed over the accounts it printed. */
export function reportCounts(run: CliRun): {
  charges_scanned: number;
  findings: Record<string, number>;
  repaired: Record<string, number>;
  duration_s: number;
} {
  const findings: Record<string, number> = {};
  const repaired: Record<string, number> = {};
  let scanned = 0;
  let duration = 0;
  for (const r of run.reports) {
    scanned += Number(r.charges_scanned ?? 0);
    duration += Number(r.duration_ms ?? 0) / 1000;
    for (const [k, v] of Object.entries((r.findings ?? {}) as Record<string, number>))
      if (v) findings[k] = (findings[k] ?? 0) + v;
    for (const [k, v] of Object.entries((r.repaired ?? {}) as Record<string, number>))
      if (v) repaired[k] = (repaired[k] ?? 0) + v;
  }
  return { charges_scanned: scanned, findings, repaired, duration_s: round(duration, 2) };
}

/** The hour boundary at or before `at`. */
export function floorHour(at: number): Date {
  return new Date(Math.floor(at / HOUR_MS) * HOUR_MS);
}

export function perPage(s: StatementCounts, pages: number, charges: number) {
  return {
    top_level: s.top_level,
    all: s.all,
    pages,
    per_page_top_level: round(s.top_level / pages, 2),
    per_page_all: round(s.all / pages, 2),
    per_100_charges_top_level: round((s.top_level / charges) * 100, 2),
    per_100_charges_all: round((s.all / charges) * 100, 2),
    evicted_entries: s.evicted,
    top_level_exec_s: round(s.top_level_ms / 1000, 2),
    most_called: s.top,
    most_time: s.most_time,
  };
}

export function summary(run: CliRun) {
  return {
    wall_s: run.wall_s,
    exit_code: run.exit_code,
    max_rss_mb: run.max_rss_mb,
    rss_method: run.rss_method,
    cpu_s: run.cpu_user_s === null ? null : round(run.cpu_user_s + (run.cpu_system_s ?? 0), 2),
    args: run.args.slice(1),
    log_file: run.log_file,
  };
}
