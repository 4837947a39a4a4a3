import { checkout, inTransaction, type Pool, type PoolClient, type Queryable } from '../db/pool.js';
import { recordRunChanges } from './changes-store.js';
import { DryRunOverlay } from './dry-run-overlay.js';
import type { SliceFacts } from './facts.js';
import type { Finding } from './judge/index.js';
import type { RepairOutcome } from './repairs.js';
import { settleRefundIntents, type SettleArgs } from './refunds.js';
import { finishRun, markAbandonedRuns } from './runs-store.js';
import type { ChangesReport } from './types.js';

/**
 * How a sweep writes, real or dry, as one object the sweep asks instead of branching on
 * `dryRun`. A real run commits each batch in a transaction of its own, records its run
 * row's outcome, settles refund intents and marks runs a dead process left. A dry run
 * keeps one transaction for all its accounts and rolls it back at the end: each batch
 * and each of the run's own statements in a savepoint, its repairs laid over later
 * batches by the overlay, nothing of its outcome recorded and no refund settled.
 */
export interface RunWrites {
  readonly dryRun: boolean;
  /** A batch's transaction: a real run's a fresh one each call; a dry run's a savepoint of its one transaction. */
  inTransaction<T>(fn: (client: PoolClient) => Promise<T>): Promise<T>;
  /** The run's own statements (its row, its counts): a real run's on the pool, a dry run's in a savepoint too. */
  onRun<T>(fn: (db: Queryable) => Promise<T>): Promise<T>;
  /** What a dry run's repairs would have written (dry-run-overlay.ts); null for a real run. */
  readonly overlay: DryRunOverlay | null;
  /** A plan run's recorder of what each batch would do (src/plans); null for any other run. */
  readonly planner: BatchPlanner | null;
  /** A dry run's savepoint could not be taken or rolled back to: its transaction (or connection) is gone. */
  readonly broken: boolean;
  /** Whether the run records its own outcome (interrupted, failed, finished); a dry run only throws. */
  readonly recordsOutcome: boolean;
  /** Runs of the account a dead process left behind, marked interrupted; how many. */
  markAbandonedRuns(account: string, now: Date): Promise<number>;
  /** Refund intents an earlier batch or run recorded, settled against the provider; how many findings that repaired. */
  settleRefunds(args: Omit<SettleArgs, 'pool'>): Promise<number>;
  recordChanges(runId: string, changes: ChangesReport): Promise<void>;
  finishRun(runId: string, outcome: Parameters<typeof finishRun>[2]): Promise<void>;
  /** Ends the writes: a dry run's transaction rolled back and its connection given back. */
  close(): Promise<void>;
}

/**
 * A plan run (`--plan`, src/plans) is a dry run that also keeps, of each batch that
 * stands, the repairs and refunds it would make and the versions of what they read.
 */
export interface BatchPlanner {
  /**
   * In the batch's transaction, its repairs undone (the rows as the batch judged them):
   * reads what the steps need. Returns what keeps them, called once the batch stands.
   */
  read(db: Queryable, batch: PlannedBatch): Promise<() => void>;
}

/** One batch of a plan run, as `finish` (batch.ts) knows it. */
export interface PlannedBatch {
  account: string;
  /** `slice:3`, `slice:3.1`, `changes:0`, `refunds`. */
  name: string;
  /** The batch's facts about charges, claims and payment rows; none for a batch of refunds. */
  facts?: SliceFacts;
  /** The repairs it would make (executed in a savepoint rolled back, or laid over by the overlay). */
  repairs: ReadonlyMap<Finding, RepairOutcome>;
  refunds: readonly Finding[];
}

/** A real run's writes: on the pool, each batch committed on its own. */
export function realRunWrites(pool: Pool): RunWrites {
  return {
    dryRun: false,
    inTransaction: (fn) => inTransaction(pool, fn),
    onRun: (fn) => fn(pool),
    overlay: null,
    planner: null,
    broken: false,
    recordsOutcome: true,
    markAbandonedRuns: (account, now) => markAbandonedRuns(pool, account, now),
    settleRefunds: async (args) => (await settleRefundIntents({ ...args, pool })).repairedFindings,
    recordChanges: (runId, changes) => recordRunChanges(pool, runId, changes),
    finishRun: (runId, outcome) => finishRun(pool, runId, outcome),
    close: async () => undefined,
  };
}

/**
 * A dry run's writes: one connection in one transaction for every account of the run,
 * rolled back by `close()`. Each account is judged on what the accounts before it would
 * have written, as the real run (accounts one after another, in this order) would judge it.
 */
export async function dryRunWrites(pool: Pool, planner: BatchPlanner | null = null): Promise<RunWrites> {
  const client = await checkout(pool);
  try {
    await client.query('BEGIN');
    // The dry run's one transaction stays open while each slice lists Stripe: the
    // session's idle-in-transaction limit (SWEEPER_DB_*) must not end it midway.
    await client.query('SET LOCAL idle_in_transaction_session_timeout = 0');
  } catch (error) {
    client.release(true);
    throw error;
  }
  const state = { broken: false };
  const inSavepoint = <T>(fn: (client: PoolClient) => Promise<T>) => inDrySavepoint(client, state, fn);
  return {
    dryRun: true,
    inTransaction: inSavepoint,
    // One failing must not abort the transaction the accounts after this one are judged in.
    onRun: inSavepoint,
    overlay: new DryRunOverlay(),
    planner,
    get broken() {
      return state.broken;
    },
    recordsOutcome: false,
    markAbandonedRuns: async () => 0,
    settleRefunds: async () => 0,
    recordChanges: async () => undefined,
    finishRun: async () => undefined,
    async close() {
      const rolledBack = await client.query('ROLLBACK').then(
        () => true,
        () => false,
      );
      client.release(!rolledBack); // a connection that cannot roll back is not given to anyone else
    },
  };
}

/**
 * A dry run's batch: in a savepoint, so a batch that fails leaves what the batches before
 * it wrote, as a real run's failed transaction leaves the committed ones, and the
 * transaction goes on for the next account.
 */
async function inDrySavepoint<T>(
  client: PoolClient,
  state: { broken: boolean },
  fn: (client: PoolClient) => Promise<T>,
): Promise<T> {
  await client.query('SAVEPOINT dry_run_transaction').catch((error: unknown) => {
    state.broken = true;
    throw error;
  });
  try {
    const result = await fn(client);
    await client.query('RELEASE SAVEPOINT dry_run_transaction');
    return result;
  } catch (error) {
    // The batch's own error is the one to report; one that cannot be rolled back to
    // leaves the transaction broken for the accounts after this one (sweep()).
    await client.query('ROLLBACK TO SAVEPOINT dry_run_transaction; RELEASE SAVEPOINT dry_run_transaction').catch(() => {
      state.broken = true;
    });
    throw error;
  }
}
