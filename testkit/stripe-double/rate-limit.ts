import type { RateLimitedReason } from './errors.js';

export interface RateLimit {
  perSecond: number;
  /** Requests accepted back to back after an idle spell; default one second's worth (at least one). */
  burst?: number;
  /** Sent as `Retry-After` on the 429; Stripe itself sends none. */
  retryAfterSeconds?: number;
}

/** The limit a refused request exceeded, and the `Stripe-Rate-Limited-Reason` it is answered with. */
export interface Limited {
  limit: RateLimit;
  reason: RateLimitedReason;
}

class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    readonly limit: RateLimit,
    now: number,
  ) {
    this.tokens = this.burst;
    this.updatedAt = now;
  }

  private get burst(): number {
    return this.limit.burst ?? Math.max(1, this.limit.perSecond);
  }

  /** Refills for the time since the last look; true when a request may pass. */
  ready(now: number): boolean {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.updatedAt) * this.limit.perSecond) / 1000);
    this.updatedAt = now;
    return this.tokens >= 1;
  }

  take(): void {
    this.tokens -= 1;
  }
}

/**
 * Stripe's rate limiters as token buckets on real (monotonic) time, the server side of
 * a client's budgets: a global limit per API key (Stripe's 100 requests a second in live
 * mode), a limit per account and endpoint (Stripe's 25 a second per endpoint; an
 * endpoint may have its own), and, older, a limit on one endpoint across all accounts.
 * A refused request takes no token from any bucket.
 */
export class EndpointRateLimiter {
  private readonly endpointBuckets = new Map<string, TokenBucket>();
  private readonly accountLimits = new Map<string, RateLimit>();
  private readonly accountBuckets = new Map<string, TokenBucket>();
  private globalLimit: RateLimit | null = null;
  private readonly globalBuckets = new Map<string, TokenBucket>();

  constructor(private readonly nowMs: () => number = () => performance.now()) {}

  /** One endpoint, across every account and key; null removes it. */
  set(endpoint: string, limit: RateLimit | null): void {
    if (limit === null) this.endpointBuckets.delete(endpoint);
    else this.endpointBuckets.set(endpoint, new TokenBucket(checked(limit), this.nowMs()));
  }

  /** Every (account, endpoint) pair, or only `endpoint`'s pairs (an endpoint's own limit); null removes it. */
  setPerAccount(limit: RateLimit | null, endpoint = '*'): void {
    if (limit === null) this.accountLimits.delete(endpoint);
    else this.accountLimits.set(endpoint, checked(limit));
    this.accountBuckets.clear();
  }

  /** All requests made with one API key; null removes it. */
  setGlobal(limit: RateLimit | null): void {
    this.globalLimit = limit === null ? null : checked(limit);
    this.globalBuckets.clear();
  }

  /** Takes a token from every bucket the request falls in; returns what was exceeded, or undefined when it may pass. */
  take(endpoint: string, account: string | null = null, key = ''): Limited | undefined {
    const now = this.nowMs();
    const buckets: Array<[TokenBucket, RateLimitedReason]> = [];
    if (this.globalLimit) buckets.push([bucketOf(this.globalBuckets, key, this.globalLimit, now), 'global-rate']);
    const perAccount = this.accountLimits.get(endpoint) ?? this.accountLimits.get('*');
    if (perAccount) {
      const slot = `${account ?? ''}\u0000${endpoint}`;
      buckets.push([bucketOf(this.accountBuckets, slot, perAccount, now), 'endpoint-rate']);
    }
    const endpointWide = this.endpointBuckets.get(endpoint);
    if (endpointWide) buckets.push([endpointWide, 'endpoint-rate']);
    for (const [bucket, reason] of buckets) if (!bucket.ready(now)) return { limit: bucket.limit, reason };
    for (const [bucket] of buckets) bucket.take();
    return undefined;
  }

  clear(): void {
    this.endpointBuckets.clear();
    this.accountLimits.clear();
    this.accountBuckets.clear();
    this.globalLimit = null;
    this.globalBuckets.clear();
  }
}

function bucketOf(buckets: Map<string, TokenBucket>, slot: string, limit: RateLimit, now: number): TokenBucket {
  let bucket = buckets.get(slot);
  if (!bucket) buckets.set(slot, (bucket = new TokenBucket(limit, now)));
  return bucket;
}

function checked(limit: RateLimit): RateLimit {
  if (!(limit.perSecond > 0)) throw new RangeError(`rate limit must be positive (got ${limit.perSecond})`);
  return limit;
}

/** A limit given as a number is that many requests per second. */
export function rateLimitOf(limit: RateLimit | number | null): RateLimit | null {
  return typeof limit === 'number' ? { perSecond: limit } : limit;
}
