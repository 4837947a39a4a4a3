/**
 * The events reader: which charges changed after a cursor, from Stripe's Events API.
 *
 * Contract:
 * - `read(account, { after, overlapSeconds?, before? })` lists the account's events of
 *   CHANGE_EVENT_TYPES (or `types`) with `created[gt]=after` (with an overlap:
 *   `created[gte]=after-overlap`) and, given `before`, `created[lt]=before`, 100 per
 *   page, newest first, following `starting_after` until `has_more: false`, through
 *   the real SDK with `stripeAccount`, every request under the shared RateBudget and
 *   the lister's retries (429 + Retry-After, 5xx, lost connections; see withRetries).
 * - It returns every event of the range exactly once (by id) as a ChangeEvent, or
 *   throws: IncompleteEventsError when a request fails for good, a page is not a
 *   well-formed list, the cursor does not advance, an id repeats, events are out of
 *   order, or an event contradicts the request (type, time or account not asked for,
 *   a `charge.*` event naming no charge); MissingEventsPermissionError (403) and
 *   InvalidStripeKeyError (401) for configuration. Never a partial answer.
 * - Stripe's guarantees the caller must plan for: events are kept 30 days; the API is
 *   eventually consistent (an event may be listed some time after its `created`), so
 *   read up to `before = now − lag` and re-read an overlap; events of one change may
 *   repeat (distinct ids), so whatever is done per event must be idempotent.
 * - `listing.cursor` is the `after` for the next read: `before − 1` when `before` was
 *   given (every second below it was read), else the newest `created` seen.
 */
import Stripe from 'stripe';
import { accountIdOf } from '../../domain/identity.js';
import { STRIPE_MAX_PAGE_SIZE } from './limits.js';
import type { RetryPolicy } from './backoff.js';
import { readChangeEvent, type ChangeEvent, type EventExpectation } from './change-event.js';
import { StripeListCounters } from './counters.js';
import { IncompleteEventsError, MissingEventsPermissionError, type EventRange } from './event-errors.js';
import { failsEveryRequest, MalformedPageError, MissingStripePermissionError, PageFetchError } from './errors.js';
import { maxPagesFor } from './list-charges.js';
import { pageShapeProblem, withRetries } from './page-source.js';
import { RateBudget, type RequestBudget, type Sleep } from './rate-budget.js';
import { createChargeRetriever, type RetrievedCharge } from './retrieve-charges.js';
import type { ChangeSource } from '../../sweep/provider.js';
import { errorMessage } from '../../errors.js';

export type { ChangeEvent } from './change-event.js';

/**
 * The event types the sweeper reads: every change to a charge's money or attribution.
 * Spelled out because `types[]` takes exact names only (a wildcard such as
 * `charge.dispute.*` is accepted by `type`, which takes one pattern), at most 20.
 */
export const CHANGE_EVENT_TYPES = [
  'charge.succeeded',
  'charge.failed',
  'charge.pending',
  'charge.captured',
  'charge.expired',
  'charge.refunded',
  'charge.refund.updated',
  'charge.updated',
  'charge.dispute.created',
  'charge.dispute.updated',
  'charge.dispute.closed',
  'charge.dispute.funds_withdrawn',
  'charge.dispute.funds_reinstated',
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'refund.created',
  'refund.updated',
  'refund.failed',
] as const;

/** Stripe's limit on `types[]`. */
export const MAX_EVENT_TYPES_PER_REQUEST = 20;
export const EVENT_PAGE_SIZE = STRIPE_MAX_PAGE_SIZE;

export interface EventWindow {
  /** The cursor, unix seconds: events created after it. */
  after: number;
  /** Also re-read this many seconds before the cursor (`created[gte] = after − overlap`), for events listed late. Default 0. */
  overlapSeconds?: number;
  /** Exclusive upper bound, unix seconds (now − lag): newer events are left for the next read. Default: none. */
  before?: number;
}

export interface EventListing {
  account: string | null;
  range: EventRange;
  /** Each event once, in Stripe's order (newest first). */
  events: ChangeEvent[];
  /** Events whose object names no usable charge: pointers that cannot be followed (the deep re-read is the second line). */
  malformed: Array<{ id: string; problem: string }>;
  pages: number;
  newestCreated: number | null;
  /** The `after` of the next read. */
  cursor: number;
}

/** One `GET /v1/events` request. */
export interface EventPageQuery {
  account: string | null;
  types: readonly string[];
  range: EventRange;
  /** `created[gt]` rather than `created[gte] = range.gte`, as the caller asked. */
  exclusiveAfter: boolean;
  startingAfter?: string;
  limit: number;
}

/** Fetches one page as it came over the wire. The reader depends on this, not on the SDK, so its logic is tested without HTTP. */
export type FetchEventPage = (query: EventPageQuery, signal: AbortSignal) => Promise<unknown>;

/** One attempt through the real SDK; its own retries are off (withRetries decides, inside the budget). */
export function sdkEventPageSource(stripe: Stripe): FetchEventPage {
  return async (query) => {
    const created: Stripe.RangeQueryParam = query.exclusiveAfter
      ? { gt: query.range.gte - 1 }
      : { gte: query.range.gte };
    if (query.range.lt !== null) created.lt = query.range.lt;
    const params: Stripe.EventListParams = { types: [...query.types], created, limit: query.limit };
    if (query.startingAfter) params.starting_after = query.startingAfter;
    const options: Stripe.RequestOptions = { maxNetworkRetries: 0 };
    if (query.account) options.stripeAccount = query.account;
    try {
      return await stripe.events.list(params, options);
    } catch (error) {
      // Raised here with Stripe's own message: the lister's 403 error names the charges permission.
      // A connected account's `account_invalid` (access revoked) goes on to withRetries, which says so.
      const { statusCode, code } = (error ?? {}) as { statusCode?: unknown; code?: unknown };
      if (statusCode === 403 && !(code === 'account_invalid' && query.account !== null))
        throw new MissingEventsPermissionError(query.account, (error as Error).message);
      if (error instanceof Stripe.errors.StripeError) throw error;
      // The SDK trips over a body that is JSON but not an object (`null`, `[]`, `"x"`).
      throw new MalformedPageError('the answer could not be read as a Stripe list: the body is not a JSON object', {
        cause: error,
      });
    }
  };
}

export interface ReadEventsOptions {
  /** Default CHANGE_EVENT_TYPES; 1..20 exact names. */
  types?: readonly string[];
  signal?: AbortSignal;
  /** Pages one read may take before it fails (a broken upstream handing out cursors forever); default from the range. */
  maxPages?: number;
  /** Events per page, 1..100. */
  limit?: number;
  /** Pages are added here (requests, retries and 429s are counted by withRetries). */
  counters?: StripeListCounters;
}

/** The range a window asks for, in whole seconds. */
export function eventRange(window: EventWindow): EventRange {
  const overlap = window.overlapSeconds ?? 0;
  for (const [name, value] of [
    ['after', window.after],
    ['overlapSeconds', overlap],
    ['before', window.before ?? 0],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new RangeError(`${name} must be a whole, non-negative number of seconds (got ${value})`);
  }
  const range = { gte: overlap > 0 ? window.after - overlap : window.after + 1, lt: window.before ?? null };
  if (range.lt !== null && range.lt < range.gte)
    throw new RangeError(`before (${range.lt}) is earlier than the cursor (${window.after})`);
  return range;
}

/**
 * Reads every event of a window, page after page (see the module comment for the
 * contract). Pages are sequential: each cursor comes from the page before.
 */
export async function readEvents(
  fetchPage: FetchEventPage,
  account: string | null,
  window: EventWindow,
  options: ReadEventsOptions = {},
): Promise<EventListing> {
  const read = startRead(account, window, options);
  const { range, events, malformed } = read;
  for (;;) {
    const { items, hasMore } = await nextPage(read, fetchPage);
    takeEvents(read, items);
    if (!hasMore) break;
    if (items.length === 0 || !read.lastId)
      throw read.incomplete('a page says has_more but holds no event to continue after: the cursor cannot advance');
    read.startingAfter = read.lastId;
  }
  const newestCreated = events[0]?.created ?? null;
  const cursor = range.lt !== null ? range.lt - 1 : Math.max(window.after, newestCreated ?? window.after);
  return { account, range, events, malformed, pages: read.pages, newestCreated, cursor };
}

/** One listing of events as it goes: what it asks, and what it has read so far. */
interface EventRead {
  account: string | null;
  range: EventRange;
  types: string[];
  limit: number;
  maxPages: number;
  counters: StripeListCounters;
  signal: AbortSignal;
  expected: EventExpectation;
  exclusiveAfter: boolean;
  incomplete: (reason: string, cause?: unknown) => IncompleteEventsError;
  events: ChangeEvent[];
  malformed: Array<{ id: string; problem: string }>;
  seen: Set<string>;
  lastId: string | undefined;
  startingAfter: string | undefined;
  pages: number;
}

/** The listing's request, checked (types, page size), with nothing read yet. */
function startRead(account: string | null, window: EventWindow, options: ReadEventsOptions): EventRead {
  const range = eventRange(window);
  const types = [...new Set(options.types ?? CHANGE_EVENT_TYPES)];
  if (types.length < 1 || types.length > MAX_EVENT_TYPES_PER_REQUEST) {
    throw new RangeError(`an events read takes 1 to ${MAX_EVENT_TYPES_PER_REQUEST} event types (got ${types.length})`);
  }
  const wildcard = types.find((t) => t.includes('*'));
  if (wildcard !== undefined) throw new RangeError(`types[] takes exact event names; spell out ${wildcard}`);
  const limit = options.limit ?? EVENT_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > EVENT_PAGE_SIZE)
    throw new RangeError(`page size must be 1..${EVENT_PAGE_SIZE} (got ${limit})`);
  const maxPages =
    options.maxPages ??
    maxPagesFor({ gte: range.gte, lt: range.lt ?? Math.max(range.gte + 1, Math.ceil(Date.now() / 1000)) });
  return {
    account,
    range,
    types,
    limit,
    maxPages,
    counters: options.counters ?? new StripeListCounters(),
    signal: options.signal ?? new AbortController().signal,
    expected: { account, types: new Set(types), gte: range.gte, lt: range.lt },
    exclusiveAfter: (window.overlapSeconds ?? 0) === 0,
    incomplete: (reason, cause) =>
      new IncompleteEventsError(account, range, reason, cause === undefined ? undefined : { cause }),
    events: [],
    malformed: [],
    seen: new Set<string>(),
    lastId: undefined,
    startingAfter: undefined,
    pages: 0,
  };
}

/** The next page, counted, with its shape checked; a failure fails the whole listing. */
async function nextPage(read: EventRead, fetchPage: FetchEventPage): Promise<{ items: unknown[]; hasMore: boolean }> {
  const { account, types, range, exclusiveAfter, limit, startingAfter, signal } = read;
  signal.throwIfAborted();
  if (read.pages >= read.maxPages)
    throw read.incomplete(`more than ${read.maxPages} pages: the upstream keeps handing out new pages`);
  let page: unknown;
  try {
    page = await fetchPage(
      { account, types, range, exclusiveAfter, limit, ...(startingAfter ? { startingAfter } : {}) },
      signal,
    );
  } catch (error) {
    signal.throwIfAborted();
    throw configurationError(error) ?? read.incomplete(errorMessage(error), error);
  }
  read.pages += 1;
  read.counters.pages += 1;
  if (typeof page !== 'object' || page === null || Array.isArray(page))
    throw read.incomplete('a page is not a list object');
  const { data, has_more: hasMore } = page as { data?: unknown; has_more?: unknown };
  const shape = pageShapeProblem(data, hasMore);
  if (shape) throw read.incomplete(`a page is malformed: ${shape}`);
  const items = data as unknown[];
  if (items.length > limit)
    throw read.incomplete(`a page holds ${items.length} events, more than the ${limit} asked for`);
  return { items, hasMore: hasMore as boolean };
}

/** A page's events into the listing: each once, newest first; one naming no usable charge is set aside. */
function takeEvents(read: EventRead, items: readonly unknown[]): void {
  const { events, seen, incomplete } = read;
  const listedTwice = (id: string) =>
    incomplete(`event ${id} was listed twice in one listing (a cursor that does not advance, or a broken listing)`);
  for (const raw of items) {
    const result = readChangeEvent(raw, read.expected);
    if (!result.ok) {
      // One event whose object names no usable charge is one lost pointer, not a broken
      // listing: reported (the deep re-read is the second line), the rest is read.
      if (result.id !== null && result.pointerMissing) {
        if (seen.has(result.id)) throw listedTwice(result.id);
        seen.add(result.id);
        read.malformed.push({ id: result.id, problem: result.problem });
        read.lastId = result.id;
        continue;
      }
      throw incomplete(result.problem);
    }
    const event = result.event;
    if (seen.has(event.id)) throw listedTwice(event.id);
    const previous = events[events.length - 1];
    if (previous && event.created > previous.created)
      throw incomplete(
        `events out of order: ${event.id} (${event.created}) after ${previous.id} (${previous.created})`,
      );
    seen.add(event.id);
    events.push(event);
    read.lastId = event.id;
  }
}

function configurationError(error: unknown): Error | undefined {
  if (error instanceof MissingEventsPermissionError) return error;
  if (error instanceof PageFetchError && error.cause instanceof MissingEventsPermissionError) return error.cause;
  // Only if a 403 reached withRetries by another way: its error names the charges permission, so say events.
  if (error instanceof MissingStripePermissionError)
    return new MissingEventsPermissionError(error.account, error.message);
  // The key (401) or the address (nothing listens): every request of the account fails alike.
  if (failsEveryRequest(error)) return error;
  return undefined;
}

export interface EventReaderDeps {
  stripe: Stripe;
  /** Share one with the charge lister: it is the process's request rate. */
  budget?: RequestBudget;
  /** The re-reads by id (`GET /v1/charges/:id`, an endpoint of their own); default `budget`. */
  retrieveBudget?: RequestBudget;
  counters?: StripeListCounters;
  retry?: Partial<RetryPolicy>;
  sleep?: Sleep;
  random?: () => number;
  /** Charges re-read at once by retrieveCharges; the budget, not this, bounds the rate. */
  retrieveConcurrency?: number;
}

export interface EventReader {
  read(
    account: string | null,
    window: EventWindow,
    options?: Omit<ReadEventsOptions, 'counters'>,
  ): Promise<EventListing>;
  /** Re-reads charges by id (`GET /v1/charges/:id`) under the same budget: raw objects for normalizeCharge, or missing. */
  retrieveCharges(
    account: string | null,
    ids: readonly string[],
    options?: { signal?: AbortSignal },
  ): Promise<RetrievedCharge[]>;
  readonly budget: RequestBudget;
  readonly counters: StripeListCounters;
}

/** The reader over the real SDK, with the shared budget, retries and counters wired in. */
export function createEventReader(deps: EventReaderDeps): EventReader {
  const budget = deps.budget ?? new RateBudget();
  const counters = deps.counters ?? new StripeListCounters();
  const retry = { budget, counters, policy: deps.retry, sleep: deps.sleep, random: deps.random };
  const fetchPage = withRetries(sdkEventPageSource(deps.stripe), retry);
  const retriever = createChargeRetriever({
    ...retry,
    budget: deps.retrieveBudget ?? budget,
    stripe: deps.stripe,
    concurrency: deps.retrieveConcurrency,
  });
  return {
    budget,
    counters,
    read: (account, window, options = {}) => readEvents(fetchPage, account, window, { ...options, counters }),
    retrieveCharges: (account, ids, options = {}) => retriever.retrieveCharges(account, ids, options),
  };
}

/** The sweep's port for late changes (src/sweep/types.ts ChangeSource), over this reader. */
export function changeSource(reader: EventReader): ChangeSource {
  return async (account, window, signal) => {
    const listing = await reader.read(accountIdOf(account), window, signal ? { signal } : {});
    return [
      ...listing.events.map((e) => ({
        id: e.id,
        type: e.type,
        created: e.created,
        chargeId: e.chargeId,
        ...(e.refundId ? { refundId: e.refundId } : {}),
        ...(e.dispute ? { dispute: e.dispute } : {}),
      })),
      ...listing.malformed.map((m) => ({
        id: m.id,
        type: 'malformed',
        created: 0,
        chargeId: null,
        problem: m.problem,
      })),
    ];
  };
}
