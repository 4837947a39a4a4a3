import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { rename, rm, stat } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import type { Command } from 'commander';
import { accountIsRecorded, writeReport, type ReportFilter } from '../../report/findings-report.js';
import { writePayoutReport, type PayoutReportFilter } from '../../report/payouts-report.js';
import type { Pool } from '../../db/pool.js';
import { CATEGORIES } from '../../sweep/categories.js';
import { instantProblem, parseInstant } from '../../time/instant.js';
import { UsageError, withDatabase } from '../context.js';
import { forOperator } from '../../log.js';

const STATES = ['open', 'repaired', 'resolved', 'ignored'];

interface ReportFlags {
  status?: string;
  category?: string;
  account?: string;
  since?: string;
  format: string;
  out?: string;
}

export function registerReport(program: Command): void {
  const report = program
    .command('report')
    .description('export findings, one row per finding, streamed (constant memory)')
    .option('--status <state>', `only findings in this state: ${STATES.join(', ')}`)
    .option('--category <category>', 'only this category')
    .option('--account <id>', 'only this account (acct_… or platform)')
    .option('--since <time>', 'only findings last seen at or after this time (ISO 8601)')
    .option('--format <format>', 'csv or json', 'csv')
    .option('--out <file>', 'write to this file (atomically) instead of stdout')
    .addHelpText(
      'after',
      '\nExample:\n  sweeper report --status open --category duplicate_charge --format csv --out open.csv',
    )
    .action(async (flags: ReportFlags) => {
      const filter = parseFilter(flags);
      const format = flags.format;
      if (format !== 'csv' && format !== 'json') throw new UsageError(`--format ${format}: expected csv or json`);
      if (flags.out !== undefined) await assertFileTarget(flags.out, format);
      await withDatabase(async ({ pool, logger, config }) => {
        if (filter.account !== undefined) await assertKnownAccount(pool, config.accounts, filter.account);
        if (!flags.out) {
          try {
            const rows = await writeReport(pool, filter, format, process.stdout);
            logger.info({ rows }, 'report written');
          } catch (error) {
            // The reader went away (`sweeper report | head`): that is an end, not a failure.
            if ((error as NodeJS.ErrnoException).code !== 'EPIPE') throw error;
          }
          return;
        }
        // Written beside the target and renamed, so a reader never sees half a report.
        const temp = `${flags.out}.tmp-${process.pid}`;
        const file = createWriteStream(temp);
        const opened = once(file, 'open');
        try {
          await opened.catch((error: NodeJS.ErrnoException) => {
            throw new UsageError(`--out ${flags.out}: cannot write there (${error.code ?? error.message})`);
          });
          const rows = await writeReport(pool, filter, format, file);
          file.end();
          await finished(file);
          await rename(temp, flags.out).catch((error: NodeJS.ErrnoException) => {
            // Made a directory meanwhile: the same answer as when it was one from the start.
            if (error.code === 'EISDIR' || error.code === 'ENOTDIR') throw directoryError(flags.out as string, format);
            throw error;
          });
          logger.info(forOperator({ rows, out: flags.out }), 'report written');
        } catch (error) {
          file.destroy();
          await rm(temp, { force: true });
          throw error;
        }
      });
    });
  // `report payouts --format json`: the subcommand's own options, not the findings report's.
  report.enablePositionalOptions();
  registerPayoutReport(report);
}

interface PayoutReportFlags {
  from?: string;
  to?: string;
  account?: string;
  format: string;
}

/** `sweeper report payouts`: one row per payout, what a finance team books (docs/cli.md). */
function registerPayoutReport(report: Command): void {
  report
    .command('payouts')
    .description('export payouts, one row per payout with its sums by kind and its residual, streamed')
    .option('--from <time>', 'only payouts arriving at or after this time (ISO 8601)')
    .option('--to <time>', 'only payouts arriving before this time (ISO 8601)')
    .option('--account <id>', 'only this account (acct_… or platform)')
    .option('--format <format>', 'csv or json', 'csv')
    .addHelpText(
      'after',
      '\nExample:\n  sweeper report payouts --from 2026-03-01 --to 2026-04-01 --format csv > march.csv',
    )
    .action(async (flags: PayoutReportFlags) => {
      const format = flags.format;
      if (format !== 'csv' && format !== 'json') throw new UsageError(`--format ${format}: expected csv or json`);
      const filter: PayoutReportFilter = {};
      for (const name of ['from', 'to'] as const) {
        const text = flags[name];
        if (text === undefined) continue;
        const at = parseInstant(text);
        if (!at) throw new UsageError(`--${name} ${text}: ${instantProblem(text)}`);
        filter[name] = at;
      }
      if (filter.from && filter.to && filter.from >= filter.to)
        throw new UsageError(`--from ${flags.from} must be before --to ${flags.to}`);
      if (flags.account !== undefined) filter.account = flags.account;
      await withDatabase(async ({ pool, logger, config }) => {
        if (filter.account !== undefined) await assertKnownAccount(pool, config.accounts, filter.account);
        try {
          const rows = await writePayoutReport(pool, filter, format, process.stdout);
          logger.info({ rows }, 'payouts report written');
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EPIPE') throw error;
        }
      });
    });
}

/**
 * `--account` must be one this deployment sweeps (SWEEPER_ACCOUNTS) or one some run or
 * finding names (swept before, by another configuration): anything else is a typo, and a
 * header-only report would read as "nothing open there".
 */
async function assertKnownAccount(pool: Pool, configured: readonly string[], account: string): Promise<void> {
  if (configured.includes(account) || (await accountIsRecorded(pool, account))) return;
  throw new UsageError(
    `--account ${account} is unknown: it is not in SWEEPER_ACCOUNTS (${configured.join(', ')}) and no run or finding names it`,
  );
}

/** `--out` names the file to write: a directory there (or a path ending in /) is a usage error, found before any work. */
async function assertFileTarget(out: string, format: string): Promise<void> {
  if (out.endsWith('/')) throw directoryError(out, format);
  const existing = await stat(out).catch(() => null);
  if (existing?.isDirectory()) throw directoryError(out, format);
}

function directoryError(out: string, format: string): UsageError {
  const dir = out.replace(/\/+$/, '') || '/';
  return new UsageError(`--out ${out} is a directory: give the file to write, e.g. --out ${dir}/findings.${format}`);
}

function parseFilter(flags: ReportFlags): ReportFilter {
  const filter: ReportFilter = {};
  if (flags.status !== undefined) {
    if (!STATES.includes(flags.status))
      throw new UsageError(`--status ${flags.status}: expected one of ${STATES.join(', ')}`);
    filter.status = flags.status;
  }
  if (flags.category !== undefined) {
    if (!(CATEGORIES as readonly string[]).includes(flags.category) || flags.category === 'matched') {
      throw new UsageError(
        `--category ${flags.category}: expected one of ${CATEGORIES.filter((c) => c !== 'matched').join(', ')}`,
      );
    }
    filter.category = flags.category;
  }
  if (flags.account !== undefined) filter.account = flags.account;
  if (flags.since !== undefined) {
    const since = parseInstant(flags.since);
    if (!since) throw new UsageError(`--since ${flags.since}: ${instantProblem(flags.since)}`);
    filter.since = since;
  }
  return filter;
}
