/**
 * What events cost, in the double and through the reader. Not a test; run with
 *
 *   npx tsx bench/events-reader.ts
 *
 * 1. Seeding 1,000,000 charges without and with their creation events (time, heap).
 * 2. Reading 100,000 events of one account through the events reader (pages, requests,
 *    events/s against the double with no latency, i.e. the reader's and the double's
 *    own cost).
 * 3. A sparse read: 100 refunds among those 100,000 events, `types[]=charge.refunded`
 *    (the double scans past the others; the reader pays one page).
 * Writes bench/results/events-reader.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStripeDouble } from '../testkit/stripe-double/index.js';
import { createStripeClient } from '../src/providers/stripe/client.js';
import { createEventReader } from '../src/providers/stripe/events.js';
import { RateBudget } from '../src/providers/stripe/rate-budget.js';
import { DAY_SECONDS } from '../src/time/units.js';

const BULK = 1_000_000;
const READ = 100_000;
const REFUNDS = 100;
const NOW_S = Date.parse('2026-03-10T00:00:00Z') / 1000;
const FROM = NOW_S - DAY_SECONDS;

const heapMb = () => {
  globalThis.gc?.();
  return Math.round(process.memoryUsage().heapUsed / 1e6);
};

const double = await startStripeDouble({ now: NOW_S * 1000 });
try {
  // 1. Bulk seeding.
  const base = heapMb();
  let start = performance.now();
  double.seedCharges('acct_plain', BULK, { from: FROM, to: NOW_S });
  const plainMs = performance.now() - start;
  const plainHeap = heapMb() - base;
  start = performance.now();
  double.seedCharges('acct_events', BULK, { from: FROM, to: NOW_S, events: true });
  const withEventsMs = performance.now() - start;
  const withEventsHeap = heapMb() - base - plainHeap;
  double.reset();

  // 2. A full read.
  double.seedCharges('acct_read', READ, { from: FROM, to: NOW_S, events: true });
  const stripe = createStripeClient({ apiKey: 'sk_test_bench', apiBase: double.url });
  const reader = createEventReader({ stripe, budget: new RateBudget({ ratePerSecond: 1_000_000, burst: 1_000 }) });
  start = performance.now();
  const full = await reader.read('acct_read', { after: FROM - 1, before: NOW_S }, { types: ['charge.succeeded'] });
  const fullSeconds = (performance.now() - start) / 1000;
  const fullRequests = reader.counters.requests;

  // 3. A sparse read.
  const ids = double.chargeIds('acct_read').slice(0, REFUNDS);
  for (const id of ids) double.refund(id, 1);
  start = performance.now();
  const sparse = await reader.read('acct_read', { after: FROM - 1, before: NOW_S + 1 }, { types: ['charge.refunded'] });
  const sparseMs = performance.now() - start;

  const report = {
    seeding: {
      charges: BULK,
      withoutEvents: { ms: Math.round(plainMs), heapMb: plainHeap },
      withEvents: { ms: Math.round(withEventsMs), heapMb: withEventsHeap },
    },
    fullRead: {
      events: full.events.length,
      pages: full.pages,
      requests: fullRequests,
      seconds: Number(fullSeconds.toFixed(2)),
      eventsPerSecond: Math.round(full.events.length / fullSeconds),
    },
    sparseRead: {
      scanned: READ + 2 * REFUNDS,
      found: sparse.events.length,
      pages: sparse.pages,
      ms: Math.round(sparseMs),
    },
  };
  if (full.events.length !== READ || sparse.events.length !== REFUNDS)
    throw new Error(`read ${full.events.length} and ${sparse.events.length} events`);
  console.log(JSON.stringify(report, null, 2));
  const out = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'events-reader.json');
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
} finally {
  await double.close();
}
