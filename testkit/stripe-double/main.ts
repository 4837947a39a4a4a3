/**
 * The Stripe double as a process, for the demo, manual poking and other languages:
 *
 *   npx tsx src/fakes/stripe-double/main.ts [--port 12111] [--host 127.0.0.1] [--latency-ms 0]
 *
 * (or STRIPE_DOUBLE_PORT / STRIPE_DOUBLE_HOST). Prints its URL on stdout, e.g. for
 * `STRIPE_API_BASE=$(…)`, and runs until SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';
import { startStripeDouble } from './server.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    'latency-ms': { type: 'string' },
  },
});

const port = Number(values.port ?? process.env.STRIPE_DOUBLE_PORT ?? 12111);
const latencyMs = Number(values['latency-ms'] ?? process.env.STRIPE_DOUBLE_LATENCY_MS ?? 0);
if (!Number.isInteger(port) || port < 0 || port > 65535 || !Number.isFinite(latencyMs) || latencyMs < 0) {
  console.error('usage: main.ts [--port 0..65535] [--host HOST] [--latency-ms N]');
  process.exit(64);
}

const double = await startStripeDouble({ port, host: values.host ?? process.env.STRIPE_DOUBLE_HOST ?? '127.0.0.1', latencyMs });
console.log(double.url);
console.error(`stripe double listening on ${double.url} (any sk_test_/rk_test_ key; Ctrl-C stops it)`);

const stop = () => {
  void double.close().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
