import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StripeListCounters } from '../../src/providers/stripe/counters.js';
import {
  IncompleteWindowError,
  InvalidStripeKeyError,
  MissingStripePermissionError,
  PageFetchError,
} from '../../src/providers/stripe/errors.js';
import { listChargeWindow } from '../../src/providers/stripe/list-charges.js';
import { DEFAULT_METADATA_KEYS, normalizeCharge } from '../../src/providers/stripe/normalize.js';
import { withRetries, type FetchChargePage, type PageQuery } from '../../src/providers/stripe/page-source.js';
import { RateBudget } from '../../src/providers/stripe/rate-budget.js';
import {
  chargeObject,
  hostileJson,
  hostileString,
  NOW,
  ruleProblems,
  schemaProblems,
  WINDOW_FROM,
  WINDOW_TO,
} from '../support/fuzz.js';
import { checkProperty } from '../support/properties.js';

/**
 * Arbitrary charges, pages and error headers against the normaliser and the lister
 * (no HTTP: the lister takes a FetchChargePage). The properties of issue 10: nothing
 * but typed errors; no charge the schema would refuse; a window never counts as done
 * unless every page was well-formed. `npm test` runs a few thousand cases in a few
 * seconds; `npm run test:deep` five to ten times as many (test/support/properties.ts).
 */
const keys = DEFAULT_METADATA_KEYS;

describe('normalizeCharge, fuzzed', () => {
  it('never throws, and never returns a charge the schema (or the sweep’s own rules) would refuse', async () => {
    await checkProperty(
      'fuzz: normalizeCharge refuses nothing wrongly',
      { normal: 10_000, deep: 50_000 },
      [fc.oneof(chargeObject(), hostileJson), fc.constantFrom(null, 'acct_1Fuzz')],
      (raw, account) => {
        const result = normalizeCharge(raw, account, keys, NOW);
        if (result.ok) {
          expect(schemaProblems(result.charge)).toEqual([]);
          expect(ruleProblems(result.charge, NOW)).toEqual([]);
        } else {
          // A malformed charge is reported with a name only when the name itself is storable, and a problem that is too.
          if (result.malformed.id !== null) expect(result.malformed.id).toMatch(/^[\x21-\x7e]{1,255}$/);
          expect(result.malformed.problem).toMatch(/^[\x20-\x7e]+$/);
        }
      },
    );
  });

  it('takes every well-formed charge', async () => {
    await checkProperty(
      'fuzz: normalizeCharge takes every well-formed charge',
      { normal: 200, deep: 2_000 },
      [fc.integer({ min: WINDOW_FROM, max: WINDOW_TO }), fc.integer({ min: 0, max: 10_000 })],
      (created, amount) => {
        const result = normalizeCharge(
          { id: 'ch_ok', created, amount, amount_refunded: amount, currency: 'usd', status: 'failed' },
          null,
          keys,
          NOW,
        );
        expect(result.ok).toBe(true);
      },
    );
  });
});

/** A page that is well-formed in every way the lister must check, given the ids listed before it. */
function wellFormed(page: unknown, limit: number, seen: Set<string>): boolean {
  if (typeof page !== 'object' || page === null) return false;
  const { data, hasMore } = page as { data?: unknown; hasMore?: unknown };
  if (!Array.isArray(data) || typeof hasMore !== 'boolean' || data.length > limit) return false;
  if (hasMore && data.length === 0) return false;
  for (const item of data) {
    const id = (item as { id?: unknown } | null)?.id;
    if (typeof id === 'string' && /^[\x21-\x7e]{1,255}$/.test(id)) {
      if (seen.has(id)) return false;
      seen.add(id);
    } else if (hasMore && item === data[data.length - 1]) return false; // no cursor to continue from
  }
  return true;
}

const page = fc.oneof(
  { weight: 5, arbitrary: fc.record({ data: fc.array(chargeObject(), { maxLength: 5 }), hasMore: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ data: hostileJson, hasMore: hostileJson }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: hostileJson },
);

const failure = fc.oneof(
  fc.constant(new Error('socket hang up')),
  fc.record({
    statusCode: fc.oneof(fc.constantFrom(401, 403, 404, 409, 429, 500, 503), hostileJson),
    headers: hostileJson,
    message: hostileJson,
  }),
  hostileJson,
);

describe('listChargeWindow, fuzzed pages', () => {
  it('ends with the window read, or an IncompleteWindowError; it reports done only if every page was well-formed', async () => {
    await checkProperty(
      'fuzz: listChargeWindow pages',
      { normal: 3_000, deep: 15_000 },
      [
        fc.array(
          fc.oneof(
            { weight: 6, arbitrary: page.map((p) => ({ page: p })) },
            { weight: 1, arbitrary: failure.map((f) => ({ failure: f })) },
          ),
          {
            minLength: 1,
            maxLength: 8,
          },
        ),
        fc.integer({ min: 1, max: 4 }),
      ],
      async (answers, concurrency) => {
        const served: unknown[] = [];
        let calls = 0;
        const fetchPage = (async () => {
          const answer = answers[Math.min(calls, answers.length - 1)]!;
          calls += 1;
          if ('failure' in answer) throw answer.failure;
          served.push(answer.page);
          return answer.page;
        }) as unknown as FetchChargePage;
        const counters = new StripeListCounters();
        let yielded = 0;
        try {
          for await (const batch of listChargeWindow(
            fetchPage,
            null,
            { from: WINDOW_FROM, to: WINDOW_TO },
            { concurrency, limit: 5, maxPages: 40, counters, now: () => NOW },
          )) {
            for (const charge of batch.charges) {
              expect(schemaProblems(charge)).toEqual([]);
              expect(charge.created >= WINDOW_FROM && charge.created < WINDOW_TO).toBe(true);
            }
            yielded += batch.charges.length + batch.malformed.length;
          }
        } catch (error) {
          expect(error).toBeInstanceOf(IncompleteWindowError);
          return;
        }
        // Done: then every page served was well-formed, and nothing was made up.
        const seen = new Set<string>();
        for (const p of served) expect(wellFormed(p, 5, seen)).toBe(true);
        expect(yielded).toBe(served.reduce((n: number, p) => n + (p as { data: unknown[] }).data.length, 0));
      },
    );
  });
});

/** A budget on a fake clock: a fuzzed Retry-After of a minute costs no real time. */
function fakeBudget(): RateBudget {
  let now = 0;
  return new RateBudget({
    ratePerSecond: 1_000,
    burst: 1_000,
    clock: () => now,
    sleep: async (ms) => {
      now += ms;
    },
  });
}

describe('withRetries, fuzzed failures and headers', () => {
  it('throws only its typed errors, and never waits a non-finite or unbounded time', async () => {
    await checkProperty(
      'fuzz: withRetries failures',
      { normal: 2_000, deep: 10_000 },
      [fc.array(failure, { minLength: 1, maxLength: 10 })],
      async (failures) => {
        const waits: number[] = [];
        let call = 0;
        const fetch = withRetries<PageQuery, unknown>(
          async () => {
            throw failures[Math.min(call++, failures.length - 1)];
          },
          { budget: fakeBudget(), counters: new StripeListCounters(), sleep: async (ms) => void waits.push(ms) },
        );
        const error = await fetch({ account: null, gte: 0, lt: 1, limit: 1 }, new AbortController().signal).catch(
          (e: unknown) => e,
        );
        expect(
          [InvalidStripeKeyError, MissingStripePermissionError, PageFetchError].some((type) => error instanceof type),
        ).toBe(true);
        for (const ms of waits) expect(Number.isFinite(ms) && ms >= 0 && ms <= 61_000).toBe(true);
      },
    );
  });

  it('reads any header value without throwing', async () => {
    await checkProperty(
      'fuzz: withRetries headers',
      { normal: 500, deep: 5_000 },
      [fc.dictionary(fc.constantFrom('retry-after', 'stripe-should-retry', 'x'), fc.oneof(hostileString, hostileJson))],
      (headers) => {
        const fetch = withRetries<PageQuery, unknown>(
          async () => {
            throw { statusCode: 429, headers };
          },
          {
            budget: fakeBudget(),
            counters: new StripeListCounters(),
            sleep: async () => undefined,
            policy: { maxAttempts: 2 },
          },
        );
        return fetch({ account: null, gte: 0, lt: 1, limit: 1 }, new AbortController().signal).then(
          () => false,
          (e: unknown) => e instanceof PageFetchError,
        );
      },
    );
  });
});
