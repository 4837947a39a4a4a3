import type { Command } from 'commander';
import { alertConfigFromEnv, type AlertConfig } from '../../alerts/index.js';
import { loadConfig, requireStripeApiKey, type Config } from '../../config.js';
import type { Pool } from '../../db/pool.js';
import { freshenStatistics } from '../../db/statistics.js';
import { forOperator, type Logger } from '../../log.js';
import {
  metricsConfigFromEnv,
  publishMetrics,
  readLastSuccessByAccount,
  type MetricsConfig,
} from '../../metrics/index.js';
import { readStatus } from '../../sweep/status.js';
import { isDiscovered, readInactiveAccounts, selectAccounts as selectSwept } from '../../sweep/accounts.js';
import { createStripeProvider } from '../../providers/stripe/provider.js';
import type { AccountCompleteness } from '../../sweep/completeness.js';
import { SweepLockedError } from '../../sweep/lock.js';
import { providerSweepDeps } from '../../sweep/provider.js';
import { sweep, SweepFailedError, type SweepDeps, type SweepOptions, type SweepReport } from '../../sweep/sweep.js';
import { parseShard, shardOf, type Shard, type TimeWindow } from '../../sweep/window.js';
import { parseDuration } from '../../time/duration.js';
import { instantProblem, parseInstant } from '../../time/instant.js';
import { assertBackfillBounds, LARGE_BACKFILL_FLAG } from '../backfill-bounds.js';
import { ExitCode } from '../exit.js';
import { findingsExitFrom, type FindingsExit } from '../exit-decision.js';
import { actorName, UsageError, withDatabase } from '../context.js';
import { assertPlanTarget, planRun, type PlanTarget } from '../plan-run.js';
import { createProgressReporter } from '../progress.js';
import { installShutdown } from '../shutdown.js';
import { stderrIsTerminal } from '../stderr.js';
import { finishSweep } from '../sweep-finish.js';
import { errorMessage } from '../../errors.js';

export interface SweepFlags {
  account?: string;
  shard?: string;
  dryRun?: boolean;
  json?: boolean;
  refundDuplicates?: boolean;
  from?: string;
  to?: string;
  resume?: boolean;
  iKnowThisIsLarge?: boolean;
  findingsExit?: string;
  wait?: string;
  allowMassRepair?: boolean;
  plan?: string;
  by?: string;
}

export function registerSweepCommands(program: Command): void {
  const common = (cmd: Command) =>
    cmd
      .option('--account <id>', 'sweep only this account (acct_… or platform); must be in SWEEPER_ACCOUNTS')
      .option('--shard <I/N>', 'sweep the accounts whose stable hash falls in shard I of N (0-based), e.g. 0/4')
      .option('--dry-run', 'compute everything and say what would be repaired; write nothing')
      .option('--json', 'print one JSON object per account on stdout')
      .option('--refund-duplicates', 'refund extra charges of a duplicate_charge (needs a key that can write refunds)')
      .option(
        '--allow-mass-repair',
        'repair even past the repair brake (more than SWEEPER_MAX_REPAIR_SHARE of what was judged in one category)',
      )
      .option(
        '--plan <file>',
        'a dry run that saves every step it would take, with its evidence, to FILE and the database: sweeper apply FILE applies it',
      )
      .option('--by <name>', 'with --plan: who makes the plan (default SWEEPER_ACTOR, else the OS user)')
      .option(
        '--findings-exit <code>',
        'exit code while findings stay open: 3 (default) or 0 (let the alerts page); env SWEEPER_FINDINGS_EXIT',
      );

  common(
    program
      .command('run')
      .description('one scheduled sweep per account, from its watermark to now − SWEEPER_SETTLE')
      .addHelpText(
        'after',
        `
Example:
  STRIPE_API_KEY=rk_live_… DATABASE_URL=postgres://… sweeper run --json

With --plan FILE it writes nothing but the plan (a dry run): review it, then
  sweeper apply FILE

Exit codes: 0 reconciled, 1 run failed (the slice in progress rolled back),
3 unreconciled findings open, 64 bad usage or configuration, 75 another run holds the lock.`,
      ),
  ).action(async (flags: SweepFlags) => {
    process.exitCode = await executeSweep('run', flags, installShutdownFromConfig('run'));
  });

  common(
    program
      .command('backfill')
      .description('sweep a fixed range [--from, --to); resumes an unfinished backfill of the same range')
      .requiredOption('--from <time>', 'start, ISO 8601: 2026-11-01 or 2026-11-01T12:00:00Z')
      .requiredOption('--to <time>', 'end (exclusive), at least SWEEPER_SETTLE in the past')
      .option('--no-resume', 'start the range over instead of continuing an unfinished backfill of it')
      .option(LARGE_BACKFILL_FLAG, 'allow a backfill longer than 31 days or 10,000 slices')
      .option(
        '--wait <duration>',
        'how long to wait for an account another sweep holds, then exit 75 (0 = do not wait)',
        DEFAULT_BACKFILL_WAIT,
      )
      .addHelpText(
        'after',
        `
Example:
  sweeper backfill --from 2026-11-01 --to 2026-11-08 --account acct_1Nv0FGQ9RKHgCVdK

A backfill never moves the scheduled watermark. Killed, it continues from its last
committed slice when started again with the same range.`,
      ),
  ).action(async (flags: SweepFlags) => {
    process.exitCode = await executeSweep('backfill', flags, installShutdownFromConfig('backfill'));
  });
}

/** One sweep as the CLI runs it; returns the exit code. Also what `schedule` runs on each tick. */
export async function executeSweep(mode: 'run' | 'backfill', flags: SweepFlags, signal?: AbortSignal): Promise<number> {
  const config = loadConfig();
  const apiKey = requireStripeApiKey(config);
  const now = new Date();
  const shard = flags.shard === undefined ? undefined : parseShardFlag(flags.shard);
  const named = selectAccounts(config, flags.account, shard);
  const window = mode === 'backfill' ? backfillWindow(flags, config, now) : undefined;
  const plan = await planTargetOf(flags);
  const command: SweepCommand = {
    mode,
    flags,
    config,
    apiKey,
    shard,
    named,
    window,
    signal,
    alertConfig: alertConfigFromEnv(),
    metricsConfig: metricsConfigFromEnv(),
    findingsExit: findingsExitFrom(flags.findingsExit),
    lockWaitMs: mode === 'backfill' ? parseWaitFlag(flags.wait ?? DEFAULT_BACKFILL_WAIT) : 0,
    plan,
  };
  return withDatabase((ctx) => sweepCommand(command, ctx.pool, ctx.logger), config);
}

/** A sweep command with its configuration and flags checked, before the database is opened. */
interface SweepCommand {
  mode: 'run' | 'backfill';
  flags: SweepFlags;
  config: Config;
  apiKey: string;
  shard: Shard | undefined;
  /** The accounts SWEEPER_ACCOUNTS (or --account) names that this shard owns; `connected` adds the discovered ones. */
  named: string[];
  window: TimeWindow | undefined;
  signal: AbortSignal | undefined;
  alertConfig: AlertConfig;
  metricsConfig: MetricsConfig;
  findingsExit: FindingsExit;
  lockWaitMs: number;
  /** --plan: a dry run whose steps are saved (plan-run.ts). */
  plan: PlanTarget | null;
}

async function sweepCommand(command: SweepCommand, pool: Pool, logger: Logger): Promise<number> {
  const { mode, flags, config, shard, signal } = command;
  const skipped: string[] = [];
  const revoked: string[] = [];
  // Stripe's two limits as budgets every request of the process draws from (a shard takes its share of the key's).
  const provider = createStripeProvider({
    apiKey: command.apiKey,
    apiBase: config.stripeApiBase,
    timeoutMs: config.requestDeadlineMs,
    ratePerSecond: config.stripeRatePerSecond,
    globalRatePerSecond: config.stripeGlobalRatePerSecond,
    shares: shard?.count ?? 1,
    metadataKeys: config.metadataKeys,
  });
  // Bulk-loaded rows without planner statistics: analysed before the first slice (src/db/statistics.ts).
  await freshenStatistics(pool, logger);
  const selection = await accountsOf(command, pool, logger, provider.listAccounts);
  const accounts = selection.accounts;
  if (accounts.length === 0 && !selection.listingError) {
    logger.info(forOperator({ shard: flags.shard }), 'no account falls in this shard; nothing to do');
    return ExitCode.reconciled;
  }
  const progress = createProgressReporter({
    terminal: stderrIsTerminal(),
    logger,
    intervalMs: config.progressIntervalMs,
    accounts,
  });
  const deps: SweepDeps = {
    pool,
    clock: () => new Date(),
    logger,
    ...providerSweepDeps(provider, { pace: true }),
    faultPoint: crashPointFromEnv(),
    onProgress: (p) => progress.onProgress(p),
    onSkipped: (account, reason) => (reason === 'backfill_in_progress' ? skipped : revoked).push(account),
  };
  const publish = metricsPublisher({
    pool,
    logger,
    config: command.metricsConfig,
    shard,
    accounts,
    ...(mode === 'run' ? { skipped } : {}),
    stripe429s: () => provider.counters.rateLimited,
  });
  let reports: SweepReport[] = [];
  let failure: Error | undefined = selection.listingError;
  try {
    const options = sweepOptionsOf(mode, flags, config, { ...command, accounts });
    reports = command.plan ? await planRun(deps, options, command.plan) : await sweep(deps, options);
  } catch (error) {
    progress.stop();
    if (command.plan) logger.warn('no plan was written: a plan is all of what the run would do, or nothing');
    if (!(error instanceof SweepFailedError)) {
      // Not when locked out (75): the run holding the lock publishes for these accounts.
      if (!isDryRun(flags) && (error as { exitCode?: number }).exitCode !== ExitCode.locked) await publish(reports);
      throw withAdvice(mode, error);
    }
    reports = error.reports;
    failure ??= error;
  }
  progress.stop();
  return finishSweep({
    mode,
    json: Boolean(flags.json),
    dryRun: isDryRun(flags),
    pool,
    logger,
    config,
    alertConfig: command.alertConfig,
    accounts,
    reports,
    skipped,
    revoked,
    ...(failure ? { failure } : {}),
    progress,
    ...(signal ? { signal } : {}),
    findingsExit: command.findingsExit,
    unnamed: reports.reduce((n, r) => n + r.unnamed_charges, 0),
    publish,
  });
}

/**
 * The accounts this command sweeps: the named ones, and with `connected` the discovered
 * ones of this shard (src/sweep/accounts.ts). `--account acct_…` with `connected` names
 * one discovered before; it is swept alone, without listing the others.
 */
async function accountsOf(
  command: SweepCommand,
  pool: Pool,
  logger: Logger,
  listAccounts: (signal?: AbortSignal) => Promise<string[]>,
): Promise<Awaited<ReturnType<typeof selectSwept>>> {
  const { flags, config, shard } = command;
  const owns = (a: string) => !shard || shardOf(a, shard.count) === shard.index;
  if (flags.account !== undefined) {
    if (!config.accounts.includes(flags.account) && !(await isDiscovered(pool, flags.account)))
      throw new UsageError(
        `--account ${flags.account} is neither in SWEEPER_ACCOUNTS nor a connected account discovered before`,
      );
    return { accounts: owns(flags.account) ? [flags.account] : [], discovery: null };
  }
  return selectSwept(
    { pool, logger, listAccounts },
    {
      named: command.named,
      connected: config.discoverConnected,
      owns,
      now: new Date(),
      dryRun: Boolean(flags.dryRun),
      ...(command.signal ? { signal: command.signal } : {}),
    },
  );
}

/** The sweep's options: the configuration, overridden by the command's flags. */
function sweepOptionsOf(
  mode: 'run' | 'backfill',
  flags: SweepFlags,
  config: Config,
  run: {
    accounts: string[];
    shard: Shard | undefined;
    window: TimeWindow | undefined;
    lockWaitMs: number;
    signal: AbortSignal | undefined;
  },
): SweepOptions {
  return {
    mode,
    accounts: run.accounts,
    shard: run.shard,
    window: run.window,
    dryRun: isDryRun(flags),
    settleMs: config.settleMs,
    overlapMs: config.overlapMs,
    sliceMs: config.sliceMs,
    batchCharges: config.batchCharges,
    leaseMs: config.claimLeaseMs,
    retentionMs: config.retentionMs,
    firstRunLookbackMs: config.firstRunLookbackMs,
    eventsLagMs: config.eventsLagMs,
    eventsOverlapMs: config.eventsOverlapMs,
    deepReadEveryMs: config.deepReadEveryMs,
    deepReadDays: config.deepReadDays,
    storedAnswer: config.storedAnswer,
    maxRepairShare: config.maxRepairShare,
    allowMassRepair: Boolean(flags.allowMassRepair),
    duplicateLookbackMs: config.duplicateLookbackMs,
    payoutGraceMs: config.payoutGraceMs,
    payoutEveryMs: config.payoutEveryMs,
    suspectWindowMs: config.suspectWindowMs,
    refundDuplicates: Boolean(flags.refundDuplicates),
    // `--no-resume` is the only way to say false: a backfill resumes by default.
    resume: flags.resume !== false,
    lockWaitMs: run.lockWaitMs,
    accountConcurrency: config.accountConcurrency,
    signal: run.signal,
  };
}

/**
 * Publishes the run's metrics. They go out whatever happened (a failed run shows as a
 * stale last-success); publishing must never replace the run's own error.
 */
function metricsPublisher(args: {
  pool: Pool;
  logger: Logger;
  config: MetricsConfig;
  shard: Shard | undefined;
  accounts: readonly string[];
  /** Scheduled runs only: accounts a backfill held. */
  skipped?: readonly string[];
  stripe429s: () => number;
}): (done: SweepReport[], completeness?: readonly AccountCompleteness[]) => Promise<void> {
  const { pool, logger, shard } = args;
  return async (done, completeness = []) => {
    try {
      const published = await publishMetrics({
        config: args.config,
        logger,
        grouping: shard ? { shard: `${shard.index}_${shard.count}` } : undefined,
        input: {
          reports: done,
          status: await readStatus(pool, new Date()),
          stripe429s: args.stripe429s(),
          now: new Date(),
          accounts: args.accounts,
          ...(args.skipped ? { skipped: args.skipped } : {}),
          lastSuccessAt: await readLastSuccessByAccount(pool),
          inactiveAccounts: await readInactiveAccounts(pool),
          completeness,
        },
      });
      for (const error of published.errors) logger.warn({ error }, 'metrics not published');
    } catch (error) {
      logger.warn({ error: errorMessage(error) }, 'metrics not published');
    }
  };
}

/**
 * A scheduled run locked out (75) says what to do about it. (A backfill's lock
 * messages already say it: wait longer, or run it again later.)
 */
function withAdvice(mode: 'run' | 'backfill', error: unknown): unknown {
  if (mode === 'run' && error instanceof SweepLockedError) {
    error.message +=
      ': nothing to do if it is a one-off, the other run finishes on its own; if it repeats, two schedulers (or a hand-run sweep) share this account (`sweeper status` shows the running run)';
  }
  return error;
}

/** A plan run is a dry run: it writes nothing but the plan. */
function isDryRun(flags: SweepFlags): boolean {
  return Boolean(flags.dryRun) || flags.plan !== undefined;
}

async function planTargetOf(flags: SweepFlags): Promise<PlanTarget | null> {
  if (flags.by !== undefined && flags.plan === undefined)
    throw new UsageError('--by names who makes a plan: it goes with --plan FILE');
  if (flags.plan === undefined) return null;
  await assertPlanTarget(flags.plan);
  return { file: flags.plan, author: actorName(flags.by), json: Boolean(flags.json) };
}

/** Long enough for a scheduled run holding the lock to finish: the CronJob's deadline is 14 minutes. */
const DEFAULT_BACKFILL_WAIT = '15m';

function parseWaitFlag(text: string): number {
  const ms = text.trim() === '0' ? 0 : parseDuration(text);
  if (ms === undefined)
    throw new UsageError(`--wait ${text}: expected a duration like 90s, 15m or 1h, or 0 to not wait`);
  return ms;
}

function parseShardFlag(text: string): Shard {
  const shard = parseShard(text);
  if (!shard) throw new UsageError(`--shard ${text}: expected I/N with 0 ≤ I < N, e.g. 0/4`);
  return shard;
}

/**
 * The named accounts this command may sweep, before the database is opened: `--account`
 * when SWEEPER_ACCOUNTS names it (with `connected`, an `acct_…` discovered before is
 * checked against the database later), else every named one; with `--shard`, its own.
 */
export function selectAccounts(config: Config, account: string | undefined, shard: Shard | undefined): string[] {
  if (account !== undefined && !config.accounts.includes(account)) {
    if (config.discoverConnected && /^acct_[A-Za-z0-9]+$/.test(account)) return [];
    throw new UsageError(`--account ${account} is not in SWEEPER_ACCOUNTS (${config.accounts.join(', ')})`);
  }
  const candidates = account ? [account] : config.accounts;
  return shard ? candidates.filter((a) => shardOf(a, shard.count) === shard.index) : candidates;
}

function backfillWindow(flags: SweepFlags, config: Config, now: Date): TimeWindow {
  const from = parseInstant(flags.from ?? '');
  if (!from) throw new UsageError(`--from ${flags.from}: ${instantProblem(flags.from ?? '')}`);
  const to = parseInstant(flags.to ?? '');
  if (!to) throw new UsageError(`--to ${flags.to}: ${instantProblem(flags.to ?? '')}`);
  if (from >= to) throw new UsageError(`--from ${flags.from} must be before --to ${flags.to}`);
  if (to > now) throw new UsageError(`--to ${flags.to} is in the future`);
  if (to.getTime() > now.getTime() - config.settleMs) {
    throw new UsageError(`--to ${flags.to} is not settled yet: it must be at least SWEEPER_SETTLE before now`);
  }
  assertBackfillBounds({ from, to }, config.sliceMs, Boolean(flags.iKnowThisIsLarge));
  return { from, to };
}

/** SIGTERM, SIGINT and SWEEPER_RUN_DEADLINE all stop a run the same way. */
function installShutdownFromConfig(mode: 'run' | 'backfill'): AbortSignal {
  const config = loadConfig();
  return installShutdown(config.shutdownGraceMs, mode === 'run' ? config.runDeadlineMs : config.backfillDeadlineMs);
}

/** SWEEPER_TEST_CRASH_AT=slice:N:phase kills the process at that point (crash tests only). */
function crashPointFromEnv(): ((name: string) => void) | undefined {
  const target = process.env.SWEEPER_TEST_CRASH_AT;
  if (!target) return undefined;
  return (name) => {
    if (name === target) process.kill(process.pid, 'SIGKILL');
  };
}

/** The text summary lives in run-output.ts; re-exported for the callers that import it from here. */
export { formatReport } from '../run-output.js';
