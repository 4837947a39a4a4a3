import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { selectAccounts } from '../../src/cli/commands/sweep.js';
import { loadConfig } from '../../src/config.js';
import { StripeBudgets } from '../../src/providers/stripe/budgets.js';
import { shardOf } from '../../src/sweep/window.js';
import { checkProperty } from '../support/properties.js';

/**
 * Platforms (docs/platforms.md): `--shard I/N` splits the accounts by a stable hash, so
 * N shards cover each account exactly once; and Stripe's two limits as the client's
 * budgets (per account and endpoint, and for the whole key), under which a busy account
 * never starves the quiet ones.
 */
const accountId = fc.stringMatching(/^acct_[A-Za-z0-9]{1,20}$/);

describe('--shard I/N', () => {
  it('puts every account in exactly one of the N shards, whatever the accounts and N', async () => {
    await checkProperty(
      'platforms: shards',
      { normal: 200, deep: 5_000 },
      [fc.uniqueArray(accountId, { maxLength: 60 }), fc.integer({ min: 1, max: 32 })],
      (accounts, n) => {
        const config = loadConfig({ SWEEPER_ACCOUNTS: ['platform', ...accounts].join(',') });
        const shards = Array.from({ length: n }, (_, index) => selectAccounts(config, undefined, { index, count: n }));
        const all = shards.flat();
        expect(all.sort()).toEqual(['platform', ...accounts].sort());
        expect(new Set(all).size).toBe(all.length);
      },
    );
  });

  it('is stable: the same shard on every machine and version (sha256, not a per-process hash)', () => {
    // Pinned: changing the hash moves accounts between the pods of a running Indexed Job.
    expect(shardOf('acct_1Nv0FGQ9RKHgCVdK', 1)).toBe(0);
    expect(PINNED.map(([a, n]) => shardOf(a, n))).toEqual(PINNED.map(([, , s]) => s));
  });
});

/** (account, N, shard): computed once and kept, so a change of the hash fails here. */
const PINNED: Array<[string, number, number]> = [
  ['platform', 4, 2],
  ['acct_1', 4, 2],
  ['acct_1Nv0FGQ9RKHgCVdK', 4, 3],
  ['acct_1Nv0FGQ9RKHgCVdK', 16, 3],
  ['acct_zz9', 3, 2],
];

/**
 * Simulated time: a sleep is a timer, and `run` moves the clock from timer to timer (the
 * earliest first) until the work is done, so concurrent waiters wait side by side.
 */
function fakeTime() {
  let now = 0;
  const timers: Array<{ at: number; resolve: () => void }> = [];
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    clock: () => now,
    sleep: (ms: number) =>
      new Promise<void>((resolve) => {
        timers.push({ at: now + Math.max(0, ms), resolve });
      }),
    now: () => now,
    async run<T>(work: Promise<T>): Promise<T> {
      const state = { done: false };
      const out = work.finally(() => {
        state.done = true;
      });
      for (;;) {
        await settle();
        if (state.done) return out;
        timers.sort((a, b) => a.at - b.at);
        const next = timers.shift();
        if (!next) return out;
        now = Math.max(now, next.at);
        next.resolve();
      }
    },
  };
}

describe('two budgets (StripeBudgets)', () => {
  it('a busy account does not starve quiet ones: each quiet account is served within a second of asking', async () => {
    const time = fakeTime();
    const budgets = new StripeBudgets({ perAccount: 25, global: 100, clock: time.clock, sleep: time.sleep });
    const charges = budgets.endpoint('GET /v1/charges');
    const served: Array<{ account: string; at: number }> = [];
    const ask = async (account: string) => {
      await charges.acquireFor(account);
      served.push({ account, at: time.now() });
    };
    // 200 requests of one account queued first, then one request each of 50 quiet accounts.
    const busy = Array.from({ length: 200 }, () => ask('acct_busy'));
    const quiet = Array.from({ length: 50 }, (_, i) => ask(`acct_q${i}`));
    await time.run(Promise.all([...busy, ...quiet]));
    const quietAt = served.filter((s) => s.account !== 'acct_busy').map((s) => s.at);
    expect(quietAt).toHaveLength(50);
    // The busy account gets its 25 a second; the other 75 a second of the key go to the quiet ones.
    expect(Math.max(...quietAt)).toBeLessThanOrEqual(1_000);
  });

  it('never lets one account and endpoint past its rate, nor the key past the global rate', async () => {
    await checkProperty(
      'platforms: budgets',
      { normal: 40, deep: 500 },
      [
        fc.array(fc.record({ account: fc.integer({ min: 0, max: 9 }), endpoint: fc.constantFrom('a', 'b') }), {
          minLength: 1,
          maxLength: 300,
        }),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 120 }),
      ],
      async (requests, perAccount, global) => {
        const time = fakeTime();
        const budgets = new StripeBudgets({ perAccount, global, clock: time.clock, sleep: time.sleep });
        const at: Array<{ key: string; t: number }> = [];
        await time.run(
          Promise.all(
            requests.map(async (r) => {
              await budgets.endpoint(r.endpoint).acquireFor(`acct_${r.account}`);
              at.push({ key: `${r.account}/${r.endpoint}`, t: time.now() });
            }),
          ),
        );
        // In any one-second span: at most the rate plus the burst (one second's worth).
        expect(maxInAnySecond(at.map((a) => a.t))).toBeLessThanOrEqual(2 * global + 1);
        const byKey = new Map<string, number[]>();
        for (const a of at) byKey.set(a.key, [...(byKey.get(a.key) ?? []), a.t]);
        for (const times of byKey.values()) expect(maxInAnySecond(times)).toBeLessThanOrEqual(2 * perAccount + 1);
      },
    );
  });
});

function maxInAnySecond(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i += 1) {
    while ((sorted[i] as number) - (sorted[j] as number) >= 1000) j += 1;
    best = Math.max(best, i - j + 1);
  }
  return best;
}
