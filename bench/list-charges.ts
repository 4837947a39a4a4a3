/**
 * Benchmark of the windowed charge lister against the Stripe double, under the
 * conditions that bound it in production: a per-request latency and a server-side
 * rate limit on GET /v1/charges. Not a test; run with
 *
 *   npx tsx bench/list-charges.ts
 *
 * One run: seeds 100,000 charges over one day, sets 300 ms latency and 25 requests/s,
 * lists the day with the windowed lister (budget 25/s), then pages the same window
 * sequentially with the SDK's auto-pagination (the first 20,000 charges), and reports
 * charges/s of both, the lister's ratio to the limit (25 × 100 = 2,500 charges/s), the
 * 429s, and whether the listed set equals the seeded set. Writes the report to
 * bench/results/list-charges.json as well.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStripeDouble } from '../testkit/stripe-double/index.js';
import { createStripeClient } from '../src/providers/stripe/client.js';
import { createChargeLister, DEFAULT_CONCURRENCY } from '../src/providers/stripe/list-charges.js';
import { RateBudget } from '../src/providers/stripe/rate-budget.js';

const CHARGES = 100_000;
const LATENCY_MS = 300;
const LIMIT_PER_SECOND = 25;
const PAGE_SIZE = 100;
const SEQUENTIAL_SAMPLE = 20_000;
const TARGET_RATIO = 0.85;
const ACCOUNT = 'acct_bench';
const FROM = new Date('2026-03-01T00:00:00Z');
const TO = new Date('2026-03-02T00:00:00Z');
const LIST = 'GET /v1/charges';

const limitChargesPerSecond = LIMIT_PER_SECOND * PAGE_SIZE;
const double = await startStripeDouble({ now: '2026-03-05T00:00:00Z' });
try {
  const seedStart = performance.now();
  double.seedCharges(ACCOUNT, CHARGES, { from: FROM, to: TO, seed: 2026 });
  const seedMs = performance.now() - seedStart;
  const seeded = new Set(double.chargeIds(ACCOUNT, { from: FROM, to: TO }));
  double.setLatency(LATENCY_MS);
  double.setRateLimit(LIST, { perSecond: LIMIT_PER_SECOND });
  const stripe = createStripeClient({ apiKey: 'sk_test_bench', apiBase: double.url });

  // 1. The windowed lister, on a budget equal to the limit.
  process.stderr.write(
    `windowed lister: ${CHARGES.toLocaleString('en')} charges at ${LIMIT_PER_SECOND} requests/s, ${LATENCY_MS} ms each…\n`,
  );
  const lister = createChargeLister({ stripe, budget: new RateBudget({ ratePerSecond: LIMIT_PER_SECOND }) });
  const listed = new Set<string>();
  let duplicates = 0;
  let malformed = 0;
  const listerStart = performance.now();
  for await (const batch of lister.list(ACCOUNT, { from: FROM, to: TO })) {
    for (const charge of batch.charges) {
      if (listed.has(charge.id)) duplicates += 1;
      listed.add(charge.id);
    }
    malformed += batch.malformed.length;
  }
  const listerSeconds = (performance.now() - listerStart) / 1000;
  const missing = [...seeded].filter((id) => !listed.has(id)).length;
  const extra = [...listed].filter((id) => !seeded.has(id)).length;
  const lister429sAtServer = double.counters.status(LIST, 429);

  // 2. Plain sequential auto-pagination through the SDK, for comparison.
  process.stderr.write(`sequential auto-pagination: the first ${SEQUENTIAL_SAMPLE.toLocaleString('en')} charges…\n`);
  const sequentialStart = performance.now();
  let sequential = 0;
  const pages = stripe.charges.list(
    { created: { gte: FROM.getTime() / 1000, lt: TO.getTime() / 1000 }, limit: PAGE_SIZE },
    { stripeAccount: ACCOUNT },
  );
  for await (const charge of pages) {
    if (!seeded.has(charge.id)) throw new Error(`auto-pagination returned a charge that was not seeded: ${charge.id}`);
    if (++sequential >= SEQUENTIAL_SAMPLE) break;
  }
  const sequentialSeconds = (performance.now() - sequentialStart) / 1000;

  const counters = lister.counters.snapshot();
  const listerRate = listed.size / listerSeconds;
  const sequentialRate = sequential / sequentialSeconds;
  const zeroLoss = missing === 0 && extra === 0 && duplicates === 0 && malformed === 0 && listed.size === seeded.size;
  const report = {
    benchmark: 'list-charges',
    date: new Date().toISOString(),
    node: process.version,
    setup: {
      charges_seeded: seeded.size,
      window: { from: FROM.toISOString(), to: TO.toISOString() },
      latency_ms: LATENCY_MS,
      server_limit_requests_per_second: LIMIT_PER_SECOND,
      limit_charges_per_second: limitChargesPerSecond,
      seed_ms: Math.round(seedMs),
    },
    windowed_lister: {
      budget_requests_per_second: LIMIT_PER_SECOND,
      concurrency: DEFAULT_CONCURRENCY,
      charges: listed.size,
      seconds: round(listerSeconds, 2),
      charges_per_second: Math.round(listerRate),
      ratio_to_limit: round(listerRate / limitChargesPerSecond, 3),
      target_ratio: TARGET_RATIO,
      requests: counters.requests,
      pages: counters.pages,
      charges_per_request: round(listed.size / counters.requests, 1),
      splits: counters.splits,
      rate_limited_429: counters.rateLimited,
      rate_limited_429_seen_by_server: lister429sAtServer,
      retries: counters.retries,
    },
    sequential_auto_pagination: {
      charges: sequential,
      seconds: round(sequentialSeconds, 2),
      charges_per_second: Math.round(sequentialRate),
    },
    speedup: round(listerRate / sequentialRate, 1),
    zero_loss: zeroLoss,
    loss_check: { missing, extra, duplicates, malformed },
  };

  const lines = [
    `list-charges benchmark (${report.node}, ${report.date})`,
    `  setup: ${seeded.size.toLocaleString('en')} charges over ${FROM.toISOString()} .. ${TO.toISOString()}, ${LATENCY_MS} ms latency, ` +
      `limit ${LIMIT_PER_SECOND} requests/s on ${LIST} (= ${limitChargesPerSecond.toLocaleString('en')} charges/s)`,
    `  windowed lister (budget ${LIMIT_PER_SECOND}/s, concurrency ${DEFAULT_CONCURRENCY}): ${listed.size.toLocaleString('en')} charges in ` +
      `${report.windowed_lister.seconds} s = ${report.windowed_lister.charges_per_second.toLocaleString('en')} charges/s`,
    `    ratio to the limit: ${report.windowed_lister.ratio_to_limit} (target ≥ ${TARGET_RATIO}) ${listerRate / limitChargesPerSecond >= TARGET_RATIO ? 'OK' : 'BELOW TARGET'}`,
    `    requests ${counters.requests}, pages ${counters.pages} (${report.windowed_lister.charges_per_request} charges/request), splits ${counters.splits}, ` +
      `429s ${counters.rateLimited} (server saw ${lister429sAtServer}), retries ${counters.retries}`,
    `  sequential auto-pagination: ${sequential.toLocaleString('en')} charges in ${report.sequential_auto_pagination.seconds} s = ` +
      `${report.sequential_auto_pagination.charges_per_second.toLocaleString('en')} charges/s`,
    `  speed-up of the windowed lister: ${report.speedup}x`,
    `  zero loss: ${zeroLoss ? 'yes' : 'NO'} — listed set equals seeded set (missing ${missing}, extra ${extra}, duplicates ${duplicates}, malformed ${malformed})`,
  ];
  console.log(lines.join('\n'));

  const out = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'list-charges.json');
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`  written to ${path.relative(process.cwd(), out)}`);
  if (!zeroLoss) process.exitCode = 1;
} finally {
  await double.close();
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
