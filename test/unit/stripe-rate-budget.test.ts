import { describe, expect, it } from 'vitest';
import { RateBudget } from '../../src/providers/stripe/rate-budget.js';

/** A clock the test moves by hand, and a sleep that records what it was asked and advances the clock. */
function fakeTime() {
  let now = 0;
  const sleeps: number[] = [];
  return {
    clock: () => now,
    advance: (ms: number) => {
      now += ms;
    },
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
    sleeps,
  };
}

describe('RateBudget (token bucket)', () => {
  it('spaces requests 1/rate apart, first come first served, once the burst is spent', () => {
    const time = fakeTime();
    const budget = new RateBudget({ ratePerSecond: 20, burst: 1, clock: time.clock, sleep: time.sleep });
    expect([budget.reserve(), budget.reserve(), budget.reserve(), budget.reserve()]).toEqual([0, 50, 100, 150]);
  });

  it('is backlogged exactly while a reservation waits for its token', () => {
    const time = fakeTime();
    const budget = new RateBudget({ ratePerSecond: 10, burst: 1, clock: time.clock, sleep: time.sleep });
    expect(budget.backlogged()).toBe(false);
    budget.reserve(); // the burst token
    expect(budget.backlogged()).toBe(false);
    budget.reserve(); // waits 100 ms
    expect(budget.backlogged()).toBe(true);
    time.advance(100);
    expect(budget.backlogged()).toBe(false);
  });

  it('lets a burst through at once, then paces', () => {
    const time = fakeTime();
    const budget = new RateBudget({ ratePerSecond: 10, burst: 3, clock: time.clock, sleep: time.sleep });
    expect([budget.reserve(), budget.reserve(), budget.reserve(), budget.reserve(), budget.reserve()]).toEqual([
      0, 0, 0, 100, 200,
    ]);
  });

  it('refills with time but never beyond the burst', () => {
    const time = fakeTime();
    const budget = new RateBudget({ ratePerSecond: 10, burst: 2, clock: time.clock, sleep: time.sleep });
    budget.reserve();
    budget.reserve();
    time.advance(60_000); // a long idle spell earns only `burst` tokens
    expect([budget.reserve(), budget.reserve(), budget.reserve()]).toEqual([0, 0, 100]);
  });

  it('counts waits already reserved when time passes', () => {
    const time = fakeTime();
    const budget = new RateBudget({ ratePerSecond: 20, clock: time.clock, sleep: time.sleep });
    budget.reserve(); // 0
    budget.reserve(); // 50
    time.advance(30);
    // 30 ms later the next slot is at 100 ms from the start, i.e. 70 ms from now.
    expect(budget.reserve()).toBeCloseTo(70, 6);
  });

  it('acquire sleeps exactly the reserved wait and holds the rate over many requests', async () => {
    const time = fakeTime();
    const budget = new RateBudget({ ratePerSecond: 25, clock: time.clock, sleep: time.sleep });
    for (let i = 0; i < 100; i += 1) await budget.acquire();
    // 100 requests at 25/s: the first is free, the other 99 take 40 ms each.
    expect(time.clock()).toBeCloseTo(99 * 40, 6);
    expect(time.sleeps.every((ms) => Math.abs(ms - 40) < 1e-9)).toBe(true);
    expect(budget.stats().granted).toBe(100);
  });

  it('shares one rate between concurrent callers', async () => {
    const sleeps: number[] = [];
    const budget = new RateBudget({
      ratePerSecond: 10,
      clock: () => 0,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
    // Ten callers arrive at the same instant: one goes now, the others are handed 100 ms slots.
    await Promise.all(Array.from({ length: 10 }, () => budget.acquire()));
    expect(sleeps).toEqual([100, 200, 300, 400, 500, 600, 700, 800, 900]);
  });

  it('holds everyone back after a pause (a 429), then resumes the normal pace', () => {
    const time = fakeTime();
    const budget = new RateBudget({ ratePerSecond: 20, burst: 5, clock: time.clock, sleep: time.sleep });
    budget.pause(1_000);
    budget.pause(300); // a shorter pause does not shorten the longer one
    expect([budget.reserve(), budget.reserve(), budget.reserve()]).toEqual([1_000, 1_050, 1_100]);
    time.advance(10_000);
    expect(budget.reserve()).toBe(0);
    expect(budget.stats().pauses).toBe(2);
  });

  it('does not pause when the queue already waits longer', () => {
    const time = fakeTime();
    const budget = new RateBudget({ ratePerSecond: 10, clock: time.clock, sleep: time.sleep });
    for (let i = 0; i < 20; i += 1) budget.reserve(); // the last slot is 1.9 s away
    budget.pause(500);
    expect(budget.reserve()).toBe(2_000);
  });

  it('rejects nonsense configuration', () => {
    expect(() => new RateBudget({ ratePerSecond: 0 })).toThrow(/positive/);
    expect(() => new RateBudget({ ratePerSecond: Number.NaN })).toThrow(/positive/);
    expect(() => new RateBudget({ burst: 0 })).toThrow(/burst/);
  });

  it('stops waiting when aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    const budget = new RateBudget();
    await expect(budget.acquire(controller.signal)).rejects.toThrow('stop');
  });
});
