import { setMaxListeners } from 'node:events';
import type Stripe from 'stripe';
import { STRIPE_MAX_PAGE_SIZE } from './limits.js';
import type { RetryPolicy } from './backoff.js';
import { StripeListCounters } from './counters.js';
import { describeError, failsEveryRequest, IncompleteWindowError, MalformedPageError } from './errors.js';
import { DEFAULT_METADATA_KEYS, normalizeCharge, pageCursorOf, STRIPE_ID, type MetadataKeys } from './normalize.js';
import {
  pageShapeProblem,
  sdkPageSource,
  withRetries,
  type FetchChargePage,
  type RawChargePage,
} from './page-source.js';
import { RateBudget, type RequestBudget, type Sleep } from './rate-budget.js';
import type { PriorityGate } from './priority-gate.js';
import { planNext, type SubWindowTask } from './subdivide.js';
import type { MalformedCharge, NormalizedCharge } from '../../sweep/provider.js';
import { describeRange, toUnixRange, type ChargeWindow, type UnixRange } from './window.js';

/** One page of a listing: the charges it held and the ones that could not be read. */
export interface ChargeBatch {
  account: string | null;
  /** The sub-window the page was listed from (unix seconds), for progress and logs. */
  subWindow: UnixRange;
  charges: NormalizedCharge[];
  malformed: MalformedCharge[];
}

export interface WindowListingOptions {
  /** Sub-windows listed at once. The budget, not this, bounds the request rate. */
  concurrency?: number;
  metadataKeys?: MetadataKeys;
  /** Charges per page, 1..100. */
  limit?: number;
  signal?: AbortSignal;
  /** Pages, charges, malformed charges and splits are added here. */
  counters?: StripeListCounters;
  /** Pages one listing may take before it fails; default `maxPagesFor(window)`. */
  maxPages?: number;
  /** Unix seconds, for the normaliser's "not ahead of now" check. Default: the system clock. */
  now?: () => number;
  /** False while the rate budget is the bottleneck: no new sub-windows then. Default: always true. */
  spareCapacity?: () => boolean;
}

export const DEFAULT_CONCURRENCY = 16;
export const MAX_PAGE_SIZE = STRIPE_MAX_PAGE_SIZE;

/**
 * The most pages one listing may take: 10 per second of the window (1,000 charges a
 * second on average, far beyond any account's sustained rate), and never fewer than
 * 1,000. A listing that goes past it is a broken upstream handing out new cursors
 * forever, and fails like any other broken listing.
 */
export function maxPagesFor(range: UnixRange): number {
  return Math.max(1_000, 10 * (range.lt - range.gte));
}

/**
 * Lists every charge of one account created in `[from, to)`, as pages, in no
 * particular order, each charge exactly once. Sub-windows are split off while fewer
 * than `concurrency` are in flight and the rate budget has capacity to spare (see
 * subdivide.ts; every split costs a partial page). Ends only when every
 * sub-window reached `has_more: false`; otherwise throws IncompleteWindowError
 * (or the 401/403 configuration errors) after yielding what it had.
 */
export async function* listChargeWindow(
  fetchPage: FetchChargePage,
  account: string | null,
  window: ChargeWindow,
  options: WindowListingOptions = {},
): AsyncGenerator<ChargeBatch, void, undefined> {
  const range = toUnixRange(window);
  options.signal?.throwIfAborted();
  if (range.gte === range.lt) return;
  const listing = new WindowListing(fetchPage, account, range, listingSettings(range, options));
  // The caller stopping (SIGTERM) must not wait for requests still on the wire.
  const onOuterAbort = () => listing.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onOuterAbort, { once: true });
  try {
    for (;;) {
      listing.startReady();
      const batch = listing.outbox.shift();
      if (batch) {
        yield batch;
        continue;
      }
      if (listing.failure) throw listing.failure;
      if (options.signal?.aborted) throw options.signal.reason;
      if (listing.done) return;
      await listing.changed();
    }
  } finally {
    // Also reached when the consumer stops early: cancel the waits of what is still in flight.
    listing.end();
    options.signal?.removeEventListener('abort', onOuterAbort);
  }
}

/** What one request for a whole window said: its every charge when they fit in one page, else only that there are more. */
export interface WindowPeek {
  /** `has_more` was false: `charges` and `malformed` are the whole window. */
  complete: boolean;
  charges: NormalizedCharge[];
  malformed: MalformedCharge[];
}

/**
 * One request, `limit` 100, for the whole window: most accounts of a platform have had
 * fewer charges than that since their last run, and then this one page is their whole
 * listing. The page is checked as any listing's page is (shape, size, ids), and its
 * charges are normalised the same way.
 */
export async function peekChargeWindow(
  fetchPage: FetchChargePage,
  account: string | null,
  window: ChargeWindow,
  options: Pick<WindowListingOptions, 'metadataKeys' | 'signal' | 'counters' | 'now'> = {},
): Promise<WindowPeek> {
  const range = toUnixRange(window);
  if (range.gte === range.lt) return { complete: true, charges: [], malformed: [] };
  const task: SubWindowTask = { gte: range.gte, lt: range.lt };
  const signal = options.signal ?? new AbortController().signal;
  let page: RawChargePage;
  try {
    // The caller stopping (SIGTERM) must not wait for a request still on the wire.
    page = await untilAborted(
      fetchPage({ account, gte: range.gte, lt: range.lt, limit: MAX_PAGE_SIZE }, signal),
      signal,
    );
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (failsEveryRequest(error)) throw error;
    throw new IncompleteWindowError(account, range, range, describeError(error), { cause: error });
  }
  const problem = pageProblem(page, task, MAX_PAGE_SIZE, new Set());
  if (problem)
    throw new IncompleteWindowError(account, range, range, problem, { cause: new MalformedPageError(problem) });
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const batch = toBatch(account, task, page, options.metadataKeys ?? DEFAULT_METADATA_KEYS, now());
  if (options.counters) {
    options.counters.pages += 1;
    options.counters.charges += batch.charges.length;
    options.counters.malformed += batch.malformed.length;
    options.counters.unnamed += batch.malformed.filter((m) => m.id === null).length;
  }
  return { complete: !page.hasMore, charges: batch.charges, malformed: batch.malformed };
}

/** `work`, or the signal's reason as soon as it aborts. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** A listing's options with their defaults, checked. */
interface ListingSettings {
  concurrency: number;
  limit: number;
  keys: MetadataKeys;
  counters: StripeListCounters;
  maxPages: number;
  now: () => number;
  spareCapacity: (() => boolean) | undefined;
}

function listingSettings(range: UnixRange, options: WindowListingOptions): ListingSettings {
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? DEFAULT_CONCURRENCY));
  const limit = options.limit ?? MAX_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE)
    throw new RangeError(`page size must be 1..${MAX_PAGE_SIZE} (got ${limit})`);
  return {
    concurrency,
    limit,
    keys: options.metadataKeys ?? DEFAULT_METADATA_KEYS,
    counters: options.counters ?? new StripeListCounters(),
    maxPages: options.maxPages ?? maxPagesFor(range),
    now: options.now ?? (() => Math.floor(Date.now() / 1000)),
    spareCapacity: options.spareCapacity,
  };
}

/**
 * The sub-windows of one listing in flight: those ready to request, the pages read and
 * not yet taken by the consumer, and the first failure, which aborts the rest.
 */
class WindowListing {
  readonly controller = new AbortController();
  readonly ready: SubWindowTask[];
  readonly outbox: ChargeBatch[] = [];
  failure: Error | undefined;
  /**
   * Every charge id of this listing: the sub-windows are disjoint, so a second sighting
   * means the upstream's pagination is broken (or it is serving two versions of a charge).
   */
  private readonly seen = new Set<string>();
  private pagesRead = 0;
  private running = 0;
  private wake: (() => void) | undefined;

  constructor(
    private readonly fetchPage: FetchChargePage,
    private readonly account: string | null,
    private readonly range: UnixRange,
    private readonly settings: ListingSettings,
  ) {
    // Every in-flight wait (budget, backoff) listens on this signal; that many listeners are expected.
    setMaxListeners(settings.concurrency * 4 + 10, this.controller.signal);
    this.ready = [{ gte: range.gte, lt: range.lt }];
  }

  /** Requests what is ready while fewer than `concurrency` are in flight and the consumer keeps up. */
  startReady(): void {
    // Pages waiting for the consumer; a slow consumer stops new requests instead of filling memory.
    const maxBuffered = this.settings.concurrency * 2;
    while (
      !this.failure &&
      this.running < this.settings.concurrency &&
      this.ready.length > 0 &&
      this.outbox.length < maxBuffered
    ) {
      this.running += 1;
      void this.run(this.ready.shift() as SubWindowTask);
    }
  }

  get done(): boolean {
    return this.running === 0 && this.ready.length === 0;
  }

  /** Resolves when a request ends or the listing is aborted. */
  changed(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wake = resolve;
    });
  }

  abort(reason: unknown): void {
    this.controller.abort(reason);
    this.notify();
  }

  end(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new Error('listing ended'));
  }

  private notify(): void {
    const resume = this.wake;
    this.wake = undefined;
    resume?.();
  }

  private fail(task: SubWindowTask, error: unknown): void {
    if (this.failure) return;
    if (failsEveryRequest(error)) this.failure = error;
    else {
      const reason = describeError(error);
      this.failure = new IncompleteWindowError(this.account, this.range, { gte: task.gte, lt: task.lt }, reason, {
        cause: error,
      });
    }
    this.controller.abort(this.failure);
  }

  private async run(task: SubWindowTask): Promise<void> {
    const { limit, counters } = this.settings;
    try {
      const page = await this.fetchPage(
        { account: this.account, gte: task.gte, lt: task.lt, startingAfter: task.startingAfter, limit },
        this.controller.signal,
      );
      if (this.controller.signal.aborted) return;
      const problem =
        pageProblem(page, task, limit, this.seen) ??
        (++this.pagesRead > this.settings.maxPages ? tooManyPages(this.settings.maxPages, this.range) : null);
      if (problem) {
        this.fail(task, new MalformedPageError(problem));
        return;
      }
      const wantMore =
        this.running - 1 + this.ready.length < this.settings.concurrency && (this.settings.spareCapacity?.() ?? true);
      const plan = planNext(task, outline(page), { wantMore, limit });
      if (!plan.ok) {
        this.fail(task, new MalformedPageError(plan.problem));
        return;
      }
      this.ready.push(...plan.tasks);
      const batch = toBatch(this.account, task, page, this.settings.keys, this.settings.now());
      counters.pages += 1;
      counters.charges += batch.charges.length;
      counters.malformed += batch.malformed.length;
      counters.unnamed += batch.malformed.filter((m) => m.id === null).length;
      if (plan.split) counters.splits += 1;
      this.outbox.push(batch);
    } catch (error) {
      // Once aborted (a failure elsewhere, the caller's signal, the consumer stopped), later errors are echoes.
      if (!this.controller.signal.aborted) this.fail(task, error);
    } finally {
      this.running -= 1;
      this.notify();
    }
  }
}

/**
 * Why a page cannot be part of a complete listing, or null. Checked before anything of
 * the page is used, so a broken page never counts as read: its shape, its size, a
 * cursor that does not move, and every charge id against the ones already listed.
 */
function pageProblem(page: unknown, task: SubWindowTask, limit: number, seen: Set<string>): string | null {
  if (typeof page !== 'object' || page === null)
    return `the page is not an object (${page === null ? 'null' : typeof page})`;
  const { data, hasMore } = page as { data?: unknown; hasMore?: unknown };
  const shape = pageShapeProblem(data, hasMore);
  if (shape) return shape;
  const items = data as unknown[];
  if (items.length > limit) return `the page holds ${items.length} charges, more than the ${limit} asked for`;
  const last = items.length > 0 ? pageCursorOf(items[items.length - 1]).id : null;
  if (hasMore && task.startingAfter !== undefined && last === task.startingAfter) {
    return `the cursor did not advance: the page after ${task.startingAfter} ends with ${task.startingAfter} again and says has_more`;
  }
  for (const item of items) {
    const id = (item as { id?: unknown } | null)?.id;
    if (typeof id !== 'string' || !STRIPE_ID.test(id)) continue;
    if (seen.has(id))
      return `charge ${id} was listed twice in one listing (a broken cursor, or two versions of one charge)`;
    seen.add(id);
  }
  return null;
}

function tooManyPages(maxPages: number, range: UnixRange): string {
  return `more than ${maxPages} pages for a window of ${range.lt - range.gte} seconds: the upstream keeps handing out new pages`;
}

function outline(page: RawChargePage) {
  const first = page.data.length > 0 ? pageCursorOf(page.data[0]) : null;
  const last = page.data.length > 0 ? pageCursorOf(page.data[page.data.length - 1]) : null;
  return { hasMore: page.hasMore, count: page.data.length, newestCreated: first?.created ?? null, last };
}

/**
 * A charge outside the range asked for cannot be judged with its slice (and a `created`
 * the upstream got wrong would land in a mirror partition nobody ensured): it is
 * reported like any charge that cannot be read.
 */
function toBatch(
  account: string | null,
  task: SubWindowTask,
  page: RawChargePage,
  keys: MetadataKeys,
  nowSeconds: number,
): ChargeBatch {
  const batch: ChargeBatch = { account, subWindow: { gte: task.gte, lt: task.lt }, charges: [], malformed: [] };
  for (const raw of page.data) {
    const result = normalizeCharge(raw, account, keys, nowSeconds);
    if (!result.ok) batch.malformed.push(result.malformed);
    else if (result.charge.created < task.gte || result.charge.created >= task.lt) {
      const problem = `created ${result.charge.created} is outside the range listed, ${describeRange({ gte: task.gte, lt: task.lt })}`;
      batch.malformed.push({ id: result.charge.id, account, problem });
    } else batch.charges.push(result.charge);
  }
  return batch;
}

export interface ChargeListerDeps {
  stripe: Stripe;
  /** Admits listing requests by priority (the earliest window first): see priority-gate.ts. */
  gate?: PriorityGate;
  /** Share one across listers and accounts: it is the process's request rate. */
  budget?: RequestBudget;
  counters?: StripeListCounters;
  concurrency?: number;
  metadataKeys?: MetadataKeys;
  retry?: Partial<RetryPolicy>;
  sleep?: Sleep;
  random?: () => number;
}

export interface ChargeLister {
  list(
    account: string | null,
    window: ChargeWindow,
    /**
     * `concurrency`: sub-windows of this listing at once (default: the lister's);
     * `priority`: this listing's place at the gate, lower first (default: none, not gated);
     * `gate`: the gate to pass (default: the lister's).
     */
    options?: { signal?: AbortSignal; concurrency?: number; priority?: number; gate?: PriorityGate },
  ): AsyncGenerator<ChargeBatch, void, undefined>;
  /** One request for the whole window (peekChargeWindow). */
  peek(account: string | null, window: ChargeWindow, options?: { signal?: AbortSignal }): Promise<WindowPeek>;
  readonly budget: RequestBudget;
  readonly counters: StripeListCounters;
}

/** The windowed lister over the real SDK, with the shared budget, retries and counters wired in. */
export function createChargeLister(deps: ChargeListerDeps): ChargeLister {
  const budget = deps.budget ?? new RateBudget();
  const counters = deps.counters ?? new StripeListCounters();
  const fetchPage = withRetries(sdkPageSource(deps.stripe), {
    budget,
    counters,
    policy: deps.retry,
    sleep: deps.sleep,
    random: deps.random,
  });
  return {
    budget,
    counters,
    list(account, window, options = {}) {
      const gate = options.gate ?? deps.gate;
      const priority = options.priority;
      const fetch: FetchChargePage =
        gate && priority !== undefined
          ? (query, signal) => gate.run(priority, () => fetchPage(query, signal), signal)
          : fetchPage;
      return listChargeWindow(fetch, account, window, {
        concurrency: options.concurrency ?? deps.concurrency,
        metadataKeys: deps.metadataKeys,
        signal: options.signal,
        counters,
        spareCapacity: () => !budget.backloggedFor(account),
      });
    },
    peek(account, window, options = {}) {
      return peekChargeWindow(fetchPage, account, window, {
        metadataKeys: deps.metadataKeys,
        signal: options.signal,
        counters,
      });
    },
  };
}
