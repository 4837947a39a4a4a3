import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { StripeListCounters } from '../../src/providers/stripe/counters.js';
import { IncompleteWindowError } from '../../src/providers/stripe/errors.js';
import { classifyListFailure } from '../../src/providers/stripe/failure.js';
import { listChargeWindow } from '../../src/providers/stripe/list-charges.js';
import { sdkPageSource, withRetries } from '../../src/providers/stripe/page-source.js';
import { RateBudget } from '../../src/providers/stripe/rate-budget.js';

/**
 * Upstreams that never finish: one drips a byte every 200 ms (so an idle timeout never
 * fires), one sends headers and then nothing, one accepts and never answers. Every
 * request must still end, at the total deadline.
 */
let server: Server;
let base: string;
const open = new Set<ServerResponse>();
let requests = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests += 1;
    open.add(res);
    res.on('close', () => open.delete(res));
    if (req.url?.includes('starting_after=silent')) return; // never answers
    res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_drip' });
    if (req.url?.includes('starting_after=headers')) return; // headers, then nothing
    const body = '{"object":"list","data":[],"has_more":false}';
    let i = 0;
    const drip = setInterval(() => {
      if (res.destroyed) return clearInterval(drip);
      // Never the last byte: the body is never complete.
      res.write(body[i % (body.length - 1)] ?? ' ');
      i += 1;
    }, 200);
    res.on('close', () => clearInterval(drip));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of open) res.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function lister(startingAfter?: string) {
  const stripe = createStripeClient({ apiKey: 'sk_test_deadline', apiBase: base, timeoutMs: 1_000 });
  const counters = new StripeListCounters();
  const fetchPage = withRetries(sdkPageSource(stripe), {
    budget: new RateBudget({ ratePerSecond: 1_000 }),
    counters,
    sleep: async () => undefined,
  });
  const start = startingAfter;
  return {
    counters,
    listing: listChargeWindow(
      start ? (query, signal) => fetchPage({ ...query, startingAfter: start }, signal) : fetchPage,
      null,
      { from: 1_767_225_600, to: 1_767_225_660 },
    ),
  };
}

async function failureOf(listing: AsyncIterable<unknown>): Promise<unknown> {
  try {
    for await (const page of listing) void page;
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('every Stripe request has a total deadline', () => {
  it.each([
    ['drips one byte at a time, forever', undefined],
    ['sends headers and never a body', 'headers'],
    ['never answers at all', 'silent'],
  ])('an upstream that %s fails the window after two deadlines', async (_name, mode) => {
    const before = requests;
    const { listing, counters } = lister(mode);
    const error = await failureOf(listing);
    expect(error).toBeInstanceOf(IncompleteWindowError);
    expect((error as Error).message).toMatch(
      /no complete answer within the request deadline, 2 times \(SWEEPER_REQUEST_DEADLINE\)/,
    );
    expect(requests - before).toBe(2);
    expect(counters.connectionErrors).toBe(2);
  });

  it('classifies a timeout as a deadline miss, other connection failures as connection errors', () => {
    const timeout = new Stripe.errors.StripeConnectionError({
      message: 'Request aborted due to timeout',
      detail: { code: 'ETIMEDOUT' },
    } as never);
    expect(classifyListFailure(timeout)).toMatchObject({ action: 'retry', reason: 'deadline' });
    const reset = new Stripe.errors.StripeConnectionError({
      message: 'socket hang up',
      detail: { code: 'ECONNRESET' },
    } as never);
    expect(classifyListFailure(reset)).toMatchObject({ action: 'retry', reason: 'connection' });
  });

  it('reads headers of any type without throwing', () => {
    const odd = { statusCode: 429, headers: { 'retry-after': 7, 'stripe-should-retry': ['true'] } };
    expect(classifyListFailure(odd)).toMatchObject({ action: 'retry', reason: 'rate_limited' });
    expect(classifyListFailure({ statusCode: '500', headers: 'x', message: 42 })).toMatchObject({ action: 'give_up' });
  });
});
