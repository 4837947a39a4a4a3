import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A hostile Stripe: an HTTP proxy in front of the Stripe double that breaks the charge
 * listing (`GET /v1/charges`) the ways a broken or malicious upstream would. Every
 * other request passes through untouched, unless the mode says otherwise. Modes:
 *
 * - `data-null`, `data-string`, `has-more-missing`, `body-null`: a listing page that is
 *   not a well-formed list;
 * - `cursor-loop`: pages of two charges, and whatever `starting_after` says, the first
 *   page again with `has_more: true`;
 * - `duplicate-id`: pages of two charges, and every later page also carries the charge
 *   its cursor names again with another amount (two versions of one charge);
 * - `drip`: headers, then one byte of a valid page every `dripMs`, never the last one;
 * - `echo-key-401`: every request answered 401 with the full API key in the message;
 * - `poison`: charges whose metadata names a poison (`POISON_KEY`) are rewritten on the
 *   way out, on every endpoint that returns them: see `POISONS`.
 */
export type HostileMode =
  | 'pass'
  | 'data-null'
  | 'data-string'
  | 'has-more-missing'
  | 'body-null'
  | 'cursor-loop'
  | 'duplicate-id'
  | 'drip'
  | 'echo-key-401'
  | 'poison';

/** The metadata key a test sets on a double's charge to have it poisoned on the way out. */
export const POISON_KEY = 'sweeper_test_poison';

type Charge = Record<string, unknown> & { metadata?: Record<string, unknown> };

/** What each poison does to the charge JSON, and the problem the sweep must name. */
export const POISONS = {
  nul_in_tenant: {
    apply: () => undefined,
    metadata: { tenant_id: 'acme\u0000evil', idempotency_key: 'poison-nul' },
    problem: /metadata\[tenant_id\] is not 1-500 characters without control characters/,
  },
  negative_amount: {
    apply: (c: Charge) => Object.assign(c, { amount: -500, amount_captured: 0 }),
    problem: /amount -500 is negative/,
  },
  currency_usdt: {
    apply: (c: Charge) => Object.assign(c, { currency: 'usdt' }),
    problem: /currency "usdt" is not three letters/,
  },
  negative_refunded: {
    apply: (c: Charge) => Object.assign(c, { amount_refunded: -100 }),
    problem: /amount_refunded -100 is negative/,
  },
  created_ms: {
    apply: (c: Charge) => Object.assign(c, { created: (c.created as number) * 1000 }),
    problem: /milliseconds, not seconds/,
  },
  created_zero: { apply: (c: Charge) => Object.assign(c, { created: 0 }), problem: /created 0 is not after 1970/ },
  no_id: { apply: (c: Charge) => delete c.id, problem: /missing id/ },
  created_year_ahead: {
    apply: (c: Charge, now: number) => Object.assign(c, { created: now + 365 * 86_400 }),
    problem: /more than a day ahead of now/,
  },
} as const satisfies Record<
  string,
  { apply: (c: Charge, now: number) => unknown; problem: RegExp; metadata?: Record<string, string> }
>;
export type Poison = keyof typeof POISONS;

export interface HostileUpstream {
  url: string;
  mode: HostileMode;
  /** Listing requests seen (every `GET /v1/charges`). */
  listRequests: number;
  close(): Promise<void>;
}

export async function startHostileUpstream(
  target: string,
  options: { mode?: HostileMode; dripMs?: number } = {},
): Promise<HostileUpstream> {
  const upstream = new URL(target);
  const dripMs = options.dripMs ?? 2_000;
  const open = new Set<ServerResponse>();
  // Per listing (its created range): slices are listed concurrently, and a lister that
  // splits a window continues a cursor in a narrower range, each its own listing.
  const firstPages = new Map<string, string>();

  const state: HostileUpstream = {
    url: '',
    mode: options.mode ?? 'pass',
    listRequests: 0,
    close: () =>
      new Promise((resolve) => {
        for (const res of open) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const forward = (
    req: IncomingMessage,
    path: string,
  ): Promise<{ status: number; headers: IncomingMessage['headers']; body: string }> =>
    new Promise((resolve, reject) => {
      const headers = { ...req.headers, host: upstream.host };
      delete headers['accept-encoding'];
      const out = request(
        { host: upstream.hostname, port: upstream.port, path, method: req.method, headers },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (c: Buffer) => chunks.push(c));
          answer.on('end', () =>
            resolve({
              status: answer.statusCode ?? 502,
              headers: answer.headers,
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          answer.on('error', reject);
        },
      );
      out.on('error', reject);
      // A GET has no body, and may be forwarded twice (the charge a cursor names).
      if (req.method === 'GET') out.end();
      else req.pipe(out);
    });

  const send = (res: ServerResponse, status: number, body: string) => {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_hostile' });
    res.end(body);
  };

  const withLimit = (path: string, limit: number) => {
    const url = new URL(path, 'http://x');
    url.searchParams.set('limit', String(limit));
    return `${url.pathname}${url.search}`;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = req.url ?? '/';
    const url = new URL(path, 'http://x');
    const listing = req.method === 'GET' && /^\/v1\/charges\/?$/.test(url.pathname);
    if (listing) state.listRequests += 1;
    const mode = state.mode;

    if (mode === 'echo-key-401') {
      const key = (req.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
      return send(
        res,
        401,
        JSON.stringify({ error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${key}` } }),
      );
    }
    if (!listing || mode === 'pass') {
      const answer = await forward(req, path);
      return send(res, answer.status, mode === 'poison' ? poisonBody(answer.body) : answer.body);
    }
    const cursor = url.searchParams.get('starting_after');
    const listingKey = `${url.searchParams.get('created[gte]')}|${url.searchParams.get('created[lt]')}`;
    const withoutCursor = (p: string) => {
      const u = new URL(p, 'http://x');
      u.searchParams.delete('starting_after');
      return `${u.pathname}${u.search}`;
    };
    switch (mode) {
      case 'data-null':
        return send(res, 200, JSON.stringify({ object: 'list', data: null, has_more: false, url: '/v1/charges' }));
      case 'data-string':
        return send(
          res,
          200,
          JSON.stringify({ object: 'list', data: 'ch_1,ch_2', has_more: false, url: '/v1/charges' }),
        );
      case 'has-more-missing': {
        const answer = await forward(req, path);
        const page = JSON.parse(answer.body) as Record<string, unknown>;
        delete page.has_more;
        return send(res, answer.status, JSON.stringify(page));
      }
      case 'body-null':
        return send(res, 200, 'null');
      case 'cursor-loop': {
        if (cursor === null || !firstPages.has(listingKey)) {
          firstPages.set(listingKey, (await forward(req, withLimit(withoutCursor(path), 2))).body);
        }
        return send(res, 200, firstPages.get(listingKey) as string);
      }
      case 'duplicate-id': {
        const answer = await forward(req, withLimit(path, 2));
        const page = JSON.parse(answer.body) as { data: Charge[] };
        if (cursor !== null) {
          // The charge the cursor names was on the page before: list it again, changed.
          const previous = await forward(req, `/v1/charges/${encodeURIComponent(cursor)}`);
          if (previous.status === 200) {
            const charge = JSON.parse(previous.body) as Charge;
            page.data.unshift({ ...charge, amount: (charge.amount as number) + 1 });
          }
        }
        return send(res, answer.status, JSON.stringify(page));
      }
      case 'drip': {
        const body = (await forward(req, path)).body;
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_drip' });
        let i = 0;
        const timer = setInterval(() => {
          // Never the last byte: the body never completes.
          if (i < body.length - 1) res.write(body[i] as string);
          i += 1;
        }, dripMs);
        res.on('close', () => clearInterval(timer));
        return;
      }
      case 'poison':
        return send(res, 200, poisonBody((await forward(req, path)).body));
    }
  };

  const server: Server = createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        send(res, 502, JSON.stringify({ error: { type: 'api_error', message: `hostile proxy: ${String(error)}` } }));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

/** Rewrites every poisoned charge in a body (a list, a search result, or one charge). */
function poisonBody(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  const now = Math.floor(Date.now() / 1000);
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value !== 'object' || value === null) return;
    const charge = value as Charge;
    const name = charge.object === 'charge' ? charge.metadata?.[POISON_KEY] : undefined;
    if (typeof name === 'string' && name in POISONS) {
      const poison = POISONS[name as Poison];
      poison.apply(charge, now);
      if ('metadata' in poison) charge.metadata = { ...charge.metadata, ...poison.metadata };
    }
    for (const child of Object.values(charge)) visit(child);
  };
  visit(parsed);
  return JSON.stringify(parsed);
}
