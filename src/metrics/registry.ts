import { Gauge, Registry } from 'prom-client';
import { CATEGORIES, type Category } from '../sweep/categories.js';
import type { AccountCompleteness } from '../sweep/completeness.js';
import type { MetricsInput } from './input.js';

/** `matched` is not a finding and is never repaired. */
const FINDING_CATEGORIES: readonly Category[] = CATEGORIES.filter((c) => c !== 'matched');

/**
 * Everything is a gauge: a batch job's values are facts about its last run or
 * about the database now, and the Pushgateway / textfile keep only the latest push.
 * A fresh Registry each time, so nothing leaks between runs or into the global one.
 */
export function buildMetricsRegistry(input: MetricsInput): Registry {
  const registry = new Registry();
  const gauge: GaugeFactory = (name, help, labelNames = []) =>
    new Gauge({ name, help, labelNames, registers: [registry] });
  // In this order: a scrape lists the series as they were registered.
  const accounts = accountsOf(input);
  writeFindings(gauge, input, accounts);
  writeProgress(gauge, input);
  writeLastRuns(gauge, input);
  if (input.skipped) {
    // 1 while a backfill keeps the scheduled run off the account; 0 once the run sweeps it again.
    const skipped = gauge(
      'sweeper_run_skipped',
      'Whether the last scheduled run skipped the account because a backfill had it.',
      ['account'],
    );
    for (const account of accounts) skipped.set({ account }, input.skipped.includes(account) ? 1 : 0);
  }
  writeCompleteness(gauge, input.completeness ?? []);
  writeConnectedAccounts(gauge, input);
  gauge('sweeper_stripe_rate_limited_last_run', 'Stripe 429 (rate limited) answers during the last run.').set(
    input.stripe429s,
  );
  writeClaims(gauge, input);
  return registry;
}

/** Every account the run was asked about, or that has findings, a watermark or a report. */
function accountsOf(input: MetricsInput): string[] {
  return [
    ...new Set([
      ...(input.accounts ?? []),
      ...Object.keys(input.status.open_findings),
      ...input.status.watermarks.map((w) => w.account),
      ...input.reports.map((r) => r.account),
    ]),
  ].sort();
}

function writeFindings(gauge: GaugeFactory, input: MetricsInput, accounts: readonly string[]): void {
  const unreconciled = gauge('sweeper_unreconciled', 'Open (unreconciled) findings.', ['account', 'category']);
  for (const account of accounts) {
    const open = input.status.open_findings[account] ?? {};
    // Zeros are written so an alert on a category clears instead of going stale.
    const categories = [...new Set([...FINDING_CATEGORIES, ...Object.keys(open)])];
    for (const category of categories) unreconciled.set({ account, category }, open[category] ?? 0);
  }
}

/** How far each account's scheduled sweep has got, and when it last succeeded. */
function writeProgress(gauge: GaugeFactory, input: MetricsInput): void {
  const lag = gauge('sweeper_watermark_lag_seconds', 'Seconds between now and the scheduled sweep watermark.', [
    'account',
  ]);
  const lagByAccount = new Map<string, number>();
  for (const w of input.status.watermarks)
    lagByAccount.set(w.account, Math.max(lagByAccount.get(w.account) ?? 0, w.lag_seconds));
  for (const [account, seconds] of [...lagByAccount].sort()) lag.set({ account }, seconds);

  const lastSuccess = gauge(
    'sweeper_last_success_timestamp_seconds',
    'Unix time the last scheduled sweep of the account succeeded.',
    ['account'],
  );
  for (const [account, at] of [...lastSuccessByAccount(input)].sort())
    lastSuccess.set({ account }, at.getTime() / 1000);
}

function writeLastRuns(gauge: GaugeFactory, input: MetricsInput): void {
  // Dry runs wrote nothing and repaired nothing, so they say nothing about the last run.
  const runs = input.reports.filter((r) => !r.dry_run);
  const repairs = gauge('sweeper_repairs_last_run', 'Findings repaired by the last run.', ['account', 'category']);
  const scanned = gauge('sweeper_charges_scanned_last_run', 'Stripe charges read by the last run.', ['account']);
  const duration = gauge('sweeper_run_duration_seconds', 'Wall time of the last run.', ['account']);
  const deferred = gauge(
    'sweeper_deferred_keys_last_run',
    'Keys the last run left to a later one because a live writer held them.',
    ['account'],
  );
  for (const report of runs) {
    for (const category of FINDING_CATEGORIES)
      repairs.set({ account: report.account, category }, report.repaired[category]);
    scanned.set({ account: report.account }, report.charges_scanned);
    deferred.set({ account: report.account }, report.deferred_keys);
    duration.set({ account: report.account }, report.duration_ms / 1000);
  }
}

/** The claim store's size and age, and the claim library's outcomes per tenant. */
function writeClaims(gauge: GaugeFactory, input: MetricsInput): void {
  const claims = input.status.claims;
  gauge('sweeper_claim_store_size', 'Rows in the idempotency claim store.').set(claims.count);
  gauge('sweeper_claim_store_in_flight', 'Claims in_flight (an attempt holds or held a lease).').set(claims.in_flight);
  const oldest = gauge('sweeper_claim_store_oldest_age_seconds', 'Age of the oldest claim: how far expiry is behind.');
  if (claims.oldest_age_seconds !== null) oldest.set(claims.oldest_age_seconds);

  const outcomes = gauge(
    'sweeper_claim_outcomes_total',
    "The claim library's takes per tenant and outcome, over the days kept (claim_outcomes).",
    ['tenant', 'outcome'],
  );
  for (const [tenant, byOutcome] of Object.entries(input.status.claim_outcomes?.tenants ?? {}))
    for (const [outcome, n] of Object.entries(byOutcome)) outcomes.set({ tenant, outcome }, n);
}

/**
 * Connected accounts (SWEEPER_ACCOUNTS=connected, docs/operations.md "Inactive connected
 * accounts"): how many are active and inactive, and a series per inactive account saying
 * why (`unlisted`: Stripe no longer lists it; `revoked`: it answered 403).
 */
function writeConnectedAccounts(gauge: GaugeFactory, input: MetricsInput): void {
  const status = input.status.accounts;
  if (!status && !input.inactiveAccounts) return;
  const counts = gauge('sweeper_connected_accounts', 'Connected accounts discovered, by state (active, inactive).', [
    'state',
  ]);
  counts.set({ state: 'active' }, status?.active ?? 0);
  counts.set({ state: 'inactive' }, status?.inactive ?? input.inactiveAccounts?.length ?? 0);
  const inactive = gauge(
    'sweeper_account_inactive',
    '1 for a connected account not swept: no longer listed by Stripe (reason="unlisted") or refused with 403 (reason="revoked").',
    ['account', 'reason'],
  );
  for (const a of input.inactiveAccounts ?? []) inactive.set({ account: a.account, reason: a.reason }, 1);
}

type GaugeFactory = (name: string, help: string, labelNames?: string[]) => Gauge;

/**
 * Completeness (docs/judgement.md "Completeness"): both lags, whether either is past
 * SWEEPER_MAX_LAG (what the `reconciliation_lag` alert says), and per day of the last
 * SWEEPER_DEEP_READ_DAYS (`days_ago` 0 = today, so the series are the same every day)
 * the mirror's charges and the fraction of them settled. A lag not known yet is not
 * written, rather than written as 0 (which would read as "fully caught up").
 */
function writeCompleteness(gauge: GaugeFactory, completeness: readonly AccountCompleteness[]): void {
  if (completeness.length === 0) return;
  const lag = gauge(
    'sweeper_lag_seconds',
    'Seconds the charges watermark (kind="watermark") or the events cursor (kind="events") is behind now.',
    ['account', 'kind'],
  );
  const lagging = gauge(
    'sweeper_reconciliation_lagging',
    '1 while a lag is past SWEEPER_MAX_LAG (the reconciliation_lag alert), else 0.',
    ['account'],
  );
  const fraction = gauge(
    'sweeper_settled_fraction',
    "Fraction of a day's mirrored charges that are settled: judged, and not the charge of an open finding.",
    ['account', 'days_ago'],
  );
  const charges = gauge(
    'sweeper_day_charges',
    'Charges of a day in the mirror (the denominator of sweeper_settled_fraction).',
    ['account', 'days_ago'],
  );
  for (const c of completeness) {
    if (c.watermark_lag_seconds !== null) lag.set({ account: c.account, kind: 'watermark' }, c.watermark_lag_seconds);
    if (c.events_lag_seconds !== null) lag.set({ account: c.account, kind: 'events' }, c.events_lag_seconds);
    lagging.set({ account: c.account }, c.lagging ? 1 : 0);
    c.days.forEach((day, i) => {
      const daysAgo = String(c.days.length - 1 - i);
      fraction.set({ account: c.account, days_ago: daysAgo }, day.fraction);
      charges.set({ account: c.account, days_ago: daysAgo }, day.charges);
    });
  }
}

/** Latest of: this process's successful runs, the snapshot's last runs, and the database's record. */
function lastSuccessByAccount(input: MetricsInput): Map<string, Date> {
  const latest = new Map<string, Date>();
  const offer = (account: string, at: Date) => {
    const seen = latest.get(account);
    if (!seen || at > seen) latest.set(account, at);
  };
  for (const [account, at] of Object.entries(input.lastSuccessAt ?? {})) offer(account, at);
  for (const run of input.status.last_runs) {
    if (run.mode === 'run' && run.status === 'succeeded' && run.finished_at)
      offer(run.account, new Date(run.finished_at));
  }
  for (const r of input.reports) {
    if (r.mode === 'run' && r.status === 'succeeded' && !r.dry_run) offer(r.account, input.now);
  }
  return latest;
}
