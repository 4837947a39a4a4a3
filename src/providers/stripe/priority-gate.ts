import { requestsPerLatency } from '../../sweep/provider.js';

/**
 * Listing requests in the order the judgement needs them (docs/performance.md "The throughput design"). The
 * sweep lists many slices at once under one rate budget, which grants tokens first come,
 * first served: every listing would then advance at the same pace, the slices would all
 * finish late and together, and the judgement would wait at the start and have a backlog
 * to clear after the last request. This gate admits only as many listing requests as
 * keep the budget busy (rate × latency, with a margin), and when one finishes it admits
 * the waiting request of the earliest window first, so slices finish one after another,
 * in the order they are judged.
 */
export class PriorityGate {
  private active = 0;
  private seq = 0;
  private readonly waiting: Waiter[] = [];

  /** `limit`: requests admitted at once, read afresh at every admission. */
  constructor(private readonly limit: () => number) {}

  /** Runs `task` once admitted; a lower `priority` goes first, equal ones in arrival order. */
  async run<T>(priority: number, task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.enter(priority, signal);
    try {
      return await task();
    } finally {
      this.active -= 1;
      this.admit();
    }
  }

  /** Requests admitted and not finished, and requests waiting: for tests and logs. */
  stats(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }

  private enter(priority: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        priority,
        seq: this.seq++,
        go: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
      this.admit();
    });
  }

  private admit(): void {
    while (this.waiting.length > 0 && this.active < Math.max(1, this.limit())) {
      let best = 0;
      for (let i = 1; i < this.waiting.length; i += 1) {
        const w = this.waiting[i] as Waiter;
        const b = this.waiting[best] as Waiter;
        if (w.priority < b.priority || (w.priority === b.priority && w.seq < b.seq)) best = i;
      }
      const [next] = this.waiting.splice(best, 1);
      this.active += 1;
      next?.go();
    }
  }
}

interface Waiter {
  priority: number;
  seq: number;
  go: () => void;
}

/**
 * Listing requests admitted at once: the requests the budget can serve during one mean
 * latency, a quarter more, and one (300 ms assumed before the first answer). Fewer would
 * leave the budget idle; many more would let every listing advance at once again.
 */
export function admittedListingRequests(pace: { ratePerSecond: number; meanLatencyMs: number | null }): number {
  return Math.ceil(requestsPerLatency(pace) * 1.25) + 1;
}
