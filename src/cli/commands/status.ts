import type { Command } from 'commander';
import { readStatus, resolveFinding, type LiveRun, type SweepStatus } from '../../sweep/status.js';
import { redact } from '../../secrets.js';
import { terminalSafe } from '../../terminal-text.js';
import { alignColumns } from '../columns.js';
import { formatClock } from '../progress-format.js';
import { completenessLine } from '../run-output.js';
import type { AccountCompleteness } from '../../sweep/completeness.js';
import { osUser, UsageError, withDatabase, writeJson } from '../context.js';

export function registerStatusCommands(program: Command): void {
  program
    .command('status')
    .description(
      'watermarks, runs in progress, last runs, open findings, completeness, claim-store size and oldest claim age',
    )
    .option('--json', 'print one JSON object')
    .addHelpText('after', '\nExample:\n  sweeper status --json | jq .unreconciled')
    .action((flags: { json?: boolean }) =>
      withDatabase(async ({ pool, config }) => {
        const now = new Date();
        const status = await readStatus(pool, now, {
          sliceMs: config.sliceMs,
          completeness: { accounts: config.accounts, now, days: config.deepReadDays, maxLagMs: config.maxLagMs },
        });
        if (flags.json) return writeJson(status);
        const out: string[] = [...watermarkLines(status), ...accountsLines(status)];
        if (status.live_runs.length > 0) out.push('running now:', ...status.live_runs.flatMap(liveRunLines));
        out.push('last runs:');
        for (const r of status.last_runs) {
          out.push(
            `  ${r.account}  ${r.mode}  ${r.status}  ${r.started_at}  ${r.id}${r.error ? `  error: ${r.error}` : ''}`,
          );
        }
        out.push(`open findings (unreconciled): ${status.unreconciled}`);
        out.push(...openFindingsLines(status.open_findings));
        out.push(...completenessLines(status.completeness ?? []));
        const c = status.claims;
        out.push(
          `claims: ${c.count} (${c.in_flight} in flight), oldest ${c.oldest_created_at ?? '-'} (${c.oldest_age_seconds ?? 0}s)`,
        );
        out.push(...claimOutcomeLines(status.claim_outcomes));
        // Account names, errors and categories come from the database: redacted and made terminal-safe.
        process.stdout.write(`${terminalSafe(redact(out.join('\n')))}\n`);
      }),
    );

  program
    .command('resolve <id>')
    .description('a person closes a finding (state resolved, or ignored with --ignore), with an audit row')
    .requiredOption('--note <text>', 'why it is closed: what was done or decided')
    .option('--ignore', 'mark it ignored instead of resolved')
    .option(
      '--not-duplicate',
      'duplicate_effect or suspected_duplicate: these charges are not a duplicate; that set is never raised again',
    )
    .option('--actor <name>', 'who is closing it (default: the OS user)')
    .addHelpText(
      'after',
      '\nExample:\n  sweeper resolve 42 --note "refunded by hand, ticket PAY-1234"\n' +
        '  sweeper resolve 43 --not-duplicate --note "two tickets bought on purpose"',
    )
    .action((id: string, flags: { note: string; ignore?: boolean; actor?: string; notDuplicate?: boolean }) => {
      if (!/^\d+$/.test(id)) throw new UsageError(`finding id ${id}: expected a number`);
      if (!flags.note.trim()) throw new UsageError('--note must say why the finding is closed');
      return withDatabase(async ({ pool }) => {
        const { previous } = await resolveFinding(pool, {
          id: Number(id),
          note: flags.note.trim(),
          actor: flags.actor ?? osUser(),
          now: new Date(),
          state: flags.ignore ? 'ignored' : 'resolved',
          notDuplicate: Boolean(flags.notDuplicate),
        });
        process.stdout.write(`finding ${id}: ${previous} → ${flags.ignore ? 'ignored' : 'resolved'}\n`);
      });
    });
}

/** Up to WATERMARKS_LISTED accounts, each watermark; more (a platform's thousands), the most lagging only. */
export function watermarkLines(status: Pick<SweepStatus, 'watermarks' | 'most_lagging'>): string[] {
  if (status.watermarks.length === 0) return ['watermarks:', '  (no scheduled run yet)'];
  if (status.watermarks.length <= WATERMARKS_LISTED)
    return [
      'watermarks:',
      ...status.watermarks.map(
        (w) => `  ${w.account}${w.shard ? ` [${w.shard}]` : ''}  ${w.watermark}  (lag ${w.lag_seconds}s)`,
      ),
    ];
  return [
    `watermarks: ${status.watermarks.length} accounts; the most lagging:`,
    ...status.most_lagging.map((w) => `  ${w.account}  ${w.watermark}  (lag ${w.lag_seconds}s)`),
  ];
}

const WATERMARKS_LISTED = 20;

/** Each account's completeness; past WATERMARKS_LISTED accounts, only the lagging ones. */
function completenessLines(all: readonly AccountCompleteness[]): string[] {
  if (all.length === 0) return [];
  const shown = all.length <= WATERMARKS_LISTED ? all : all.filter((a) => a.lagging);
  const head =
    shown === all
      ? 'completeness:'
      : `completeness: ${all.length} accounts, ${shown.length} lagging past SWEEPER_MAX_LAG:`;
  return [head, ...shown.map((a) => `  ${a.account}  ${completenessLine(a).replace(/^completeness: /, '')}`)];
}

/** Connected accounts (SWEEPER_ACCOUNTS=connected): how many are swept, how many left, the latest to leave. */
export function accountsLines(status: Pick<SweepStatus, 'accounts'>): string[] {
  const a = status.accounts;
  if (a.active + a.inactive === 0) return [];
  const lines = [`connected accounts: ${a.active} active, ${a.inactive} inactive`];
  if (a.recently_inactive.length > 0) {
    lines.push(`  inactive (latest ${a.recently_inactive.length}):`);
    const why = { unlisted: 'no longer listed by Stripe', revoked: 'refused (403: access revoked)' } as const;
    lines.push(
      ...alignColumns(a.recently_inactive.map((r) => [r.account, `since ${r.since}`, why[r.reason]])).map(
        (l) => `    ${l}`,
      ),
    );
  }
  return lines;
}

/** A run in progress: where its committed slices got to, how much it has read, how long it has been going. */
export function liveRunLines(r: LiveRun): string[] {
  const slices = r.slices_done !== null && r.slices_total !== null ? `slice ${r.slices_done}/${r.slices_total}, ` : '';
  const lines = [
    `  ${r.account}  ${r.mode}  ${r.id}  window ${r.window.from} → ${r.window.to}`,
    `    ${slices}checkpoint ${r.checkpoint} (${r.percent}% of the window), ${r.charges_scanned.toLocaleString('en-US')} charges so far, ` +
      `started ${r.started_at} (${formatClock(r.age_seconds * 1000)} ago)`,
  ];
  if (!r.lock_held)
    lines.push(
      "    no process holds the account's lock: the run's process died; the next run of the account marks it interrupted",
    );
  return lines;
}

/** Open findings per account and category, one aligned row each, counts right-aligned. */
export function openFindingsLines(open: Readonly<Record<string, Readonly<Record<string, number>>>>): string[] {
  const rows = Object.entries(open).flatMap(([account, byCategory]) =>
    Object.entries(byCategory).map(([category, n]) => [account, category, String(n)]),
  );
  return alignColumns(rows, { right: [2] }).map((line) => `  ${line}`);
}

/** The claim library's outcomes per tenant: how often a key was new, replayed, in progress, refused. */
export function claimOutcomeLines(o: {
  since: string | null;
  tenants: Readonly<Record<string, Record<string, number>>>;
}): string[] {
  const tenants = Object.keys(o.tenants);
  if (tenants.length === 0) return ['claim outcomes: none counted yet'];
  const columns = ['created', 'replayed', 'in_progress', 'fingerprint_mismatch', 'stolen', 'quota_exceeded'];
  const rows = [
    ['tenant', ...columns],
    ...tenants.map((t) => [t, ...columns.map((c) => String(o.tenants[t]?.[c] ?? 0))]),
  ];
  return [
    `claim outcomes since ${o.since ?? '-'}:`,
    ...alignColumns(rows, { right: columns.map((_, i) => i + 1) }).map((line) => `  ${line}`),
  ];
}
