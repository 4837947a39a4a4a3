/**
 * The peer, as its README says to run it: `@supabase/stripe-sync-engine`'s charge
 * backfill (`syncBackfill({ object: 'charge', created })`) into PostgreSQL. Run by
 * bench/e2e-rate-limited.ts as a child process, from the scratch directory the peer
 * is installed in (never from this repository):
 *
 *   node --import tsx bench/peer-backfill.ts <peer dir> migrate  <database url>
 *   node --import tsx bench/peer-backfill.ts <peer dir> backfill <database url> <api base> <from s> <to s>
 *
 * StripeSync builds its Stripe client from the secret key alone (no host option), so
 * the client it made is replaced by one with the same settings pointed at the double
 * (`host`, `port`, `protocol`: stripe-node's own options). Nothing else is changed.
 * Prints one JSON line: what it synced and how long the call took.
 */
import { createRequire } from 'node:module';
import path from 'node:path';

interface StripeSyncLike {
  stripe: unknown;
  syncBackfill(params: {
    object: string;
    created?: { gte?: number; lt?: number };
  }): Promise<{ charges?: { synced: number } }>;
  close?: () => Promise<void>;
}
interface PeerModule {
  StripeSync: new (config: Record<string, unknown>) => StripeSyncLike;
  runMigrations(config: { databaseUrl: string; schema: string; logger?: unknown }): Promise<void>;
}
type StripeCtor = new (key: string, config: Record<string, unknown>) => unknown;

const [peerDir, mode, databaseUrl, apiBase, from, to] = process.argv.slice(2);
if (!peerDir || !databaseUrl || (mode !== 'migrate' && mode !== 'backfill')) {
  console.error('usage: peer-backfill.ts <peer dir> migrate|backfill <database url> [<api base> <from s> <to s>]');
  process.exit(64);
}
// The CommonJS build: its runMigrations finds its migrations through __dirname, which
// the ESM build of 0.48.5 lacks (it then skips them, saying so only to a logger).
const require = createRequire(path.join(peerDir, 'package.json'));
const peer = require('@supabase/stripe-sync-engine') as PeerModule;
const logger = {
  info: () => undefined,
  warn: () => undefined,
  debug: () => undefined,
  error: (...args: unknown[]) => console.error(...args),
};

if (mode === 'migrate') {
  const t0 = performance.now();
  await peer.runMigrations({ databaseUrl, schema: 'stripe', logger });
  console.log(JSON.stringify({ migrated: true, ms: Math.round(performance.now() - t0) }));
} else {
  const Stripe = require('stripe') as StripeCtor;
  const base = new URL(apiBase as string);
  const sync = new peer.StripeSync({ poolConfig: { connectionString: databaseUrl }, stripeSecretKey: 'sk_test_bench' });
  // What StripeSync's constructor passes (apiVersion: its config's, undefined here; appInfo), plus the double's address.
  sync.stripe = new Stripe('sk_test_bench', {
    appInfo: { name: 'Stripe Postgres Sync' },
    host: base.hostname,
    port: Number(base.port),
    protocol: base.protocol.replace(':', ''),
  });
  const t0 = performance.now();
  const result = await sync.syncBackfill({ object: 'charge', created: { gte: Number(from), lt: Number(to) } });
  const ms = Math.round(performance.now() - t0);
  await sync.close?.();
  console.log(JSON.stringify({ synced: result.charges?.synced ?? null, ms }));
}
