import { setMaxListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { UnknownAccountPolicy } from './accounts.js';
import { authenticate, authorize, keyFromHeader, type KeyPolicy } from './auth.js';
import { DoubleClock } from './clock.js';
import { createControls, type DoubleControls } from './controls.js';
import { RequestCounters } from './counters.js';
import {
  accountAccessDenied,
  apiError,
  DoubleError,
  idempotencyMismatch,
  rateLimited,
  unrecognizedUrl,
} from './errors.js';
import { FaultInjector, type FaultConfig } from './faults.js';
import { canonicalJson, parseForm } from './form.js';
import { IdempotencyStore, type StoredResponse } from './idempotency.js';
import { randomId, seededRandom } from './random.js';
import { EndpointRateLimiter, rateLimitOf, type RateLimit } from './rate-limit.js';
import { chargeFormatOf, ChargeImportError, importCharges, parseCharges } from './import-charges.js';
import { matchRoute } from './routes.js';
import { DoubleState } from './state.js';
import { errorMessage } from '../../src/errors.js';

export interface StripeDoubleOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  keys?: KeyPolicy;
  /** How long idempotency keys are remembered, on the double's clock. Default 24 h. */
  idempotencyTtlMs?: number;
  /** Seed of ids (and of nothing else: faults have their own). */
  seed?: number;
  /** Stops the double's clock at this instant from the start. */
  now?: Date | string | number;
  latencyMs?: number;
  /** Per endpoint, across every account (see `setRateLimit`). */
  rateLimits?: Record<string, RateLimit>;
  /** Per account and endpoint, as Stripe limits (25 a second per endpoint); see `setAccountRateLimit`. */
  accountRateLimit?: RateLimit | number;
  /** Per API key over every endpoint and account, as Stripe's global limit (100 a second live); see `setGlobalRateLimit`. */
  globalRateLimit?: RateLimit | number;
  /** A `Stripe-Account` the double does not know: served as an empty account (default) or answered 403. */
  unknownAccounts?: UnknownAccountPolicy;
  faults?: FaultConfig;
}

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string>;
}

export interface StripeDouble extends DoubleControls {
  /** `http://127.0.0.1:PORT`: pass it as `apiBase` to createStripeClient. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1 << 20;
/** `POST /_double/charges` takes whole files: a million charges of JSON lines is about 200 MB. */
const MAX_IMPORT_BYTES = 1 << 30;

/**
 * An in-memory Stripe for tests, the demo and benchmarks: the real SDK talks to it over
 * HTTP. Per-account charges, payment intents and refunds; Stripe's idempotency, error
 * envelope and authentication; plus control hooks (clock, latency, rate limits,
 * injected faults, counters, seeding and direct mutations) on the returned object.
 */
export async function startStripeDouble(options: StripeDoubleOptions = {}): Promise<StripeDouble> {
  const clock = new DoubleClock();
  if (options.now !== undefined) clock.set(options.now);
  const state = new DoubleState(clock, options.seed ?? 1);
  const idempotency = new IdempotencyStore(() => clock.nowMs(), options.idempotencyTtlMs);
  const limiter = new EndpointRateLimiter();
  for (const [endpoint, limit] of Object.entries(options.rateLimits ?? {})) limiter.set(endpoint, limit);
  if (options.accountRateLimit !== undefined) limiter.setPerAccount(rateLimitOf(options.accountRateLimit));
  if (options.globalRateLimit !== undefined) limiter.setGlobal(rateLimitOf(options.globalRateLimit));
  if (options.unknownAccounts) state.accounts.unknownAccounts = options.unknownAccounts;
  const faults = new FaultInjector();
  if (options.faults) faults.set(options.faults);
  const counters = new RequestCounters();
  const latency = new Map<string, number>();
  if (options.latencyMs) latency.set('*', options.latencyMs);
  const keys: KeyPolicy = options.keys ?? {};
  const requestIds = seededRandom((options.seed ?? 1) + 1);
  const closing = new AbortController();
  // Every request waiting out its latency listens for the close; hundreds at once are normal.
  setMaxListeners(0, closing.signal);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://double.invalid');
    if (method === 'POST' && url.pathname === '/_double/charges') return importOverHttp(req, res, url);
    const body = method === 'POST' ? await readBody(req) : '';
    const matched = matchRoute(method, url.pathname);
    const endpoint = matched?.route.endpoint ?? `${method} ${url.pathname}`;
    const account = header(req, 'stripe-account') || null;
    counters.record(endpoint, account);

    // On arrival, as a server-side limiter sees it; the latency below models the round trip.
    const limited = limiter.take(endpoint, account, keyFromHeader(header(req, 'authorization')) ?? '');
    if (limited) counters.rateLimitedBy(limited.reason);
    const fault = limited ? 'none' : faults.draw(endpoint);
    const faultAfter = faults.phase === 'after';
    if (fault === 'reset' && !faultAfter) return dropConnection(req, endpoint, account);
    const wait = latency.get(endpoint) ?? latency.get('*') ?? 0;
    if (wait > 0) await delay(wait, undefined, { signal: closing.signal }).catch(() => undefined);
    if (closing.signal.aborted) return;

    const requestId = randomId('req', requestIds, 14);
    let answer: Answer;
    try {
      if (limited) throw rateLimited(limited.limit.retryAfterSeconds, limited.reason);
      if (fault === '429') throw rateLimited();
      if (fault === '500' && !faultAfter) throw apiError();
      answer = execute({ req, method, url, body, matched, account, requestId });
    } catch (error) {
      const failure = error instanceof DoubleError ? error : apiError(`the double failed: ${errorMessage(error)}`);
      answer = { status: failure.status, body: JSON.stringify(failure.body), headers: failure.headers };
    }
    // 'after' faults: the request ran (a charge may exist) but its answer is lost.
    if (fault === 'reset') return dropConnection(req, endpoint, account);
    if (fault === '500') {
      const failure = apiError();
      answer = { status: 500, body: JSON.stringify(failure.body), headers: {} };
    }
    counters.answered(endpoint, answer.status, account, `${method} ${url.pathname}${url.search} ${body}`);
    res.writeHead(answer.status, {
      'Content-Type': 'application/json',
      'Request-Id': requestId,
      'Stripe-Version': header(req, 'stripe-version') ?? '',
      ...answer.headers,
    });
    res.end(answer.body);
  }

  /**
   * A request past the limiters and faults: authenticated, for an account the key may
   * reach, with the permission it needs; then replayed from its idempotency key or run.
   * Throws the DoubleError Stripe would answer with.
   */
  function execute(request: {
    req: IncomingMessage;
    method: string;
    url: URL;
    body: string;
    matched: ReturnType<typeof matchRoute>;
    account: string | null;
    requestId: string;
  }): Answer {
    const { req, method, url, body, matched, account, requestId } = request;
    const key = authenticate(header(req, 'authorization'), keys);
    if (!matched) throw unrecognizedUrl(method, url.pathname);
    if (account !== null && !state.accounts.allows(account)) throw accountAccessDenied(key, account);
    authorize(key, matched.route.permission, account, keys);
    const params = parseForm(method === 'POST' ? body : url.search.slice(1));
    const idempotencyKey = method === 'POST' ? header(req, 'idempotency-key') : undefined;
    const fingerprint = `${method} ${url.pathname} ${canonicalJson(params)}`;
    const prior = idempotencyKey ? idempotency.lookup(account, idempotencyKey, fingerprint) : { kind: 'new' as const };
    if (prior.kind === 'mismatch') throw idempotencyMismatch(idempotencyKey as string);
    if (prior.kind === 'replay') {
      return {
        status: prior.response.status,
        body: prior.response.body,
        headers: { 'Idempotent-Replayed': 'true', 'Original-Request': prior.response.requestId },
      };
    }
    const eventRequest = { id: requestId, idempotency_key: idempotencyKey ?? null };
    const context = { state, account, params, pathParams: matched.pathParams, request: eventRequest, key };
    const result = matched.route.handler(context);
    const answer: Answer = { status: result.status, body: JSON.stringify(result.body), headers: {} };
    if (idempotencyKey) {
      const stored: StoredResponse = { status: answer.status, body: answer.body, requestId };
      idempotency.store(account, idempotencyKey, fingerprint, stored);
      answer.headers['Idempotency-Key'] = idempotencyKey;
    }
    return answer;
  }

  /**
   * The double's own control endpoint (not Stripe's API: no key, no faults, limits or
   * latency): bulk seeding. Body: JSON lines, a JSON array, or CSV with `Content-Type:
   * text/csv`; `?events=true` also stores creation events. All or none: a bad line is a
   * 400 naming it, and nothing is added.
   */
  async function importOverHttp(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    let status = 200;
    let answer: unknown;
    try {
      const text = await readBody(req, MAX_IMPORT_BYTES);
      const charges = parseCharges(text, chargeFormatOf(header(req, 'content-type')));
      answer = importCharges(state, charges, { events: url.searchParams.get('events') === 'true' });
    } catch (error) {
      if (!(error instanceof ChargeImportError)) throw error;
      status = 400;
      answer = { error: { type: 'invalid_request_error', message: error.message } };
    }
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(answer));
  }

  function dropConnection(req: IncomingMessage, endpoint: string, account: string | null): void {
    counters.answered(endpoint, 'reset', account);
    req.socket.destroy();
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(apiError(`the double failed: ${errorMessage(error)}`).body));
      }
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const controls = createControls({ state, clock, counters, limiter, faults, latency, idempotency });
  return Object.assign(controls, {
    url: `http://${host}:${address.port}`,
    port: address.port,
    async close() {
      closing.abort();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  });
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function readBody(req: IncomingMessage, maxBytes = MAX_BODY_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new Error('request body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
