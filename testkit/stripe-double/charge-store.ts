/**
 * Charges per account, kept in one array per account in list order (created
 * descending, then id descending), so a list query is two binary searches and a
 * slice, whatever the number of charges. Ids are also indexed for direct lookups.
 */
export type ChargeStatus = 'succeeded' | 'failed' | 'pending';

export interface ChargeRecord {
  id: string;
  /** The Stripe-Account the charge lives in; null for the platform. */
  account: string | null;
  created: number;
  amount: number;
  amountCaptured: number;
  amountRefunded: number;
  currency: string;
  status: ChargeStatus;
  captured: boolean;
  disputed: boolean;
  paymentIntent: string | null;
  paymentMethod: string | null;
  customer: string | null;
  description: string | null;
  /** May be shared between seeded charges; never mutated in place. */
  metadata: Readonly<Record<string, string>>;
  failureCode: string | null;
  failureMessage: string | null;
  declineCode: string | null;
  /** Fields left out of the rendered JSON, to test how clients cope with a malformed charge. */
  omitFields?: readonly string[];
  /**
   * Rendered with the rest of a real charge's fields (billing and card details, receipt
   * URL, refunds list, …), derived from the record: about 2 KB of JSON, as Stripe sends.
   */
  realistic?: boolean;
  /** Its balance transaction's figures, fixed when first needed (ledger.ts). */
  settlement?: ChargeSettlement;
}

/** A charge's balance transaction: the captured amount in the account's settlement currency, less fees. */
export interface ChargeSettlement {
  currency: string;
  amount: number;
  fee: number;
  exchangeRate: number | null;
  created: number;
  availableOn: number;
}

export interface ListQuery {
  gte: number;
  lt: number;
  limit: number;
  startingAfter?: string;
  endingBefore?: string;
}

export type ListAnswer =
  { ok: true; data: ChargeRecord[]; hasMore: boolean } | { ok: false; missingCursor: string; param: string };

/** Negative when `a` comes before `b` in list order. */
export function listOrder(a: ChargeRecord, b: ChargeRecord): number {
  if (a.created !== b.created) return b.created - a.created;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

export class ChargeStore {
  private readonly byAccount = new Map<string | null, ChargeRecord[]>();
  private readonly byId = new Map<string, ChargeRecord>();
  /** Late-listed charges: they exist (retrievable by id) but join the listing only at `listedAtMs`. */
  private late: Array<{ record: ChargeRecord; listedAtMs: number }> = [];

  /** `now` (milliseconds, the double's clock) decides when late-listed charges appear. */
  constructor(private readonly now: () => number = Date.now) {}

  get(id: string): ChargeRecord | undefined {
    return this.byId.get(id);
  }

  /** Charges that exist, listed or not yet. */
  size(account?: string | null): number {
    this.promoteDue();
    if (account === undefined) return this.byId.size;
    return (this.byAccount.get(account)?.length ?? 0) + this.late.filter((l) => l.record.account === account).length;
  }

  accounts(): Array<string | null> {
    return [...this.byAccount.keys()];
  }

  /** All listed charges of an account in list order (the live array: do not modify). */
  all(account: string | null): readonly ChargeRecord[] {
    this.promoteDue();
    return this.byAccount.get(account) ?? [];
  }

  /** With `listedAtMs` in the future, the charge is retrievable now but listed only from then on. */
  insert(record: ChargeRecord, listedAtMs?: number): void {
    if (this.byId.has(record.id)) throw new Error(`duplicate charge id ${record.id}`);
    const list = this.listOf(record.account);
    this.byId.set(record.id, record);
    if (listedAtMs !== undefined && listedAtMs > this.now()) this.late.push({ record, listedAtMs });
    else list.splice(this.lowerBound(list, record), 0, record);
  }

  /** Charges not listed yet, with the instant they will be. */
  unlisted(): ReadonlyArray<{ record: ChargeRecord; listedAtMs: number }> {
    this.promoteDue();
    return this.late;
  }

  /** Adds many charges at once; `records` must already be in list order. Linear merge, no re-sort. */
  insertSorted(account: string | null, records: ChargeRecord[]): void {
    for (const record of records) {
      if (this.byId.has(record.id)) throw new Error(`duplicate charge id ${record.id}`);
      this.byId.set(record.id, record);
    }
    const existing = this.byAccount.get(account) ?? [];
    const merged = new Array<ChargeRecord>(existing.length + records.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < existing.length && j < records.length) {
      merged[k++] =
        listOrder(existing[i] as ChargeRecord, records[j] as ChargeRecord) <= 0
          ? (existing[i++] as ChargeRecord)
          : (records[j++] as ChargeRecord);
    }
    while (i < existing.length) merged[k++] = existing[i++] as ChargeRecord;
    while (j < records.length) merged[k++] = records[j++] as ChargeRecord;
    this.byAccount.set(account, merged);
  }

  clear(): void {
    this.byAccount.clear();
    this.byId.clear();
    this.late = [];
  }

  /** Stripe's list semantics over `gte <= created < lt`, newest first. */
  list(account: string | null, query: ListQuery): ListAnswer {
    this.promoteDue();
    const list = this.byAccount.get(account) ?? [];
    // Newest first: the range starts at the first charge older than `lt` and ends before the first older than `gte`.
    let start = this.firstOlderThan(list, query.lt);
    let end = this.firstOlderThan(list, query.gte);
    if (query.startingAfter !== undefined) {
      const cursor = this.cursor(account, query.startingAfter);
      if (!cursor) return { ok: false, missingCursor: query.startingAfter, param: 'starting_after' };
      start = Math.max(start, this.lowerBound(list, cursor) + 1);
      const stop = Math.min(end, start + query.limit);
      return { ok: true, data: list.slice(start, Math.max(start, stop)), hasMore: stop < end };
    }
    if (query.endingBefore !== undefined) {
      const cursor = this.cursor(account, query.endingBefore);
      if (!cursor) return { ok: false, missingCursor: query.endingBefore, param: 'ending_before' };
      end = Math.min(end, this.lowerBound(list, cursor));
      const from = Math.max(start, end - query.limit);
      return { ok: true, data: list.slice(from, Math.max(from, end)), hasMore: from > start };
    }
    const stop = Math.min(end, start + query.limit);
    return { ok: true, data: list.slice(start, Math.max(start, stop)), hasMore: stop < end };
  }

  /** Moves late-listed charges whose time has come into their account's list. */
  private promoteDue(): void {
    if (this.late.length === 0) return;
    const now = this.now();
    const due = this.late.filter((l) => l.listedAtMs <= now);
    if (due.length === 0) return;
    this.late = this.late.filter((l) => l.listedAtMs > now);
    for (const { record } of due) {
      const list = this.listOf(record.account);
      list.splice(this.lowerBound(list, record), 0, record);
    }
  }

  private cursor(account: string | null, id: string): ChargeRecord | undefined {
    const record = this.byId.get(id);
    return record && record.account === account ? record : undefined;
  }

  private listOf(account: string | null): ChargeRecord[] {
    let list = this.byAccount.get(account);
    if (!list) {
      list = [];
      this.byAccount.set(account, list);
    }
    return list;
  }

  /** Index of the first charge with `created < seconds`. */
  private firstOlderThan(list: readonly ChargeRecord[], seconds: number): number {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((list[mid] as ChargeRecord).created >= seconds) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Index of the first charge not before `record` in list order (its own index when present). */
  private lowerBound(list: readonly ChargeRecord[], record: ChargeRecord): number {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (listOrder(list[mid] as ChargeRecord, record) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
