import { describe, expect, it } from 'vitest';
import { admittedListingRequests, PriorityGate } from '../../src/providers/stripe/priority-gate.js';
import { deferred, settle } from '../support/promises.js';

/** The gate that makes slices listed at once finish in the order they are judged (docs/performance.md). */

function held(gate: PriorityGate, priority: number, order: number[], signal?: AbortSignal) {
  const done = deferred<void>();
  const result = gate.run(
    priority,
    async () => {
      order.push(priority);
      await done.promise;
      return priority;
    },
    signal,
  );
  return { result, finish: () => done.resolve() };
}

describe('PriorityGate', () => {
  it('admits at most the limit; as each finishes, the waiting task of the lowest priority goes next', async () => {
    const gate = new PriorityGate(() => 2);
    const order: number[] = [];
    const tasks = [50, 40, 30, 10, 20, 10].map((p) => held(gate, p, order));
    await settle();
    expect(order).toEqual([50, 40]);
    expect(gate.stats()).toEqual({ active: 2, waiting: 4 });
    tasks[0]!.finish();
    await tasks[0]!.result;
    await settle();
    expect(order).toEqual([50, 40, 10]); // the first 10 (arrival order among equals)
    for (const t of tasks) t.finish();
    expect(await Promise.all(tasks.map((t) => t.result))).toEqual([50, 40, 30, 10, 20, 10]);
    expect(order).toEqual([50, 40, 10, 10, 20, 30]);
    expect(gate.stats()).toEqual({ active: 0, waiting: 0 });
  });

  it('a task that fails frees its place; a waiter whose signal aborts leaves the queue with the reason', async () => {
    const gate = new PriorityGate(() => 1);
    const order: number[] = [];
    const failing = gate.run(1, () => Promise.reject(new Error('Stripe is down')));
    const controller = new AbortController();
    const abandoned = held(gate, 2, order, controller.signal);
    const next = held(gate, 3, order);
    await expect(failing).rejects.toThrow('Stripe is down');
    await settle();
    expect(order).toEqual([2]);
    next.finish();
    abandoned.finish();
    await abandoned.result;
    await next.result;
    const blocker = held(gate, 0, order);
    const waiting = held(gate, 5, order, controller.signal);
    await settle();
    controller.abort(new Error('the run ended'));
    await expect(waiting.result).rejects.toThrow('the run ended');
    expect(gate.stats()).toEqual({ active: 1, waiting: 0 });
    blocker.finish();
    await blocker.result;
    expect(gate.stats()).toEqual({ active: 0, waiting: 0 });
  });

  it('admits rate × latency × 1.25 + 1 listing requests (300 ms assumed before the first answer)', () => {
    expect(admittedListingRequests({ ratePerSecond: 25, meanLatencyMs: 300 })).toBe(11);
    expect(admittedListingRequests({ ratePerSecond: 25, meanLatencyMs: null })).toBe(11);
    expect(admittedListingRequests({ ratePerSecond: 1, meanLatencyMs: 20 })).toBe(2);
  });
});
