import { ExitCode } from './exit.js';

/**
 * The one `sweeper: …` line a `run` or `backfill` ends with when it exits non-zero:
 * why, and what to do. A job's log shows the last lines first; whoever reads it must
 * not have to dig the cause out of the JSON above.
 */
export interface ExitStory {
  code: number;
  mode: 'run' | 'backfill';
  accounts: ReadonlyArray<{
    account: string;
    status: 'succeeded' | 'interrupted' | 'failed';
    unreconciled: number;
    error?: string;
  }>;
  /** Why the run was stopped (`SIGTERM received`, the run deadline), when it was. */
  interruptedBy: string | null;
  /** Per interrupted account: slices committed of this run's slices, when known. */
  slices?: Readonly<Record<string, { done: number; total: number }>>;
  /** Alert deliveries that failed, and the first failure as the sink answered. */
  alertsFailed: number;
  firstAlertError?: string;
  dryRun: boolean;
}

export function exitReason(story: ExitStory): string | null {
  if (story.code === ExitCode.reconciled) return null;
  // In this order: a failure says more than a stop, a stop more than an alert, an alert more than open findings.
  return failedReason(story) ?? interruptedReason(story) ?? alertsReason(story) ?? openReason(story);
}

function failedReason(story: ExitStory): string | null {
  const failed = story.accounts.filter((a) => a.status === 'failed');
  if (failed.length === 0) return null;
  // The error first: it names the account and the cause, often with what happens next.
  const first = failed[0]!;
  const others = failed.length > 1 ? ` (${failed.length - 1} more account(s) failed: see the reports above)` : '';
  const next =
    story.mode === 'backfill'
      ? 'fix the cause, then run the same backfill again (it resumes from its last committed slice)'
      : 'fix the cause; the next run retries from the watermark';
  return `${firstLine(first.error ?? `account ${first.account} failed`)}${others}; ${next}`;
}

function interruptedReason(story: ExitStory): string | null {
  if (story.interruptedBy === null && !story.accounts.some((a) => a.status === 'interrupted')) return null;
  const again =
    story.mode === 'backfill'
      ? 'run the same backfill again: it resumes from its last committed slice'
      : 'the next run continues from the watermark';
  const stopped = story.accounts.find((a) => a.status === 'interrupted');
  const slices = stopped ? story.slices?.[stopped.account] : undefined;
  const where = stopped
    ? ` account ${stopped.account}${slices ? ` after ${slices.done} of ${slices.total} slices` : ''}`
    : '';
  const why = story.interruptedBy ?? 'stopped';
  return `interrupted (${why}):${where || ' before any account was swept'}; ${story.dryRun ? 'nothing was written' : `committed slices stand, ${again}`}`;
}

function alertsReason(story: ExitStory): string | null {
  if (story.alertsFailed === 0) return null;
  return (
    `${story.alertsFailed} alert deliver${story.alertsFailed === 1 ? 'y' : 'ies'} failed${story.firstAlertError ? ` (${firstLine(story.firstAlertError)})` : ''}; ` +
    "the run's results are saved and printed, and the next run sends the alert again: check the sink's URL and that it answers 2xx"
  );
}

function openReason(story: ExitStory): string | null {
  if (story.code !== ExitCode.unreconciled) return null;
  const open = story.accounts.filter((a) => a.unreconciled > 0);
  const total = open.reduce((n, a) => n + a.unreconciled, 0);
  const where = open.map((a) => `${a.account}: ${a.unreconciled}`).join(', ');
  return (
    `${total} unreconciled finding(s) open (${where}): a person decides them. ` +
    'List them with `sweeper report --status open`, close each handled one with `sweeper resolve ID --note "…"`'
  );
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? '';
}
