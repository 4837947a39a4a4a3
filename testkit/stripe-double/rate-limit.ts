export interface RateLimit {
  perSecond: number;
  /** Requests accepted back to back after an idle spell; default one second's worth. */
  burst?: number;
  /** Sent as `Retry-After` on the 429; Stripe itself sends none. */
  retryAfterSeconds?: number;
}

interface Bucket {
  limit: RateLimit;
  tokens: number;
  updatedAt: number;
}

/**
 * Per-endpoint request rate limits, as token buckets on real (monotonic) time: the
 * server side of the client's budget, answering 429 like Stripe when exceeded.
 */
export class EndpointRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly nowMs: () => number = () => performance.now()) {}

  set(endpoint: string, limit: RateLimit | null): void {
    if (limit === null) {
      this.buckets.delete(endpoint);
      return;
    }
    if (!(limit.perSecond > 0)) throw new RangeError(`rate limit must be positive (got ${limit.perSecond})`);
    const burst = limit.burst ?? limit.perSecond;
    this.buckets.set(endpoint, { limit, tokens: burst, updatedAt: this.nowMs() });
  }

  /** Takes a token; returns the limit that was exceeded, or undefined when the request may pass. */
  take(endpoint: string): RateLimit | undefined {
    const bucket = this.buckets.get(endpoint);
    if (!bucket) return undefined;
    const now = this.nowMs();
    const burst = bucket.limit.burst ?? bucket.limit.perSecond;
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.updatedAt) * bucket.limit.perSecond) / 1000);
    bucket.updatedAt = now;
    if (bucket.tokens < 1) return bucket.limit;
    bucket.tokens -= 1;
    return undefined;
  }

  clear(): void {
    this.buckets.clear();
  }
}
