import type { RateLimitedReason } from './errors.js';

/** What one account (the `Stripe-Account` header; null: the platform) asked and was answered. */
export interface AccountRequests {
  account: string | null;
  requests: number;
  /** Requests per endpoint ('GET /v1/charges'). */
  endpoints: Record<string, number>;
  /** Answers per HTTP status ('200', '429', …, or 'reset'). */
  statuses: Record<string, number>;
}

/** A request answered 429 and not (yet) asked again with an answer other than 429. */
export interface Unretried429 {
  account: string | null;
  endpoint: string;
  /** Method, path and query (and a POST's body): what identifies "the same request". */
  request: string;
  /** 429s answered to it since its last other answer. */
  count: number;
}

/**
 * Requests per endpoint ('GET /v1/charges') and the statuses they were answered with,
 * in total and per account; the 429s the double's rate limiters answered, by
 * `Stripe-Rate-Limited-Reason`; and the 429s whose request was never asked again.
 */
export class RequestCounters {
  private readonly requests = new Map<string, number>();
  private readonly statuses = new Map<string, Map<string, number>>();
  private readonly perAccount = new Map<string | null, AccountRequests>();
  private readonly limited = new Map<RateLimitedReason, number>();
  private readonly pending429 = new Map<string, Unretried429>();

  record(endpoint: string, account: string | null = null): void {
    this.requests.set(endpoint, (this.requests.get(endpoint) ?? 0) + 1);
    const mine = this.accountOf(account);
    mine.requests += 1;
    mine.endpoints[endpoint] = (mine.endpoints[endpoint] ?? 0) + 1;
  }

  /**
   * `status` is the HTTP status, or 'reset' for a connection dropped on purpose;
   * `request` (method, path, query, body) tells a retry of a 429'd request from another.
   */
  answered(endpoint: string, status: number | 'reset', account: string | null = null, request?: string): void {
    let byStatus = this.statuses.get(endpoint);
    if (!byStatus) this.statuses.set(endpoint, (byStatus = new Map()));
    byStatus.set(String(status), (byStatus.get(String(status)) ?? 0) + 1);
    const mine = this.accountOf(account);
    mine.statuses[String(status)] = (mine.statuses[String(status)] ?? 0) + 1;
    if (request !== undefined) this.track429(endpoint, status, account, request);
  }

  /** A 429 from one of the double's rate limiters (not an injected fault). */
  rateLimitedBy(reason: RateLimitedReason): void {
    this.limited.set(reason, (this.limited.get(reason) ?? 0) + 1);
  }

  get(endpoint: string): number {
    return this.requests.get(endpoint) ?? 0;
  }

  /** How many requests to `endpoint` were answered with `status`. */
  status(endpoint: string, status: number | 'reset'): number {
    return this.statuses.get(endpoint)?.get(String(status)) ?? 0;
  }

  /** Answers with `status` over every endpoint. */
  statusTotal(status: number | 'reset'): number {
    let sum = 0;
    for (const byStatus of this.statuses.values()) sum += byStatus.get(String(status)) ?? 0;
    return sum;
  }

  /** Requests made for `account` (null: the platform), to one endpoint or to all. */
  account(account: string | null, endpoint?: string): number {
    const mine = this.perAccount.get(account);
    if (!mine) return 0;
    return endpoint === undefined ? mine.requests : (mine.endpoints[endpoint] ?? 0);
  }

  /** Every account that made a request, with its requests per endpoint and its answers per status. */
  accounts(): AccountRequests[] {
    return [...this.perAccount.values()].map((a) => ({
      ...a,
      endpoints: { ...a.endpoints },
      statuses: { ...a.statuses },
    }));
  }

  /** 429s the double's limiters answered: for one reason, or all. */
  rateLimited(reason?: RateLimitedReason): number {
    if (reason !== undefined) return this.limited.get(reason) ?? 0;
    let sum = 0;
    for (const n of this.limited.values()) sum += n;
    return sum;
  }

  /** 429s whose request was not asked again with a different answer: Stripe's advice (back off, retry) not taken. */
  unretried429s(): Unretried429[] {
    return [...this.pending429.values()].map((u) => ({ ...u }));
  }

  total(): number {
    let sum = 0;
    for (const n of this.requests.values()) sum += n;
    return sum;
  }

  snapshot(): Record<string, { requests: number; statuses: Record<string, number> }> {
    const out: Record<string, { requests: number; statuses: Record<string, number> }> = {};
    for (const [endpoint, requests] of this.requests) {
      out[endpoint] = { requests, statuses: Object.fromEntries(this.statuses.get(endpoint) ?? []) };
    }
    return out;
  }

  reset(): void {
    this.requests.clear();
    this.statuses.clear();
    this.perAccount.clear();
    this.limited.clear();
    this.pending429.clear();
  }

  private track429(endpoint: string, status: number | 'reset', account: string | null, request: string): void {
    const slot = `${account ?? ''}\u0000${request}`;
    if (status !== 429) {
      this.pending429.delete(slot);
      return;
    }
    const pending = this.pending429.get(slot);
    if (pending) pending.count += 1;
    else this.pending429.set(slot, { account, endpoint, request, count: 1 });
  }

  private accountOf(account: string | null): AccountRequests {
    let mine = this.perAccount.get(account);
    if (!mine) this.perAccount.set(account, (mine = { account, requests: 0, endpoints: {}, statuses: {} }));
    return mine;
  }
}
