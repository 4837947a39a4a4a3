/**
 * The Stripe double as a process, for the demo, manual poking and other languages:
 *
 *   npx sweeper-stripe-double [--port 12111] [--host 127.0.0.1] [--latency-ms 0] [--charges FILE]… [--events]
 *                             [--account-rate N] [--global-rate N]
 *   npm run stripe-double -- --port 12111 --charges charges.jsonl      (from the sources, in a clone)
 *
 * (or STRIPE_DOUBLE_PORT / STRIPE_DOUBLE_HOST). `--charges` seeds charges from a file
 * before listening: JSON lines (or one JSON array), or CSV when the name ends in .csv
 * (README in this folder, "Bulk seeding"); `--events` also stores their creation events.
 * `--account-rate` and `--global-rate` enforce Stripe's two rate limits (requests a
 * second per account and endpoint, and per API key), answering 429 beyond them.
 * Prints its URL on stdout, e.g. for `STRIPE_API_BASE=$(…)`, and runs until SIGINT/SIGTERM.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { chargeFormatOf, ChargeImportError, parseCharges } from './import-charges.js';
import { startStripeDouble } from './server.js';

const usage =
  'usage: sweeper-stripe-double [--port 0..65535] [--host HOST] [--latency-ms N] [--charges FILE.jsonl|FILE.csv]… [--events] [--account-rate N] [--global-rate N]';
let values: {
  port?: string;
  host?: string;
  'latency-ms'?: string;
  charges?: string[];
  events?: boolean;
  'account-rate'?: string;
  'global-rate'?: string;
};
try {
  ({ values } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'latency-ms': { type: 'string' },
      charges: { type: 'string', multiple: true },
      events: { type: 'boolean' },
      'account-rate': { type: 'string' },
      'global-rate': { type: 'string' },
    },
  }));
} catch (error) {
  console.error(`${(error as Error).message}\n${usage}`);
  process.exit(64);
}

const port = Number(values.port ?? process.env.STRIPE_DOUBLE_PORT ?? 12111);
const latencyMs = Number(values['latency-ms'] ?? process.env.STRIPE_DOUBLE_LATENCY_MS ?? 0);
const rates = (['account-rate', 'global-rate'] as const).map((flag) =>
  values[flag] === undefined ? undefined : Number(values[flag]),
);
const badRate = rates.some((rate) => rate !== undefined && !(rate > 0));
if (!Number.isInteger(port) || port < 0 || port > 65535 || !Number.isFinite(latencyMs) || latencyMs < 0 || badRate) {
  console.error(usage);
  process.exit(64);
}
const [accountRateLimit, globalRateLimit] = rates;

// Files are read and checked before the double listens: a bad line is exit 64, naming it.
const batches = [];
for (const file of values.charges ?? []) {
  try {
    batches.push({ file, charges: parseCharges(await readFile(file, 'utf8'), chargeFormatOf(file)) });
  } catch (error) {
    if (!(error instanceof ChargeImportError) && (error as { code?: string }).code === undefined) throw error;
    console.error(`stripe double: ${file}: ${(error as Error).message}`);
    process.exit(64);
  }
}

const double = await startStripeDouble({
  port,
  host: values.host ?? process.env.STRIPE_DOUBLE_HOST ?? '127.0.0.1',
  latencyMs,
  ...(accountRateLimit === undefined ? {} : { accountRateLimit }),
  ...(globalRateLimit === undefined ? {} : { globalRateLimit }),
});
for (const { file, charges } of batches) {
  const started = performance.now();
  try {
    const result = double.importCharges(charges, { events: Boolean(values.events) });
    console.error(
      `stripe double: ${result.count} charges from ${file} in ${Math.round(performance.now() - started)} ms (${JSON.stringify(result.accounts)})`,
    );
  } catch (error) {
    if (!(error instanceof ChargeImportError)) throw error;
    console.error(`stripe double: ${file}: ${error.message}`);
    await double.close();
    process.exit(64);
  }
}
// Before the URL is printed: whoever reads it may stop the double at once (`kill $!`).
const stop = () => {
  void double.close().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

console.log(double.url);
console.error(
  `stripe double listening on ${double.url} (any sk_test_/rk_test_ key; POST /_double/charges seeds more; Ctrl-C stops it)`,
);
