import {
  monotonicNow,
  RateBudget,
  realSleep,
  type LimitScope,
  type MonotonicClock,
  type RequestBudget,
  type Sleep,
} from './rate-budget.js';

export interface StripeBudgetOptions {
  /** Requests per second per account and endpoint (Stripe: 25). */
  perAccount: number;
  /** Requests per second of the whole process, every account and endpoint (Stripe: 100 per key in live mode). */
  global: number;
  clock?: MonotonicClock;
  sleep?: Sleep;
}

/** One account's bucket for one endpoint, and the earliest its next request may leave. */
interface Slot {
  budget: RateBudget;
  nextAt: number;
}

/**
 * Stripe's two rate limits as the client's budgets (docs/platforms.md "Two rate budgets"):
 * each account and endpoint has a bucket of its own, and every request also draws from
 * one bucket for the whole process. A request waits for its account's token first, then
 * for the global one, so a busy account reaches the global queue only as fast as its own
 * limit lets it, and the other accounts' requests interleave with its own (first come,
 * first served) instead of queueing behind its backlog. After the global wait the
 * account's spacing is enforced once more: a global backlog that held several of one
 * account's requests must not release them back to back.
 */
export class StripeBudgets {
  readonly global: RateBudget;
  readonly perAccount: number;
  private readonly slots = new Map<string, Slot>();
  private readonly clock: MonotonicClock;
  private readonly sleep: Sleep;

  constructor(options: StripeBudgetOptions) {
    this.clock = options.clock ?? monotonicNow;
    this.sleep = options.sleep ?? realSleep;
    this.perAccount = options.perAccount;
    this.global = new RateBudget({ ratePerSecond: options.global, clock: this.clock, sleep: this.sleep });
    // Checked here, once, with RateBudget's own message.
    void new RateBudget({ ratePerSecond: options.perAccount, clock: this.clock, sleep: this.sleep });
  }

  /** The budget of one endpoint (`GET /v1/charges`) for every account; `perAccount` overrides the rate for it. */
  endpoint(name: string, perAccount = this.perAccount): RequestBudget {
    return {
      acquireFor: (account, signal) => this.acquire(this.slot(name, account, perAccount), signal),
      pauseFor: (account, ms, scope) => this.pause(this.slot(name, account, perAccount), ms, scope),
      backloggedFor: (account) => this.slot(name, account, perAccount).budget.backlogged() || this.global.backlogged(),
    };
  }

  /** Requests granted so far, all accounts together. */
  granted(): number {
    return this.global.stats().granted;
  }

  private slot(endpoint: string, account: string | null, rate: number): Slot {
    const key = `${account ?? ''}\u0000${endpoint}`;
    let slot = this.slots.get(key);
    if (!slot) {
      const budget = new RateBudget({ ratePerSecond: rate, clock: this.clock, sleep: this.sleep });
      this.slots.set(key, (slot = { budget, nextAt: -Infinity }));
    }
    return slot;
  }

  private async acquire(slot: Slot, signal?: AbortSignal): Promise<void> {
    await slot.budget.acquire(signal);
    await this.global.acquire(signal);
    const now = this.clock();
    const at = Math.max(now, slot.nextAt);
    slot.nextAt = at + 1000 / slot.budget.ratePerSecond;
    if (at > now) await this.sleep(at - now, signal);
  }

  private pause(slot: Slot, ms: number, scope: LimitScope | undefined): void {
    if (scope !== 'global') {
      slot.budget.pause(ms);
      slot.nextAt = Math.max(slot.nextAt, this.clock() + ms);
    }
    if (scope !== 'account') this.global.pause(ms);
  }
}
