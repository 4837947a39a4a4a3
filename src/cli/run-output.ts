import type { OpenFindingBrief } from '../report/open-list.js';
import { CATEGORIES } from '../sweep/categories.js';
import type { AccountCompleteness } from '../sweep/completeness.js';
import type { DeepReadResult } from '../sweep/deep-read.js';
import type { ChangesReport, PayoutsReport, RefundsReport, SweepProgress, SweepReport } from '../sweep/types.js';
import { alignColumns } from './columns.js';
import { formatClock } from './progress-format.js';

/** How many open findings a run's summary names; `sweeper report` has all of them. */
export const OPEN_LISTED = 10;

/** What the text summary adds to the report: facts the CLI gathered around the sweep. */
export interface SummaryExtras {
  /** The account's last progress (slices committed of this run's). */
  progress?: SweepProgress;
  /** Why the run was stopped (`SIGTERM received`, the run deadline). */
  interruptedBy?: string | null;
  /** The account's open findings after the run: the first few and the total. */
  open?: { total: number; first: OpenFindingBrief[] };
  completeness?: AccountCompleteness;
}

/** The text a person reads after `run` or `backfill`, one block per account. */
export function formatReport(r: SweepReport, extras: SummaryExtras = {}): string {
  if (r.status === 'failed')
    return `${r.mode} ${r.run_id || '(no run)'}  account ${r.account}  FAILED: ${r.error ?? 'unknown error'}\n\n`;
  const lines = [...headLines(r, extras), '', ...categoryLines(r), '', ...tailLines(r, extras), ''];
  return `${lines.join('\n')}\n`;
}

/** Which run, where it started from, its window and what it read. */
function headLines(r: SweepReport, extras: SummaryExtras): string[] {
  const lines = [
    `${r.mode} ${r.run_id}  account ${r.account}${r.dry_run ? '  (dry run: nothing written)' : ''}${interruptedNote(r, extras)}`,
  ];
  if (r.resumed_from) {
    const from = extras.progress ? ` from ${extras.progress.start.toISOString()}` : '';
    lines.push(`resumed backfill ${r.resumed_from}: its committed slices were kept; this run continued${from}`);
  }
  const scanned =
    r.status === 'interrupted'
      ? `charges scanned before it stopped ${r.charges_scanned}`
      : `charges scanned ${r.charges_scanned}`;
  lines.push(`window ${r.window ? `${r.window.from} → ${r.window.to}` : '(nothing settled yet)'}   ${scanned}`);
  const refunds = r.refunds ? refundsLine(r.refunds) : null;
  if (refunds) lines.push(refunds);
  const payouts = r.payouts ? payoutsLine(r.payouts) : null;
  if (payouts) lines.push(payouts);
  if (r.changes) lines.push(...changesLines(r.changes));
  return lines;
}

/** The categories found or repaired, in the contract's order. */
function categoryLines(r: SweepReport): string[] {
  const rows = [['category', 'found', r.dry_run ? 'would repair' : 'repaired']];
  for (const category of CATEGORIES) {
    const found = r.findings[category];
    const repaired = r.repaired[category];
    if (found === 0 && repaired === 0) continue;
    rows.push([category, String(found), String(repaired)]);
  }
  return alignColumns(rows, { right: [1, 2], gap: 4 }).map((line) => `  ${line}`);
}

/** What is left: open findings, the brake, deferred keys, completeness, and what to do next. */
function tailLines(r: SweepReport, extras: SummaryExtras): string[] {
  const lines = [`unreconciled (open findings): ${r.unreconciled}`];
  if (r.mass_repair) lines.push(brakeLine(r.mass_repair));
  if (r.deferred_keys > 0) {
    const later = r.mode === 'run' ? 'the next run judges them' : 'run this backfill again once their leases end';
    lines.push(`deferred (held by a live writer, not judged): ${r.deferred_keys}: ${later}`);
  }
  if (extras.completeness) lines.push(completenessLine(extras.completeness));
  if (extras.open && extras.open.total > 0 && !r.dry_run) lines.push(...openLines(r.account, extras.open));
  return lines;
}

function interruptedNote(r: SweepReport, extras: SummaryExtras): string {
  if (r.status !== 'interrupted') return '';
  const why = extras.interruptedBy ? ` (${extras.interruptedBy})` : '';
  const p = extras.progress;
  const done = p ? `: ${p.slicesDone} of ${p.slicesTotal} slices committed` : '';
  const next = r.dry_run
    ? 'nothing was written'
    : r.mode === 'backfill'
      ? 'run the same backfill again to resume'
      : 'the next run continues from the watermark';
  return `  INTERRUPTED${why}${done}; ${next}`;
}

/** The first open findings by id, then the commands a person runs next. */
export function openLines(account: string, open: { total: number; first: readonly OpenFindingBrief[] }): string[] {
  const heading =
    open.total > open.first.length
      ? `open findings (the first ${open.first.length} of ${open.total}):`
      : `open findings (${open.total}):`;
  const rows = open.first.map((f) => [`#${f.id}`, f.category, subjectOf(f)]);
  const out = [heading, ...alignColumns(rows, { gap: 2 }).map((line) => `  ${line}`)];
  if (open.total > open.first.length) out.push(`  … and ${open.total - open.first.length} more`);
  const next = [
    [`sweeper report --status open --account ${account}`, 'every open finding, with amounts, times and reasons'],
    ['sweeper resolve ID --note "what was done"', 'closes a finding once a person has handled it'],
  ];
  out.push('next:', ...alignColumns(next, { gap: 4 }).map((line) => `  ${line}`));
  return out;
}

function subjectOf(f: OpenFindingBrief): string {
  const key = f.tenantId !== null && f.idempotencyKey !== null ? `${f.tenantId} / ${f.idempotencyKey}` : null;
  return [f.chargeId, key].filter((part): part is string => part !== null).join('  ') || '-';
}

/** `completeness: watermark 12m 00s behind, events 8m 00s behind (limit 2h 00m); settled 2026-11-09 100% of 1,203, 2026-11-10 no charges`. */
export function completenessLine(c: AccountCompleteness): string {
  const lag = (name: string, seconds: number | null) =>
    seconds === null ? `${name} not set yet` : `${name} ${formatClock(seconds * 1000)} behind`;
  // A day without a charge has nothing to be complete about: "100% of 0" would say otherwise.
  const day = (d: AccountCompleteness['days'][number]) =>
    d.charges === 0 ? `${d.day} no charges` : `${d.day} ${percent(d.fraction)} of ${d.charges.toLocaleString('en-US')}`;
  const days = c.days.map(day).join(', ');
  const head = c.lagging ? 'completeness: BEHIND (past SWEEPER_MAX_LAG): ' : 'completeness: ';
  return `${head}${lag('watermark', c.watermark_lag_seconds)}, ${lag('events', c.events_lag_seconds)} (limit ${formatClock(c.max_lag_seconds * 1000)}); settled ${days}`;
}

/** 87.1%, and never 100% unless it is: rounded down. */
export function percent(fraction: number): string {
  const tenths = Math.floor(fraction * 1000);
  return `${tenths % 10 === 0 ? tenths / 10 : (tenths / 10).toFixed(1)}%`;
}

/**
 * What the steps after the window judged: the events read (and the charges they pointed
 * at that no run has swept yet, left for a backfill), the re-list of a lost events gap,
 * the deep re-read. The category table above counts every step together.
 */
export function changesLines(c: ChangesReport): string[] {
  const lines: string[] = [];
  if (c.fallback) lines.push(`re-list (events cursor past Stripe's 30 days): ${relistText(c.fallback)}`);
  const left = c.not_swept > 0 ? `; ${c.not_swept} created before anything was swept, left for a backfill` : '';
  lines.push(`late changes: ${c.events} events, ${c.charges} charges re-read and judged${left}${stepText(c)}`);
  if (c.deep_read) lines.push(`deep re-read: ${relistText(c.deep_read)}`);
  return lines;
}

/** The refunds step: what it listed and read by id, or why it could not run; null when it had nothing to do. */
export function refundsLine(r: RefundsReport): string | null {
  if (r.error) return `refunds: not judged (${r.error})`;
  if (r.days_listed === 0 && r.read_by_id === 0 && Object.keys(r.found).length === 0) return null;
  const byId = r.read_by_id > 0 ? `, ${r.read_by_id} read by id (${r.missing} not at Stripe)` : '';
  return `refunds: ${r.listed} listed over ${r.days_listed} days${byId}${stepText(r)}`;
}

/** The payouts step: what it listed and reconciled, or why it could not run; null when it listed nothing. */
export function payoutsLine(p: PayoutsReport): string | null {
  if (p.error) return `payouts: not reconciled (${p.error})`;
  if (p.skipped || (p.listed === 0 && Object.keys(p.found).length === 0)) return null;
  const awaiting = p.awaiting > 0 ? `, ${p.awaiting} awaiting Stripe's reconciliation` : '';
  const manual = p.not_itemised > 0 ? `, ${p.not_itemised} manual (not itemised)` : '';
  return `payouts: ${p.listed} listed, ${p.reconciled} reconciled (${p.transactions} transactions, fees on ${p.fees} payments)${awaiting}${manual}${stepText({ found: p.found, repaired: {} })}`;
}

function relistText(d: DeepReadResult): string {
  const left = d.not_swept_hours > 0 ? `; ${d.not_swept_hours} hours not swept yet, left for a backfill` : '';
  return `${d.from} → ${d.to}, ${d.hours} hours compared, ${d.differing} differed, ${d.charges} charges judged again${left}${stepText(d)}`;
}

/** `: found status_drift 2, repaired status_drift 2`, or nothing when the step found nothing. */
function stepText(s: Pick<ChangesReport, 'found' | 'repaired'>): string {
  const list = (counts: Partial<Record<string, number>>) =>
    Object.entries(counts)
      .map(([category, n]) => `${category} ${n ?? 0}`)
      .join(', ');
  const parts = [
    Object.keys(s.found).length > 0 ? `found ${list(s.found)}` : '',
    Object.keys(s.repaired).length > 0 ? `repaired ${list(s.repaired)}` : '',
  ].filter(Boolean);
  return parts.length > 0 ? ` (${parts.join('; ')})` : '';
}

/** The repair brake's bound, passed by a dry run (a real run stops there) or with --allow-mass-repair. */
export function brakeLine(b: NonNullable<SweepReport['mass_repair']>): string {
  const share = (f: number) => `${Math.round(f * 1000) / 10}%`;
  const counts = `${b.repairs} ${b.category} repairs of ${b.judged} judged (${share(b.repairs / b.judged)}, SWEEPER_MAX_REPAIR_SHARE ${share(b.share)})`;
  return b.allowed
    ? `repair brake passed with --allow-mass-repair: ${counts}`
    : `repair brake: a real run would stop before these repairs: ${counts}; look at them first, then run with --allow-mass-repair if they are right`;
}
