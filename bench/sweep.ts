/**
 * Benchmark of one sweep over 100,000 charges against the Stripe double: how many SQL
 * statements it sends (the claim: O(pages), not O(charges)) and how long it takes.
 * Not a test; run with `npx tsx bench/sweep.ts` (or `npm run bench`).
 *
 * 90% of the charges have a matching payment row (matched), 10% have none
 * (unattributed_charge findings), so both the read and the write paths are loaded.
 * Stripe is unthrottled here: this measures the sweeper's own cost, not Stripe's.
 */
import { startStripeDouble } from '../testkit/stripe-double/index.js';
import { ensureDayPartitions } from '../src/db/partitions.js';
import { silentLogger } from '../src/log.js';
import { createStripeProvider } from '../src/providers/stripe/provider.js';
import { providerSweepDeps } from '../src/sweep/provider.js';
import { sweep, sweepOptions } from '../src/sweep/sweep.js';
import { benchDatabase, countStatements, writeResult } from './support.js';

const CHARGES = Number(process.env.BENCH_CHARGES ?? 100_000);
const FROM = new Date('2026-03-01T00:00:00Z');
const TO = new Date('2026-03-02T00:00:00Z');
const NOW = new Date('2026-03-02T06:00:00Z');

const db = await benchDatabase('sweep');
const double = await startStripeDouble({ now: NOW });
try {
  double.seedCharges(null, CHARGES, { from: FROM, to: TO, seed: 11 });
  await ensureDayPartitions(db.pool, { from: '2026-02-20', to: '2026-03-05' });
  // Payment rows for 90% of the charges, in bulk.
  const charges = double.listCharges(null);
  const recorded = charges.filter((_, i) => i % 10 !== 0);
  for (let i = 0; i < recorded.length; i += 10_000) {
    const rows = recorded
      .slice(i, i + 10_000)
      .map((c) => ({ charge_id: c.id, amount: c.amount, currency: c.currency, created: c.created }));
    await db.pool.query(
      `INSERT INTO payments (charge_id, amount, currency, status, created_at, updated_at)
       SELECT r.charge_id, r.amount, r.currency, 'succeeded', to_timestamp(r.created), now()
         FROM jsonb_to_recordset($1::jsonb) AS r(charge_id text, amount bigint, currency text, created bigint)`,
      [JSON.stringify(rows)],
    );
  }

  const provider = createStripeProvider({ apiKey: 'sk_test_bench', apiBase: double.url, ratePerSecond: 1_000 });
  const statements = countStatements();
  const started = performance.now();
  const heapBefore = process.memoryUsage().rss;
  const [report] = await sweep(
    {
      pool: db.pool,
      clock: () => NOW,
      logger: silentLogger(),
      ...providerSweepDeps(provider),
    },
    sweepOptions({ mode: 'backfill', accounts: ['platform'], window: { from: FROM, to: TO } }),
  );
  const seconds = (performance.now() - started) / 1000;
  const sql = statements.count();
  const pages = double.counters.get('GET /v1/charges');
  const result = {
    charges: CHARGES,
    charges_scanned: report?.charges_scanned,
    stripe_pages: pages,
    sql_statements: sql,
    sql_statements_per_page: Number((sql / pages).toFixed(2)),
    sql_statements_per_1000_charges: Number(((sql / CHARGES) * 1000).toFixed(2)),
    slices: 24,
    findings: report?.findings,
    run_seconds: Number(seconds.toFixed(2)),
    charges_per_second: Math.round(CHARGES / seconds),
    rss_growth_mb: Math.round((process.memoryUsage().rss - heapBefore) / 1e6),
  };
  process.stdout.write(
    [
      `sweep of ${CHARGES.toLocaleString('en')} charges (24 one-hour slices, 90% matched, 10% unattributed)`,
      `  Stripe pages read        ${pages}`,
      `  SQL statements           ${sql}  (${result.sql_statements_per_page} per page, ${result.sql_statements_per_1000_charges} per 1,000 charges)`,
      `  run time                 ${result.run_seconds} s  (${result.charges_per_second.toLocaleString('en')} charges/s)`,
      `  findings                 matched ${report?.findings.matched}, unattributed_charge ${report?.findings.unattributed_charge}`,
      '',
    ].join('\n'),
  );
  await writeResult('sweep', result);
} finally {
  await double.close();
  await db.close();
}
