import { configDefaults } from '../config.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { Category } from './categories.js';
import type { Judgement } from './judge/index.js';
import type {
  ChangeSource,
  ChargePeekSource,
  ChargeSource,
  PayoutSource,
  ProviderEvidence,
  RefundSource,
} from './provider.js';
import type { BrakeTrip } from './brake.js';
import type { BatchPlanner } from './run-mode.js';
import type { DeepReadResult } from './deep-read.js';
import type { RunMode } from './runs-store.js';
import type { StoredAnswerMapping } from './stored-answer.js';
import type { Shard, TimeWindow } from './window.js';

export type { ChangePointer, ChangeSource, ChargeSource } from './provider.js';

export interface SweepDeps {
  pool: Pool;
  listCharges: ChargeSource;
  /** Stripe's Events API; without it a scheduled run skips the late-changes step (docs/judgement.md "Late changes"). */
  listChanges?: ChangeSource;
  /** Refunds created in a window (`GET /v1/refunds`); without it refunds are not judged. */
  listRefunds?: RefundSource;
  /**
   * One request for a scheduled run's whole window: when every charge fits in it, the
   * window is judged as one slice from that page (docs/platforms.md "Idle accounts").
   * Without it every slice is listed on its own.
   */
  peekCharges?: ChargePeekSource;
  /** Payouts and their balance transactions; without it payouts are not reconciled. */
  payouts?: PayoutSource;
  clock: () => Date;
  logger: Logger;
  /** Stripe's own word: re-reads before a critical finding, a release or a refund, and the refunds themselves. */
  evidence: ProviderEvidence;
  /** The provider's idempotency window (ProviderFacts): how old a claim may be and still be re-driven safely (`providerSweepDeps` fills it in). */
  idempotencyWindowMs: number;
  /** The request rate and the mean latency measured so far: how many slices a real run lists ahead. */
  pace?: () => { ratePerSecond: number; meanLatencyMs: number | null };
  /** A plan run (`--plan`, with `dryRun`): what each batch would do is kept here (src/plans). */
  planner?: BatchPlanner;
  /** Tests: every batch's judgement (`slice:N`, `changes:N`), as judged (after Stripe's own word was read). */
  observeJudgement?: (judgement: Judgement, batch: string) => void;
  /** Crash and race tests: called at named points (`slice:N:phase`); may kill the process. */
  faultPoint?: (name: string) => void | Promise<void>;
  onSlice?: (done: number, total: number) => void;
  /** The CLI's progress display and log (src/cli/progress.ts): at an account's start, after each slice, before the late-changes step. */
  onProgress?: (progress: SweepProgress) => void;
  /**
   * An account left alone: a backfill has it (a scheduled run: lock.ts), or the provider
   * refuses it (a connected account's access revoked: marked inactive).
   */
  onSkipped?: (account: string, reason: SkipReason) => void;
}

/** Why an account was not swept: `backfill_in_progress` (scheduled runs), `account_revoked` (403). */
export type SkipReason = 'backfill_in_progress' | 'account_revoked';

/** Where one account's sweep is: committed slices and charges scanned so far. */
export interface SweepProgress {
  runId: string;
  mode: RunMode;
  account: string;
  window: TimeWindow;
  /** Where this run began: the window's start, or the checkpoint a resumed backfill continues from. */
  start: Date;
  resumedFrom?: string;
  /** `slices` while slices are judged; `changes` once they are done and the late-changes step runs. */
  phase: 'slices' | 'changes';
  slicesDone: number;
  slicesTotal: number;
  chargesScanned: number;
}

export interface SweepOptions {
  mode: RunMode;
  accounts: string[];
  shard?: Shard;
  /** Backfill only. */
  window?: TimeWindow;
  dryRun: boolean;
  settleMs: number;
  overlapMs: number;
  sliceMs: number;
  /**
   * The most charges created in a slice that one batch judges: a denser slice is judged
   * in parts of about this many (parts.ts), which bounds a batch's memory.
   */
  batchCharges: number;
  /** The longest claim lease: how far around a slice charges are read to judge it. */
  leaseMs: number;
  retentionMs: number;
  firstRunLookbackMs: number;
  refundDuplicates: boolean;
  /**
   * Backfill: continue an unfinished backfill of the same range. The CLI passes true
   * unless `--no-resume`; `sweepOptions()` leaves it false.
   */
  resume: boolean;
  /** Scheduled runs: events younger than this are left for the next run (the Events API is eventually consistent). */
  eventsLagMs: number;
  /** Each events read starts this far before the cursor: events listed late are read again (harmlessly: they are pointers). */
  eventsOverlapMs: number;
  /** How often a scheduled run also re-reads the last `deepReadDays` of charges and compares them with the mirror. */
  deepReadEveryMs: number;
  deepReadDays: number;
  /** Backfill: how long to wait for a lock another sweep holds (default 0: exit 75 at once). */
  lockWaitMs?: number;
  /** Accounts with something to judge swept at once (SWEEPER_ACCOUNT_CONCURRENCY); default 1. A dry run: always 1. */
  accountConcurrency?: number;
  /** A writer's own stored-answer shape (SWEEPER_STORED_ANSWER); null: Stripe's objects and the library's shape only. */
  storedAnswer: StoredAnswerMapping | null;
  /** The repair brake (SWEEPER_MAX_REPAIR_SHARE, a fraction): brake.ts. */
  maxRepairShare: number;
  /** A person confirmed that many repairs of one kind are right (--allow-mass-repair). */
  allowMassRepair: boolean;
  /** Payments for one reference created within this of each other are duplicates (duplicate_effect). */
  duplicateLookbackMs: number;
  /** Payments without a reference, one customer or card, within this of each other: suspected_duplicate (0: off). */
  suspectWindowMs: number;
  /** Payouts (docs/judgement.md "Payouts and fees"): listed this far back; an older payment in no payout is unpaid_effect. */
  payoutGraceMs: number;
  /** Scheduled runs list an account's payouts at most this often (SWEEPER_PAYOUT_EVERY). */
  payoutEveryMs: number;
  signal?: AbortSignal;
}

export interface SweepReport {
  run_id: string;
  mode: RunMode;
  account: string;
  window: { from: string; to: string } | null;
  dry_run: boolean;
  charges_scanned: number;
  malformed_charges: number;
  /** Of those, charges without a usable id: no finding can name them, so the run exits 1. */
  unnamed_charges: number;
  /** Keys not judged because a live writer held them (see docs/judgement.md "Settled keys and live leases"). */
  deferred_keys: number;
  findings: Record<Category, number>;
  repaired: Record<Category, number>;
  unreconciled: number;
  duration_ms: number;
  status: 'succeeded' | 'interrupted' | 'failed';
  /** Why the account's sweep failed (status `failed`). */
  error?: string;
  resumed_from?: string;
  /** Scheduled runs: the late-changes step (docs/judgement.md "Late changes"). */
  changes?: ChangesReport;
  /** The refunds step (docs/judgement.md "Refunds the application makes"), when refunds are listed. */
  refunds?: RefundsReport;
  /** The payouts step (docs/judgement.md "Payouts and fees"), when payouts are read. */
  payouts?: PayoutsReport;
  /**
   * The repair brake's bound was passed (brake.ts): by a dry run (a real run would stop
   * there) or by a run with --allow-mass-repair (`allowed`). A real run without it fails.
   */
  mass_repair?: BrakeTrip & { allowed: boolean };
}

export interface RefundsReport {
  /** Refunds created in the window, as listed; read by id (rows' and answers' refunds not listed); of those, not at Stripe. */
  listed: number;
  read_by_id: number;
  missing: number;
  /** Refunds Stripe returned that cannot be read (each an open finding when it has an id). */
  malformed: number;
  /** Days of the window listed, and days not listed because nothing local could have a refund in them. */
  days_listed: number;
  days_quiet: number;
  /** Listed up to here (scheduled runs keep it as the refunds cursor). */
  cursor: string | null;
  /** What the step found and repaired (non-zero categories; also counted in the run's totals). */
  found: Partial<Record<Category, number>>;
  repaired: Partial<Record<Category, number>>;
  /** The step could not run (a key without Refunds read): the rest of the run stands, and the run fails. */
  error?: string;
}

export interface PayoutsReport {
  /** Payouts listed this run (created in the last SWEEPER_PAYOUT_GRACE, or in a backfill's range). */
  listed: number;
  /** A scheduled run that listed no payouts: the last listing is younger than SWEEPER_PAYOUT_EVERY. */
  skipped: boolean;
  /** Automatic payouts reconciled this run; manual ones recorded as not itemised. */
  reconciled: number;
  not_itemised: number;
  /** Automatic payouts whose reconciliation Stripe has not completed: judged by a later run. */
  awaiting: number;
  /** Balance transactions of the payouts reconciled (their own payout transactions aside), and of those the charge, refund and dispute ones tied to a local row. */
  transactions: number;
  linked: number;
  /** Payment rows that took their fee, net, settlement currency and exchange rate. */
  fees: number;
  /** What the step found (non-zero categories; also counted in the run's totals). */
  found: Partial<Record<Category, number>>;
  /** The step could not run (a key without Payouts read or Balance read): the rest of the run stands, and the run fails. */
  error?: string;
}

export interface ChangesReport {
  /** Events read this run, and the distinct charges they pointed at (re-read and judged). */
  events: number;
  charges: number;
  /**
   * Charges events pointed at that were created where no run has judged yet (before the
   * first run's lookback): not judged, left for a backfill (coverage.ts).
   */
  not_swept: number;
  /** What the events step found and repaired (non-zero categories; also counted in the run's totals). */
  found: Partial<Record<Category, number>>;
  repaired: Partial<Record<Category, number>>;
  /** Events whose object named no usable charge: logged, left to the deep re-read. */
  malformed_events: number;
  /** Dispute statuses the events told of (recorded in stripe_disputes; absent when none). */
  disputes?: number;
  /** Events up to here are read; null before the first read. */
  cursor: string | null;
  cursor_lag_seconds: number | null;
  /** The cursor was older than Stripe keeps events: the charges created since were re-listed instead. */
  fallback?: DeepReadResult;
  /** The periodic deep re-read, when this run made it. */
  deep_read?: DeepReadResult;
}

/**
 * The configuration's defaults (src/config.ts, the one home of each), for callers that
 * are not the CLI.
 */
export function sweepOptions(options: Partial<SweepOptions> & Pick<SweepOptions, 'mode' | 'accounts'>): SweepOptions {
  const defaults = configDefaults();
  return {
    dryRun: false,
    settleMs: defaults.settleMs,
    overlapMs: defaults.overlapMs,
    sliceMs: defaults.sliceMs,
    batchCharges: defaults.batchCharges,
    leaseMs: defaults.claimLeaseMs,
    retentionMs: defaults.retentionMs,
    firstRunLookbackMs: defaults.firstRunLookbackMs,
    refundDuplicates: false,
    // Unlike the CLI (true unless --no-resume): a caller resumes a backfill by asking to.
    resume: false,
    eventsLagMs: defaults.eventsLagMs,
    eventsOverlapMs: defaults.eventsOverlapMs,
    deepReadEveryMs: defaults.deepReadEveryMs,
    deepReadDays: defaults.deepReadDays,
    storedAnswer: defaults.storedAnswer,
    maxRepairShare: defaults.maxRepairShare,
    allowMassRepair: false,
    duplicateLookbackMs: defaults.duplicateLookbackMs,
    suspectWindowMs: defaults.suspectWindowMs,
    payoutGraceMs: defaults.payoutGraceMs,
    payoutEveryMs: defaults.payoutEveryMs,
    ...options,
  };
}
