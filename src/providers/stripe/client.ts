import Stripe from 'stripe';
import { registerSecret } from '../../secrets.js';
import { DeadlineHttpClient } from './http-client.js';

/** The API version every request is pinned to; fixtures and the double follow it. */
export const STRIPE_API_VERSION = Stripe.API_VERSION;

/** SWEEPER_REQUEST_DEADLINE's default: a listing page answers in well under a second. */
export const DEFAULT_REQUEST_DEADLINE_MS = 20_000;

export interface StripeClientOptions {
  apiKey: string;
  /** `scheme://host[:port]`, e.g. `http://127.0.0.1:12111` for stripe-mock or the double. */
  apiBase?: string;
  /** Retries on connection errors, 409 and 5xx (the SDK's own rules); 429 is ours. */
  maxNetworkRetries?: number;
  /** Total time one request may take, connection, headers and body (not only idle time). */
  timeoutMs?: number;
}

export function createStripeClient(options: StripeClientOptions): Stripe {
  // Whoever builds a client (the CLI, payment code) has its key redacted from every output.
  registerSecret(options.apiKey);
  const deadlineMs = options.timeoutMs ?? DEFAULT_REQUEST_DEADLINE_MS;
  const config: ConstructorParameters<typeof Stripe>[1] = {
    apiVersion: STRIPE_API_VERSION,
    maxNetworkRetries: options.maxNetworkRetries ?? 2,
    timeout: deadlineMs,
    httpClient: new DeadlineHttpClient(deadlineMs),
    telemetry: false,
    appInfo: { name: 'sweeper' },
  };
  if (options.apiBase) Object.assign(config, parseApiBase(options.apiBase));
  return new Stripe(options.apiKey, config);
}

export function parseApiBase(apiBase: string): { protocol: 'http' | 'https'; host: string; port: number } {
  const url = new URL(apiBase);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  const port = url.port ? Number(url.port) : protocol === 'http' ? 80 : 443;
  return { protocol, host: url.hostname, port };
}

export type { Stripe };
