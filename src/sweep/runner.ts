import type { Queryable } from '../db/pool.js';
import { forOperator } from '../log.js';
import { markRevoked } from './accounts.js';
import { lockAccounts, type LockRequest, type SweepLock } from './lock.js';
import { AccountUnavailableError } from './provider.js';
import { settleQuietAccounts, type Prepared } from './quiet.js';
import { failedReport } from './reports.js';
import { dryRunWrites, realRunWrites, type RunWrites } from './run-mode.js';
import type { SweepDeps, SweepOptions, SweepReport } from './types.js';

/**
 * Many accounts in one run (docs/platforms.md): the most lagging first, locked a group
 * at a time (a platform's thousands of accounts never hold thousands of advisory locks
 * at once), the group's accounts with nothing new settled together in a handful of
 * statements (quiet.ts), and the others swept one per worker, up to
 * `accountConcurrency` at once (a dry run: one, in its one transaction). Each account
 * keeps its own lock, watermark and events cursor; its lock is given back when its
 * sweep ends. A group is taken while the workers are busy with the one before, so the
 * rate budgets stay busy across groups.
 */

/** Accounts locked and settled together. */
export const GROUP_SIZE = 100;

/** One account's whole sweep (sweep.ts `sweepAccount`), given what the group already read for it. */
export type SweepOne = (
  deps: SweepDeps,
  options: SweepOptions,
  account: string,
  lock: SweepLock,
  writes: RunWrites,
  prepared?: Prepared,
) => Promise<SweepReport>;

/** Where each account's sweep stands, shared by the producer and the workers. */
interface AccountRun {
  deps: SweepDeps;
  options: SweepOptions;
  lock: SweepLock;
  writes: RunWrites;
  sweepOne: SweepOne;
  reports: Map<string, SweepReport>;
  failures: Error[];
  /** A lost lock (or a broken dry run): nothing more is swept. */
  stop: { error: Error | null; brokenBy: string | null };
}

export async function sweepAccounts(
  deps: SweepDeps,
  options: SweepOptions,
  sweepOne: SweepOne,
): Promise<{ reports: SweepReport[]; failures: Error[] }> {
  const order = await sweepOrder(deps.pool, options, deps.clock());
  const groups: string[][] = [];
  for (let i = 0; i < order.length; i += GROUP_SIZE) groups.push(order.slice(i, i + GROUP_SIZE));
  // The first group is locked before anything is written: another run on one of its accounts exits 75 at once.
  const lock = await lockAccounts(deps.pool, groups[0] ?? [], lockRequest(deps, options));
  let writes: RunWrites | null = null;
  try {
    writes = options.dryRun ? await dryRunWrites(deps.pool, deps.planner ?? null) : realRunWrites(deps.pool);
    const run: AccountRun = {
      ...{ deps, options, lock, writes, sweepOne },
      reports: new Map(),
      failures: [],
      stop: { error: null, brokenBy: null },
    };
    await produceAndSweep(run, groups);
    if (run.stop.error) throw run.stop.error;
    const reports = [...new Set(options.accounts)].flatMap((a) => {
      const report = run.reports.get(a);
      return report ? [report] : [];
    });
    return { reports, failures: run.failures };
  } finally {
    await writes?.close();
    await lock.release();
  }
}

function lockRequest(deps: SweepDeps, options: SweepOptions): LockRequest {
  return {
    mode: options.mode,
    waitMs: options.lockWaitMs,
    signal: options.signal,
    onWait: (account) =>
      deps.logger.info(
        forOperator({ account, wait_ms: options.lockWaitMs }),
        'another sweep holds the account; waiting for it (--wait)',
      ),
  };
}

/**
 * The order accounts are swept in. A scheduled run: the most lagging first (the oldest
 * watermark; an account never swept counts from its first run's lookback), so an
 * account a run did not reach (its deadline) is among the first of the next. A
 * backfill: in the order given; past one group, by name, the lock order that keeps two
 * backfills from waiting on each other's groups.
 */
export async function sweepOrder(db: Queryable, options: SweepOptions, now: Date): Promise<string[]> {
  const accounts = [...new Set(options.accounts)];
  if (accounts.length < 2) return accounts;
  // One group is locked at once in sorted order whatever the sweep order: the order given.
  if (options.mode === 'backfill') return accounts.length <= GROUP_SIZE ? accounts : accounts.sort();
  const { rows } = await db.query<{ account: string; watermark: Date }>(
    `SELECT account, watermark FROM recon_watermarks WHERE shard = '' AND account = ANY($1::text[])`,
    [accounts],
  );
  const watermarks = new Map(rows.map((r) => [r.account, r.watermark.getTime()]));
  const fresh = now.getTime() - options.firstRunLookbackMs;
  const startOf = (a: string) => watermarks.get(a) ?? fresh;
  return accounts
    .map((account, index) => ({ account, index, start: startOf(account) }))
    .sort((x, y) => x.start - y.start || x.index - y.index)
    .map((x) => x.account);
}

/**
 * The producer takes one group at a time (locks, the quiet ones settled), queues the
 * accounts with something to judge, and waits while the workers are well behind.
 */
async function produceAndSweep(run: AccountRun, groups: string[][]): Promise<void> {
  const { options } = run;
  const concurrency = options.dryRun ? 1 : Math.max(1, options.accountConcurrency ?? 1);
  const queue = new WorkQueue<{ account: string; prepared?: Prepared }>();
  const workers = Array.from({ length: concurrency }, () => worker(run, queue));
  const failed = (error: unknown) => {
    run.stop.error ??= error instanceof Error ? error : new Error(String(error));
  };
  // Two groups settle at once: the next group's requests queue while the last of this
  // one's are answered, so the rate budgets never idle between groups.
  let settling: Promise<void> = Promise.resolve();
  try {
    for (const [i, group] of groups.entries()) {
      if (options.signal?.aborted || run.stop.error || run.stop.brokenBy) break;
      const held = i === 0 ? { accounts: run.lock.accounts, skipped: run.lock.skipped } : await takeGroup(run, group);
      for (const account of held.skipped) skipped(run, account, 'backfill_in_progress');
      const next = settleGroup(run, held.accounts).then((items) => {
        for (const item of items) queue.push(item);
      }, failed);
      await settling;
      settling = next;
      await queue.below(concurrency * 2);
    }
  } catch (error) {
    failed(error);
  } finally {
    await settling;
    queue.close();
    await Promise.all(workers);
  }
}

/**
 * A later group's locks. An account another run holds (two schedulers, a hand-run sweep
 * that started meanwhile) fails alone, saying so; the first group's would have exited 75.
 */
async function takeGroup(run: AccountRun, group: string[]): Promise<{ accounts: string[]; skipped: string[] }> {
  try {
    return await run.lock.take(group);
  } catch (error) {
    if ((error as { exitCode?: number }).exitCode !== 75) throw error;
    const held: string[] = [];
    const skippedHere: string[] = [];
    // One at a time, to tell which accounts are the other run's.
    for (const account of group) {
      try {
        const taken = await run.lock.take([account]);
        held.push(...taken.accounts);
        skippedHere.push(...taken.skipped);
      } catch (one) {
        if ((one as { exitCode?: number }).exitCode !== 75) throw one;
        record(run, account, one);
      }
    }
    return { accounts: held, skipped: skippedHere };
  }
}

/** The group's quiet accounts settled and released; the rest, for the workers. */
async function settleGroup(
  run: AccountRun,
  accounts: string[],
): Promise<Array<{ account: string; prepared?: Prepared }>> {
  const { deps, options } = run;
  if (accounts.length === 0) return [];
  if (options.mode !== 'run' || options.dryRun || !deps.peekCharges) return accounts.map((account) => ({ account }));
  const settled = await settleQuietAccounts(deps, options, accounts, run.lock);
  for (const report of settled.reports) run.reports.set(report.account, report);
  for (const account of settled.revoked) await revoked(run, account);
  await run.lock.give([...settled.reports.map((r) => r.account), ...settled.revoked]);
  return settled.busy;
}

async function worker(run: AccountRun, queue: WorkQueue<{ account: string; prepared?: Prepared }>): Promise<void> {
  const { deps, options, lock, writes } = run;
  for (let item = await queue.shift(); item !== undefined; item = await queue.shift()) {
    const { account, prepared } = item;
    try {
      if (options.signal?.aborted || run.stop.error) continue;
      if (run.stop.brokenBy) {
        // The dry run's one transaction (or its connection) is gone: the accounts after
        // the one that broke it cannot be judged on what it would have written.
        record(run, account, new Error(`not judged: ${run.stop.brokenBy}; dry-run it again`));
        continue;
      }
      lock.assertHeld();
      run.reports.set(account, await run.sweepOne(deps, options, account, lock, writes, prepared));
    } catch (error) {
      if (!stillHeld(run)) continue; // a lost lock stops everything, at once
      if (error instanceof AccountUnavailableError) {
        await revoked(run, account);
        continue;
      }
      // One account failing (its Stripe key lacks access, say) must not hide the
      // others' committed results: record it and go on; the whole sweep fails at the end.
      const failure = record(run, account, error);
      if (writes.broken) {
        run.stop.brokenBy = `the dry run's database transaction broke while judging ${account} (${failure.message})`;
      }
    } finally {
      await lock.give([account]).catch(() => undefined);
    }
  }
}

function stillHeld(run: AccountRun): boolean {
  try {
    run.lock.assertHeld();
    return true;
  } catch (error) {
    run.stop.error ??= error as Error;
    return false;
  }
}

function record(run: AccountRun, account: string, error: unknown): Error {
  const failure = error instanceof Error ? error : new Error(String(error));
  run.failures.push(failure);
  run.reports.set(account, failedReport(run.options, account, failure));
  return failure;
}

/** A connected account that refuses the platform: inactive from now on, one line, and the others go on. */
async function revoked(run: AccountRun, account: string): Promise<void> {
  const { deps, options } = run;
  // A dry run writes nothing; the real run records it.
  if (!options.dryRun) await markRevoked(deps.pool, [account], deps.clock());
  deps.logger.warn(
    forOperator({ account, mode: options.mode }),
    'connected account refused (403: access revoked or the account is gone); marked inactive, not swept until Stripe lists it again',
  );
  deps.onSkipped?.(account, 'account_revoked');
}

function skipped(run: AccountRun, account: string, reason: 'backfill_in_progress'): void {
  run.deps.logger.info(
    { account, mode: run.options.mode },
    'skipped: backfill in progress (it holds or waits for the account); the next run sweeps it',
  );
  run.deps.onSkipped?.(account, reason);
}

/** A queue of work the producer fills and the workers drain; `below` lets the producer wait for room. */
class WorkQueue<T> {
  private readonly items: T[] = [];
  private closed = false;
  private readonly takers: Array<(item: T | undefined) => void> = [];
  private readonly roomWaiters: Array<{ limit: number; resolve: () => void }> = [];

  push(item: T): void {
    const taker = this.takers.shift();
    if (taker) taker(item);
    else this.items.push(item);
  }

  shift(): Promise<T | undefined> {
    const item = this.items.shift();
    this.wakeRoom();
    if (item !== undefined || this.closed) return Promise.resolve(item);
    return new Promise((resolve) => this.takers.push(resolve));
  }

  /** Resolves once fewer than `limit` items wait. */
  below(limit: number): Promise<void> {
    if (this.items.length < limit) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push({ limit, resolve }));
  }

  close(): void {
    this.closed = true;
    for (const taker of this.takers.splice(0)) taker(undefined);
    for (const waiter of this.roomWaiters.splice(0)) waiter.resolve();
  }

  private wakeRoom(): void {
    for (const waiter of [...this.roomWaiters]) {
      if (this.items.length < waiter.limit) {
        this.roomWaiters.splice(this.roomWaiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }
}
