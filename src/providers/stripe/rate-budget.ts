import { setTimeout as delay } from 'node:timers/promises';

/** Milliseconds on a monotonic clock. */
export type MonotonicClock = () => number;
/** Waits `ms`; rejects when `signal` aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const realSleep: Sleep = (ms, signal) =>
  ms <= 0 ? Promise.resolve() : delay(ms, undefined, signal ? { signal } : undefined);
export const monotonicNow: MonotonicClock = () => performance.now();

export interface RateBudgetOptions {
  /** Requests per second for the whole process; Stripe's default read limit leaves room above 20. */
  ratePerSecond?: number;
  /**
   * Requests that may go out back to back after an idle spell. Small by default: a
   * burst gains nothing over a long sweep and is what trips a server-side limiter.
   */
  burst?: number;
  clock?: MonotonicClock;
  sleep?: Sleep;
}

export const DEFAULT_RATE_PER_SECOND = 25;

/** Which of Stripe's limits a 429 named (`Stripe-Rate-Limited-Reason`): an account's endpoint, or the whole key. */
export type LimitScope = 'account' | 'global';

/**
 * What one request waits on before it goes out, for the account it is made for (null:
 * the platform): a single process-wide bucket (RateBudget), or Stripe's two limits
 * (StripeBudgets, budgets.ts).
 */
export interface RequestBudget {
  acquireFor(account: string | null, signal?: AbortSignal): Promise<void>;
  /** Stripe answered 429: hold back the budget it named (unknown: every budget the request drew from). */
  pauseFor(account: string | null, ms: number, scope?: LimitScope): void;
  /** Requests of this account already wait for their tokens: splitting a listing further only adds requests. */
  backloggedFor(account: string | null): boolean;
}

/**
 * A token bucket every Stripe request of the process draws from; share one instance
 * across accounts and listers so that together they stay under the limit.
 *
 * Each caller reserves a token up front (the balance may go negative) and then waits
 * until its token exists. Reservations are handed out in call order, so the waits are
 * first come, first served without a queue, and a reservation is a pure computation
 * that tests drive with a fake clock.
 */
export class RateBudget implements RequestBudget {
  readonly ratePerSecond: number;
  readonly burst: number;
  private readonly clock: MonotonicClock;
  private readonly sleep: Sleep;
  private tokens: number;
  private updatedAt: number;
  private granted = 0;
  private waitedMs = 0;
  private pauses = 0;

  constructor(options: RateBudgetOptions = {}) {
    this.ratePerSecond = options.ratePerSecond ?? DEFAULT_RATE_PER_SECOND;
    this.burst = options.burst ?? 1;
    if (!(this.ratePerSecond > 0) || !Number.isFinite(this.ratePerSecond)) {
      throw new RangeError(`rate budget must be a positive number of requests per second (got ${this.ratePerSecond})`);
    }
    if (!(this.burst >= 1) || !Number.isFinite(this.burst))
      throw new RangeError(`burst must be at least 1 (got ${this.burst})`);
    this.clock = options.clock ?? monotonicNow;
    this.sleep = options.sleep ?? realSleep;
    this.tokens = this.burst;
    this.updatedAt = this.clock();
  }

  /** Takes one token and says how many milliseconds from now it may be spent. */
  reserve(): number {
    this.refill();
    this.tokens -= 1;
    this.granted += 1;
    const waitMs = this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.ratePerSecond;
    this.waitedMs += waitMs;
    return waitMs;
  }

  /**
   * Holds back every request not yet granted for `ms`: the server said 429, and a
   * limit is shared, so the whole process slows down rather than only the request
   * that was refused. Pauses do not add up; the longest wins.
   */
  pause(ms: number): void {
    if (!(ms > 0)) return;
    this.refill();
    // With this balance the next reservation waits exactly `ms`, and later ones follow at the normal pace.
    this.tokens = Math.min(this.tokens, 1 - (ms * this.ratePerSecond) / 1000);
    this.pauses += 1;
  }

  /**
   * True while requests wait for their token: the process already asks for more than the
   * rate, so listing more sub-windows at once would only add requests (each split ends
   * in a partial page), not speed.
   */
  backlogged(): boolean {
    this.refill();
    return this.tokens < 0;
  }

  /** Resolves when the caller may send one request. */
  async acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const waitMs = this.reserve();
    if (waitMs > 0) await this.sleep(waitMs, signal);
  }

  acquireFor(_account: string | null, signal?: AbortSignal): Promise<void> {
    return this.acquire(signal);
  }

  pauseFor(_account: string | null, ms: number): void {
    this.pause(ms);
  }

  backloggedFor(): boolean {
    return this.backlogged();
  }

  stats(): { granted: number; waitedMs: number; pauses: number; ratePerSecond: number } {
    return { granted: this.granted, waitedMs: this.waitedMs, pauses: this.pauses, ratePerSecond: this.ratePerSecond };
  }

  private refill(): void {
    const now = this.clock();
    const elapsed = Math.max(0, now - this.updatedAt);
    this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.ratePerSecond) / 1000);
    this.updatedAt = now;
  }
}
