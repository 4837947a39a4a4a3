/**
 * The sweep's main path at volume: 100,000 charges in one day, every one attributed
 * (tenant and key in metadata) with its claim and its payment row, on top of 200,000
 * older charges and payments from the days before (what a week of retention holds).
 * Measures SQL statements and run time; the charges come from an in-memory source,
 * so only the database side is measured. Run with `npx tsx bench/sweep-attributed.ts`.
 */
import { ensureDayPartitions } from '../src/db/partitions.js';
import { silentLogger } from '../src/log.js';
import type { NormalizedCharge } from '../src/sweep/provider.js';
import { sweep, sweepOptions, type ChargeSource } from '../src/sweep/sweep.js';
import { benchDatabase, countStatements, noEvidenceNeeded, writeResult } from './support.js';
import { STRIPE_IDEMPOTENCY_WINDOW_MS } from '../src/providers/stripe/limits.js';
import { DAY_MS, HOUR_MS } from '../src/time/units.js';

const CHARGES = Number(process.env.BENCH_CHARGES ?? 100_000);
const HISTORY = Number(process.env.BENCH_HISTORY ?? 200_000);
const DAY = new Date('2026-03-08T00:00:00Z');
const NOW = new Date('2026-03-09T06:00:00Z');
const daySeconds = DAY.getTime() / 1000;

const db = await benchDatabase('attributed');
try {
  await ensureDayPartitions(db.pool, { from: '2026-03-01', to: '2026-03-10' });
  // History: charges and payments of the week before, attributed, in the mirror already.
  await db.pool.query(
    `INSERT INTO stripe_charges (account, charge_id, created, amount, amount_captured, amount_refunded, currency, status,
                                 captured, refunded, disputed, tenant_id, idempotency_key, livemode, fetched_at)
     SELECT 'platform', 'ch_h' || i, $2::timestamptz - (1 + i % 6) * interval '1 day' + (i % 86400) * interval '1 second',
            1000, 1000, 0, 'usd', 'succeeded', true, false, false, 't' || (i % 50), 'h-' || i, false, now()
       FROM generate_series(1, $1::int) AS i`,
    [HISTORY, DAY],
  );
  await db.pool.query(
    `INSERT INTO payments (charge_id, tenant_id, idempotency_key, amount, currency, status, created_at, updated_at)
     SELECT charge_id, tenant_id, idempotency_key, 1000, 'usd', 'succeeded', created, now() FROM stripe_charges`,
  );
  // The day swept: a claim, a payment and a charge per key.
  // Claims in chunks: every claim insert holds an advisory lock to the end of its transaction.
  for (let first = 1; first <= CHARGES; first += 2_000) {
    await db.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, attempt, downstream_key, response_status,
                                     response_body, response_outcome, amount, currency, created_at, completed_at, updated_at)
       SELECT 't' || (i % 50), 'k-' || i, 'fp', 'completed', 1, 'd-' || i, 200, jsonb_build_object('charge', 'ch_d' || i),
              'success', 2000, 'usd',
              $2::timestamptz + (i::bigint * 86399 / $1) * interval '1 second',
              $2::timestamptz + (i::bigint * 86399 / $1) * interval '1 second' + interval '1 second',
              $2::timestamptz + (i::bigint * 86399 / $1) * interval '1 second' + interval '1 second'
         FROM generate_series($3::int, least($3::int + 1999, $1::int)) AS i`,
      [CHARGES, DAY, first],
    );
  }
  await db.pool.query(
    `INSERT INTO payments (charge_id, tenant_id, idempotency_key, amount, currency, status, created_at, updated_at)
     SELECT 'ch_d' || i, 't' || (i % 50), 'k-' || i, 2000, 'usd', 'succeeded',
            $2::timestamptz + (i::bigint * 86399 / $1) * interval '1 second', now()
       FROM generate_series(1, $1::int) AS i`,
    [CHARGES, DAY],
  );
  await db.pool.query('ANALYZE');
  const charges: NormalizedCharge[] = Array.from({ length: CHARGES }, (_, k) => {
    const i = k + 1;
    return {
      id: `ch_d${i}`,
      account: null,
      created: daySeconds + Math.floor((i * 86399) / CHARGES),
      amount: 2000,
      amountCaptured: 2000,
      amountRefunded: 0,
      currency: 'usd',
      status: 'succeeded',
      captured: true,
      refunded: false,
      disputed: false,
      paymentIntent: null,
      customer: null,
      paymentMethod: null,
      tenantId: `t${i % 50}`,
      idempotencyKey: `k-${i}`,
      livemode: false,
    };
  });
  let pages = 0;
  const source: ChargeSource = async function* (_account, window) {
    const from = window.from.getTime() / 1000;
    const to = window.to.getTime() / 1000;
    const inWindow = charges.filter((c) => c.created >= from && c.created < to);
    for (let i = 0; i < inWindow.length; i += 100) {
      pages += 1;
      yield { charges: inWindow.slice(i, i + 100), malformed: [] };
    }
  };

  const statements = countStatements();
  const started = performance.now();
  const [report] = await sweep(
    {
      pool: db.pool,
      clock: () => NOW,
      logger: silentLogger(),
      listCharges: source,
      evidence: noEvidenceNeeded,
      idempotencyWindowMs: STRIPE_IDEMPOTENCY_WINDOW_MS,
    },
    sweepOptions({
      mode: 'backfill',
      accounts: ['platform'],
      window: { from: DAY, to: new Date(DAY.getTime() + DAY_MS) },
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  if (process.env.BENCH_EXPLAIN) {
    // One slice's facts gather, statement by statement, as PostgreSQL runs it.
    const { SLICE_FACTS_SQL } = await import('../src/sweep/facts-sql.js');
    const [from, to] = [new Date(DAY.getTime() + HOUR_MS), new Date(DAY.getTime() + 2 * HOUR_MS)];
    const slice = ['platform', from, to, from, to]; // the slice, and what was listed for it
    const explain = async (label: string, sql: string, args: unknown[]) => {
      const plan = await db.pool.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, args);
      process.stdout.write(`-- ${label}\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}\n`);
    };
    const keys = (await db.pool.query<{ tenant_id: string; key: string }>(SLICE_FACTS_SQL.claims, slice)).rows;
    await explain('claims', SLICE_FACTS_SQL.claims, slice);
    await explain('attributed charges', SLICE_FACTS_SQL.attributed, [
      'platform',
      keys.map((k) => k.tenant_id),
      keys.map((k) => k.key),
      from,
      to,
    ]);
    await explain('named effects', SLICE_FACTS_SQL.namedEffects, [
      'platform',
      keys.map((k) => k.tenant_id),
      keys.map((k) => k.key),
      null,
    ]);
  }

  const result = {
    charges: CHARGES,
    history_rows: HISTORY,
    pages,
    sql_statements: statements.count(),
    run_seconds: Number(seconds.toFixed(2)),
    charges_per_second: Math.round(CHARGES / seconds),
    matched: report?.findings.matched,
    findings: Object.entries(report?.findings ?? {}).filter(([c, n]) => c !== 'matched' && n > 0),
  };
  process.stdout.write(
    `sweep of ${CHARGES.toLocaleString('en')} attributed charges (claim + payment each) over ${HISTORY.toLocaleString('en')} rows of history\n` +
      `  pages ${pages}, SQL statements ${result.sql_statements}, ${result.run_seconds} s (${result.charges_per_second.toLocaleString('en')} charges/s), matched ${result.matched}, other findings ${JSON.stringify(result.findings)}\n`,
  );
  if (process.env.BENCH_EXPLAIN) process.stdout.write(`${JSON.stringify(statements.slowest(6), null, 1)}\n`);
  await writeResult('sweep-attributed', result);
} finally {
  await db.close();
}
