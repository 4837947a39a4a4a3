import { setMaxListeners } from 'node:events';
import { STRIPE_ID } from './normalize.js';
import { pageShapeProblem } from './page-source.js';
import { planNext, splitPoint, type PageOutline, type SubWindowTask } from './subdivide.js';

/**
 * One payout's balance transactions, listed by `created` sub-windows at once instead of one
 * page after another (a payout of 10,000 transactions is 100 pages: in sequence, 100
 * round trips; in parallel, what the rate budget allows). Stripe lists them newest first,
 * so subdivide.ts's planning holds as for charges, with one difference: a payout's
 * transactions have no known lower bound (a charge can wait months for its payout), so
 * the first sub-window is open below. After its page, the rest is cut at once into
 * sub-windows of about CHUNK_PAGES pages at that page's density (half the concurrency of
 * them), plus the part still open below them, asked for first and cut the same way when
 * its page is back (at the end, usually one empty page). Bounded sub-windows split as
 * charges' do, where densitySplit says (halving a window that reaches far below its
 * pages would cost a page of nothing per halving).
 */

export interface TransactionPage {
  data: unknown[];
  has_more: boolean;
}

/** One sub-window's page: `gte` 0 means no lower bound, `lt` Infinity no upper bound. */
export type FetchTransactionPage = (task: SubWindowTask, signal: AbortSignal) => Promise<TransactionPage>;

export interface TransactionListingOptions {
  /** Sub-windows in flight at once. The budget, not this, bounds the request rate. */
  concurrency: number;
  limit: number;
  /** Pages before the listing is judged a broken cursor. */
  maxPages: number;
  /** False while the rate budget is the bottleneck: no new sub-windows then. */
  spareCapacity?: () => boolean;
  signal?: AbortSignal;
  /** For messages: `the balance transactions of po_… of acct_…`. */
  what: string;
}

/** Every page of the listing, in no order, each transaction once; throws after the first failure. */
export async function* listTransactionWindows(
  fetchPage: FetchTransactionPage,
  options: TransactionListingOptions,
): AsyncGenerator<unknown[], void, undefined> {
  const listing = new Listing(fetchPage, options);
  const onOuterAbort = () => listing.abort(options.signal?.reason);
  options.signal?.throwIfAborted();
  options.signal?.addEventListener('abort', onOuterAbort, { once: true });
  try {
    for (;;) {
      listing.startReady();
      const page = listing.outbox.shift();
      if (page) {
        yield page;
        continue;
      }
      if (listing.failure !== undefined) throw listing.failure;
      if (options.signal?.aborted) throw options.signal.reason;
      if (listing.done) return;
      await listing.changed();
    }
  } finally {
    listing.end();
    options.signal?.removeEventListener('abort', onOuterAbort);
  }
}

/**
 * Where to split `[gte, created + 1)`: the middle when it is near, else far enough below
 * `created` for `pages` more pages at the density of the page just read.
 */
export function densitySplit(pages: number, limit: number) {
  return (gte: number, created: number, page: PageOutline): number => {
    const middle = splitPoint(gte, created);
    if (page.newestCreated === null || page.newestCreated < created || page.count === 0) return middle;
    const perSecond = page.count / (page.newestCreated - created + 1);
    const span = Math.max(1, Math.ceil((pages * limit) / perSecond));
    return Math.max(middle, created + 1 - span);
  };
}

class Listing {
  readonly controller = new AbortController();
  readonly ready: SubWindowTask[] = [{ gte: 0, lt: Number.POSITIVE_INFINITY }];
  readonly outbox: unknown[][] = [];
  failure: unknown;
  private readonly seen = new Set<string>();
  private readonly split: ReturnType<typeof densitySplit>;
  private pagesRead = 0;
  private running = 0;
  private wake: (() => void) | undefined;

  constructor(
    private readonly fetchPage: FetchTransactionPage,
    private readonly options: TransactionListingOptions,
  ) {
    setMaxListeners(options.concurrency * 4 + 10, this.controller.signal);
    this.split = densitySplit(Math.max(2, Math.ceil(options.concurrency / 2)), options.limit);
  }

  get done(): boolean {
    return this.running === 0 && this.ready.length === 0;
  }

  startReady(): void {
    const { concurrency } = this.options;
    while (
      this.failure === undefined &&
      this.running < concurrency &&
      this.ready.length > 0 &&
      this.outbox.length < concurrency * 2
    ) {
      this.running += 1;
      void this.run(this.ready.shift() as SubWindowTask);
    }
  }

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

  private async run(task: SubWindowTask): Promise<void> {
    const { limit, concurrency, what } = this.options;
    try {
      const page = await this.fetchPage(task, this.controller.signal);
      if (this.controller.signal.aborted) return;
      const problem =
        pageProblem(page, task, limit, this.seen) ??
        (++this.pagesRead > this.options.maxPages ? `more than ${this.options.maxPages} pages` : null);
      if (problem) throw new Error(`${what} cannot be listed: ${problem}`);
      const wantMore = this.running - 1 + this.ready.length < concurrency && (this.options.spareCapacity?.() ?? true);
      const plan =
        task.gte === 0 && wantMore
          ? planOpen(task, outline(page), this.options)
          : planNext(task, outline(page), { wantMore, limit, splitPoint: this.split });
      if (!plan.ok) throw new Error(`${what} cannot be listed: ${plan.problem}`);
      this.ready.push(...plan.tasks);
      this.outbox.push(page.data);
    } catch (error) {
      // Once aborted (a failure elsewhere, the caller's signal), later errors are echoes.
      if (!this.controller.signal.aborted) {
        this.failure = error;
        this.controller.abort(error);
      }
    } finally {
      this.running -= 1;
      this.notify();
    }
  }
}

/** Each sub-window cut from the open part holds about this many pages at the density seen. */
const CHUNK_PAGES = 4;

/**
 * After a page of the part open below: the rest cut into sub-windows of about
 * CHUNK_PAGES pages each at the page's density, several at once, and the part below them
 * still open, listed from its start. Every transaction of the rest lies in exactly one.
 */
function planOpen(task: SubWindowTask, page: PageOutline, options: TransactionListingOptions) {
  if (!page.hasMore) return { ok: true as const, tasks: [], split: false };
  const last = page.last;
  if (page.count === 0 || last === null || last.id === null || last.created === null || page.newestCreated === null)
    return planNext(task, page, { wantMore: false, limit: options.limit });
  const c = last.created;
  const perSecond = page.count / (Math.max(c, page.newestCreated) - c + 1);
  const span = Math.max(1, Math.ceil((CHUNK_PAGES * options.limit) / perSecond));
  // Half the listing's concurrency: the other half for splitting them as their pages come.
  const chunks = Math.max(1, Math.round(options.concurrency / 2));
  let low = Math.max(1, c + 1 - span);
  const tasks: SubWindowTask[] = [{ gte: low, lt: c + 1, startingAfter: last.id }];
  for (let k = 1; k < chunks && low > 1; k += 1) {
    const next = Math.max(1, low - span);
    tasks.push({ gte: next, lt: low });
    low = next;
  }
  // The part still open first: the sooner its page is back, the sooner the next ones are known.
  return { ok: true as const, tasks: [{ gte: 0, lt: low }, ...tasks], split: true };
}

type Item = { id?: unknown; created?: unknown } | null;

function cursorOf(item: unknown): { id: string | null; created: number | null } {
  const { id, created } = (typeof item === 'object' && item !== null ? item : {}) as NonNullable<Item>;
  return {
    id: typeof id === 'string' && STRIPE_ID.test(id) ? id : null,
    created: typeof created === 'number' && Number.isSafeInteger(created) ? created : null,
  };
}

function outline(page: TransactionPage): PageOutline {
  const first = page.data.length > 0 ? cursorOf(page.data[0]) : null;
  const last = page.data.length > 0 ? cursorOf(page.data.at(-1)) : null;
  return { hasMore: page.has_more, count: page.data.length, newestCreated: first?.created ?? null, last };
}

/** Why a page cannot be part of a complete listing: its shape, size, a cursor that does not move, an id seen before. */
function pageProblem(page: unknown, task: SubWindowTask, limit: number, seen: Set<string>): string | null {
  if (typeof page !== 'object' || page === null) return 'the answer is not a list object';
  const { data, has_more: hasMore } = page as { data?: unknown; has_more?: unknown };
  const shape = pageShapeProblem(data, hasMore);
  if (shape) return shape;
  const items = data as unknown[];
  if (items.length > limit) return `a page holds ${items.length} transactions, more than the ${limit} asked for`;
  const last = items.length > 0 ? cursorOf(items.at(-1)).id : null;
  if (hasMore === true && task.startingAfter !== undefined && last === task.startingAfter)
    return `the page after ${task.startingAfter} ends with it again and says has_more (the cursor did not advance)`;
  for (const item of items) {
    const { id } = cursorOf(item);
    if (id === null) continue;
    if (seen.has(id)) return `transaction ${id} was listed twice (a broken cursor)`;
    seen.add(id);
  }
  return null;
}
