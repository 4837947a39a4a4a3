/**
 * Stripe's events, per account, as the Events API lists them: newest first, `created`
 * filters, `starting_after`/`ending_before` cursors, 30-day retention. Each account's
 * events are kept oldest first, so emitting a new event is a push (a benchmark may emit
 * hundreds of thousands) and a backdated one is one binary search and a splice.
 *
 * Two things Stripe does that a listing must cope with are modelled per event:
 * `visibleAtMs` (an event may become listable only some time after its `created`: the
 * API is eventually consistent) and duplicates (the same change reported twice).
 */
import type { ChargeRecord } from './charge-store.js';
import { DAY_SECONDS } from '../../src/time/units.js';

/** Stripe keeps events for 30 days; older ones are neither listed nor retrievable. */
export const EVENT_RETENTION_SECONDS = 30 * DAY_SECONDS;

/** `request` of an event: the API request that caused it; `id: null` for changes Stripe (or a person) made. */
export interface EventRequest {
  id: string | null;
  idempotency_key: string | null;
}

/**
 * What `data.object` was at the moment of the event. A charge is kept as a copy of its
 * small record and rendered when read; a bulk-seeded charge's creation event keeps only
 * a reference, since its state at creation is known (nothing refunded, captured if it
 * succeeded, the batch's metadata), so a million of them stay small. Anything else is
 * kept as the JSON it was.
 */
export type EventSnapshot =
  | { charge: ChargeRecord }
  | { seededCharge: ChargeRecord; metadata: Readonly<Record<string, string>> }
  | { json: Record<string, unknown> };

export interface EventRecord {
  id: string;
  account: string | null;
  type: string;
  /** Unix seconds. */
  created: number;
  /** On the double's clock: before this the event is neither listed nor retrievable. */
  visibleAtMs: number;
  /** Emission order: the tie-break within one second. */
  seq: number;
  snapshot: EventSnapshot;
  previousAttributes?: Record<string, unknown>;
  request: EventRequest;
}

export interface EventQuery {
  gte: number;
  lt: number;
  limit: number;
  startingAfter?: string;
  endingBefore?: string;
  /** Only events whose type passes; default every type. */
  matches?: (type: string) => boolean;
  /** Double-clock milliseconds: decides visibility and retention. */
  nowMs: number;
}

export type EventListAnswer =
  { ok: true; data: EventRecord[]; hasMore: boolean } | { ok: false; missingCursor: string; param: string };

/** Negative when `a` is older than `b` (storage order, the reverse of list order). */
function storageOrder(a: EventRecord, b: EventRecord): number {
  return a.created !== b.created ? a.created - b.created : a.seq - b.seq;
}

export class EventStore {
  private readonly byAccount = new Map<string | null, EventRecord[]>();
  /** First record stored under each id (a same-id duplicate does not replace it). */
  private readonly byId = new Map<string, EventRecord>();
  private nextSeq = 0;

  get size(): number {
    let n = 0;
    for (const list of this.byAccount.values()) n += list.length;
    return n;
  }

  /** Stamps `seq` and stores one event. */
  add(record: Omit<EventRecord, 'seq'>): EventRecord {
    const stored: EventRecord = { ...record, seq: this.nextSeq++ };
    const list = this.listOf(stored.account);
    const last = list[list.length - 1];
    if (!last || storageOrder(last, stored) <= 0) list.push(stored);
    else list.splice(this.upperBound(list, stored), 0, stored);
    if (!this.byId.has(stored.id)) this.byId.set(stored.id, stored);
    return stored;
  }

  /**
   * Many events of one account at once (bulk seeding): stamped in place and sorted once
   * (a near-linear pass when they come oldest first, as seeding hands them over).
   */
  addMany(account: string | null, records: EventRecord[]): void {
    const list = this.listOf(account);
    for (const record of records) {
      record.account = account;
      record.seq = this.nextSeq++;
      list.push(record);
      if (!this.byId.has(record.id)) this.byId.set(record.id, record);
    }
    list.sort(storageOrder);
  }

  get(id: string): EventRecord | undefined {
    return this.byId.get(id);
  }

  /** Every event of an account, oldest first, visible or not (the live array: do not modify). */
  all(account: string | null): readonly EventRecord[] {
    return this.byAccount.get(account) ?? [];
  }

  accounts(): Array<string | null> {
    return [...this.byAccount.keys()];
  }

  clear(): void {
    this.byAccount.clear();
    this.byId.clear();
    this.nextSeq = 0;
  }

  /** Listed now: visible and younger than the retention. */
  static listable(record: EventRecord, nowMs: number): boolean {
    return record.visibleAtMs <= nowMs && record.created * 1000 >= nowMs - EVENT_RETENTION_SECONDS * 1000;
  }

  /**
   * Stripe's list semantics over `gte <= created < lt`, newest first. Hidden and
   * filtered-out events are skipped while scanning, so a page costs the events it
   * passes over, not the account's total.
   */
  list(account: string | null, query: EventQuery): EventListAnswer {
    const list = this.byAccount.get(account) ?? [];
    const retainedFrom = Math.ceil((query.nowMs - EVENT_RETENTION_SECONDS * 1000) / 1000);
    const lo = this.firstAtOrAfter(list, Math.max(query.gte, retainedFrom));
    const hi = this.firstAtOrAfter(list, query.lt);
    const wanted = (record: EventRecord) => record.visibleAtMs <= query.nowMs && (query.matches?.(record.type) ?? true);

    if (query.endingBefore !== undefined) {
      const cursor = this.cursor(account, query.endingBefore);
      if (!cursor) return { ok: false, missingCursor: query.endingBefore, param: 'ending_before' };
      // The `limit` events just newer than the cursor, then shown newest first.
      const found: EventRecord[] = [];
      for (let i = Math.max(lo, this.upperBound(list, cursor)); i < hi && found.length <= query.limit; i += 1) {
        const record = list[i] as EventRecord;
        if (wanted(record)) found.push(record);
      }
      const hasMore = found.length > query.limit;
      return { ok: true, data: found.slice(0, query.limit).reverse(), hasMore };
    }

    let start = hi - 1;
    if (query.startingAfter !== undefined) {
      const cursor = this.cursor(account, query.startingAfter);
      if (!cursor) return { ok: false, missingCursor: query.startingAfter, param: 'starting_after' };
      start = Math.min(start, this.lowerBound(list, cursor) - 1);
    }
    const found: EventRecord[] = [];
    for (let i = start; i >= lo && found.length <= query.limit; i -= 1) {
      const record = list[i] as EventRecord;
      if (wanted(record)) found.push(record);
    }
    return { ok: true, data: found.slice(0, query.limit), hasMore: found.length > query.limit };
  }

  private cursor(account: string | null, id: string): EventRecord | undefined {
    const record = this.byId.get(id);
    return record && record.account === account ? record : undefined;
  }

  private listOf(account: string | null): EventRecord[] {
    let list = this.byAccount.get(account);
    if (!list) {
      list = [];
      this.byAccount.set(account, list);
    }
    return list;
  }

  /** Index of the first event with `created >= seconds`. */
  private firstAtOrAfter(list: readonly EventRecord[], seconds: number): number {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((list[mid] as EventRecord).created < seconds) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Index of `record` itself (the first not older than it). */
  private lowerBound(list: readonly EventRecord[], record: EventRecord): number {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (storageOrder(list[mid] as EventRecord, record) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Index just past `record` (the first newer than it). */
  private upperBound(list: readonly EventRecord[], record: EventRecord): number {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (storageOrder(list[mid] as EventRecord, record) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
