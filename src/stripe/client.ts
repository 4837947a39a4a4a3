import Stripe from 'stripe';

/** The API version every request is pinned to; fixtures and the double follow it. */
export const STRIPE_API_VERSION = Stripe.API_VERSION;

export interface StripeClientOptions {
  apiKey: string;
  /** `scheme://host[:port]`, e.g. `http://127.0.0.1:12111` for stripe-mock or the double. */
  apiBase?: string;
  /** Retries on connection errors, 409 and 5xx (the SDK's own rules); 429 is ours. */
  maxNetworkRetries?: number;
  timeoutMs?: number;
}

export function createStripeClient(options: StripeClientOptions): Stripe {
  const config: ConstructorParameters<typeof Stripe>[1] = {
    apiVersion: STRIPE_API_VERSION,
    maxNetworkRetries: options.maxNetworkRetries ?? 2,
    timeout: options.timeoutMs ?? 20_000,
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
