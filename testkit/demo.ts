import { Writable } from 'node:stream';
import { webhookBody } from '../src/alerts/webhook.js';
import { readOpenFindings } from '../src/alerts/open-findings.js';
import { ALERT_CATEGORIES } from '../src/alerts/categories.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { migrate } from '../src/db/migrate.js';
import { ensureDayPartitions, partitionDays, utcDay } from '../src/db/partitions.js';
import { openScratchDatabase } from './postgres-server.js';
import { buildScenario, buildWeekOldPayment, refundAtStripe } from './simulator.js';
import { startStripeDouble, type StripeDouble } from './stripe-double/index.js';
import { silentLogger } from '../src/log.js';
import { REPORT_COLUMNS, writeReport } from '../src/report/findings-report.js';
import { createStripeProvider } from '../src/providers/stripe/provider.js';
import { CATEGORIES } from '../src/sweep/categories.js';
import { RUNBOOK } from '../src/sweep/runbook.js';
import { providerSweepDeps } from '../src/sweep/provider.js';
import { sweep, sweepOptions, type SweepOptions, type SweepReport } from '../src/sweep/sweep.js';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../src/time/units.js';

export interface DemoOptions {
  seed: number;
  keep: boolean;
  /** A server to create the demo database on; unset = a throwaway PostgreSQL. */
  databaseUrl?: string;
  print: (text: string) => void;
}

export interface DemoResult {
  /** The exit code `sweeper run` would have ended with after the first sweep. */
  firstRunExitCode: number;
  secondRunRepairs: number;
  /** With --keep: how to connect, and how to stop everything. */
  kept?: { url: string; stop(): Promise<void> };
}

/**
 * The whole story on a throwaway database and the Stripe double: payment traffic with
 * realistic failures, a sweep that repairs what is safe and reports the rest, a second
 * sweep with nothing left to repair, a refund at Stripe on a week-old payment that a
 * scheduled run catches through Stripe's events, and a report excerpt.
 */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const { print } = options;
  const database = await openScratchDatabase(options.databaseUrl, `sweeper_demo_${Date.now()}`);
  const double = await startStripeDouble({ seed: options.seed });
  const pool = createPool(database.url, { max: 8 });
  let kept = false;
  try {
    print(`PostgreSQL: ${database.description}\nStripe: an in-memory Stripe double at ${double.url}\n`);
    await migrate(pool);
    await ensureDayPartitions(pool, partitionDays(new Date(), 7 * 24 * HOUR_MS));

    const base = new Date(Math.floor(Date.now() / HOUR_MS) * HOUR_MS - 3 * HOUR_MS);
    // A week before the window: its day may lie just past the retention's partitions.
    const weekBefore = new Date(base.getTime() - 7 * DAY_MS);
    await ensureDayPartitions(pool, { from: utcDay(weekBefore), to: utcDay(weekBefore) });
    const weekOld = await buildWeekOldPayment(pool, double, weekBefore, options.seed);
    print(`1. Payment traffic through the claim library (seed ${options.seed}), starting ${base.toISOString()}:`);
    print(
      `   - a week before that (${utcDay(weekBefore)}): an ordinary card payment, ${weekOld.key}, ${money(weekOld.amount)}`,
    );
    // Swept back then: late changes are judged only where some run has swept (docs/judgement.md "Late changes").
    await sweepOnce(pool, double, {
      mode: 'backfill',
      window: { from: new Date(weekBefore.getTime() - HOUR_MS), to: new Date(weekBefore.getTime() + 2 * HOUR_MS) },
    });
    print('     swept then by an earlier backfill of its hours: matched, nothing to say');
    const scenario = await buildScenario(pool, double, new Date(base.getTime() + MINUTE_MS), options.seed, {
      payout: true,
    });
    for (const line of scenario.story) print(`   - ${line}`);

    const window = { from: base, to: new Date(base.getTime() + 150 * MINUTE_MS) };
    print(`\n2. sweeper backfill --from ${window.from.toISOString()} --to ${window.to.toISOString()}\n`);
    const [first] = await sweepOnce(pool, double, { mode: 'backfill', window });
    if (!first) throw new Error('the demo sweep returned no report');
    print(table(first));
    await printPayouts(pool, first, print);
    print('\n   Left for a person, and why:');
    const open = await pool.query<{
      id: number;
      category: keyof typeof RUNBOOK;
      subject: string;
      reason: string | null;
    }>(
      `SELECT id, category, subject, details ->> 'reason' AS reason FROM recon_findings WHERE state = 'open' ORDER BY category, id`,
    );
    for (const f of open.rows) {
      // Why (the finding's own reason when it has one), then what to do: never the reason twice.
      print(
        `   #${f.id} ${f.category}: ${f.reason ?? RUNBOOK[f.category].means}.\n        → to do: ${RUNBOOK[f.category].person}`,
      );
    }
    const firstRunExitCode = first.unreconciled > 0 ? 3 : 0;
    const openNow = await readOpenFindings(pool, first.account);
    const body = webhookBody(
      {
        runId: first.run_id,
        account: first.account,
        now: new Date(),
        counts: Object.fromEntries(ALERT_CATEGORIES.map((c) => [c, openNow.openByCategory[c]])) as never,
        unreconciled: first.unreconciled,
        oldestOpenAt: openNow.oldestOpenAt,
        changes: [],
      },
      new Date(),
    );
    print(
      `\n   The webhook alert it would send (signed with X-Sweeper-Signature):\n${indent(JSON.stringify(body, null, 2), 5)}`,
    );
    print(
      `\n   Exit code: ${firstRunExitCode} (${firstRunExitCode === 3 ? 'unreconciled findings are open: alerts fire; the shipped CronJobs pass --findings-exit 0, so only a failed run fails the Job' : 'reconciled'})`,
    );

    print('\n3. The same sweep again:');
    const [second] = await sweepOnce(pool, double, { mode: 'backfill', window });
    const secondRunRepairs = Object.values(second?.repaired ?? {}).reduce((a, b) => a + b, 0);
    print(
      `   repaired ${secondRunRepairs}; matched ${second?.findings.matched}; still open ${second?.unreconciled} (the same findings, last seen by this run)`,
    );
    // More matched than the first time is the repairs at work, not new traffic: say so.
    const nowAgree = (second?.findings.matched ?? 0) - first.findings.matched;
    if (nowAgree > 0)
      print(
        `   matched ${first.findings.matched} → ${second?.findings.matched}: the ${nowAgree} charges the first sweep repaired now agree with their claim and payment row, so they count as matched`,
      );

    // Fifteen minutes back: a scheduled run reads Stripe's events up to SWEEPER_SETTLE (10 min) behind now.
    refundAtStripe(double, weekOld, new Date(Date.now() - 15 * MINUTE_MS));
    print(
      `\n4. A refund on last week's payment: ${weekOld.key} (${money(weekOld.amount)}) is refunded in full at Stripe, fifteen minutes ago; no window lists its charge again.`,
    );
    // A first scheduled run covering the last hour (none of the story's traffic), without the
    // daily deep re-read (3 days back, not as far as this charge anyway): the event is the story.
    const [scheduled] = await sweepOnce(pool, double, { mode: 'run', firstRunLookbackMs: HOUR_MS, deepReadEveryMs: 0 });
    const {
      rows: [row],
    } = await pool.query<{ amount_refunded: number }>('SELECT amount_refunded FROM payments WHERE charge_id = $1', [
      weekOld.chargeId,
    ]);
    print(
      `   sweeper run reads Stripe's events since its cursor: ${scheduled?.changes?.events ?? 0} events, ${scheduled?.changes?.charges ?? 0} charge re-read → ` +
        `status_drift repaired ${scheduled?.repaired.status_drift ?? 0}; the payment row now says refunded ${money(Number(row?.amount_refunded ?? 0))} of ${money(weekOld.amount)}`,
    );

    print('\n5. sweeper report --status open --format csv (excerpt):');
    let csv = '';
    await writeReport(
      pool,
      { status: 'open' },
      'csv',
      new Writable({ write: (c: Buffer, _e, done) => ((csv += c.toString()), done()) }),
    );
    const shown = ['id', 'category', 'state', 'charge_id', 'tenant_id', 'idempotency_key', 'charge_amount'];
    const columns = [...shown, 'effect_amount', 'currency'].map((name) =>
      (REPORT_COLUMNS as readonly string[]).indexOf(name),
    );
    for (const line of csv.trim().split('\n').slice(0, 6)) print(`   ${pick(line, columns)}`);

    if (options.keep) {
      kept = true;
      return {
        firstRunExitCode,
        secondRunRepairs,
        kept: {
          url: database.url,
          async stop() {
            await pool.end();
            await double.close();
            await database.close();
          },
        },
      };
    }
    return { firstRunExitCode, secondRunRepairs };
  } finally {
    if (!kept) {
      await pool.end();
      await double.close();
      await database.close();
    }
  }
}

/** A sweep as `sweeper backfill` or `sweeper run` wires it (src/cli/commands/sweep.ts), against the double. */
async function sweepOnce(
  pool: Pool,
  double: StripeDouble,
  options: Partial<SweepOptions> & Pick<SweepOptions, 'mode'>,
): Promise<SweepReport[]> {
  const provider = createStripeProvider({ apiKey: 'sk_test_demo', apiBase: double.url, ratePerSecond: 100 });
  return sweep(
    { pool, clock: () => new Date(), logger: silentLogger(), ...providerSweepDeps(provider) },
    sweepOptions({ accounts: ['platform'], sliceMs: 30 * MINUTE_MS, ...options }),
  );
}

/** The payout the story's account was paid, as the sweep reconciled it, and the fees it put on the payment rows. */
async function printPayouts(pool: Pool, report: SweepReport, print: (line: string) => void): Promise<void> {
  const p = report.payouts;
  if (!p) return;
  const { rows } = await pool.query<{
    id: string;
    amount: number;
    transactions: number;
    net: number;
    residual: number;
  }>(
    `SELECT payout_id AS id, amount::float8 AS amount, transactions, net::float8 AS net, residual::float8 AS residual
       FROM recon_payouts WHERE itemised ORDER BY created`,
  );
  for (const r of rows)
    print(
      `\n   payout ${r.id}, ${money(r.amount)}: ${r.transactions} balance transactions net ${money(r.net)}, residual ${money(r.residual)}; ` +
        `${p.linked} of its charge, refund and dispute transactions linked to their payment rows`,
    );
  const fees = await pool.query<{ key: string; amount: number; fee: number; net: number }>(
    `SELECT idempotency_key AS key, amount::float8 AS amount, fee::float8 AS fee, net::float8 AS net
       FROM payments WHERE fee IS NOT NULL ORDER BY created_at LIMIT 3`,
  );
  if (fees.rows.length > 0)
    print(
      `   fees recorded on ${p.fees} payment rows, e.g. ${fees.rows.map((f) => `${f.key} ${money(f.amount)}: fee ${money(f.fee)}, net ${money(f.net)}`).join('; ')}`,
    );
}

function money(cents: number): string {
  return `${(cents / 100).toFixed(2)} USD`;
}

function table(r: SweepReport): string {
  const lines = [`   ${'category'.padEnd(24)}${'found'.padStart(6)}${'repaired'.padStart(10)}   what the sweeper did`];
  for (const c of CATEGORIES) {
    if (r.findings[c] === 0) continue;
    const did = c === 'matched' ? 'nothing to do' : RUNBOOK[c].sweeper;
    lines.push(`   ${c.padEnd(24)}${String(r.findings[c]).padStart(6)}${String(r.repaired[c]).padStart(10)}   ${did}`);
  }
  lines.push(`\n   charges scanned ${r.charges_scanned}; unreconciled (open findings) ${r.unreconciled}`);
  return lines.join('\n');
}

function pick(csvLine: string, columns: number[]): string {
  const cells = csvLine.match(/("([^"]|"")*"|[^,]*)(,|$)/g)?.map((c) => c.replace(/,$/, '')) ?? [];
  return columns.map((i) => cells[i] ?? '').join(',');
}

function indent(text: string, n: number): string {
  return text
    .split('\n')
    .map((l) => ' '.repeat(n) + l)
    .join('\n');
}
