import { describe, expect, it } from 'vitest';
import { exitReason, type ExitStory } from '../../src/cli/exit-reason.js';
import { completenessLine, formatReport, openLines, payoutsLine, percent } from '../../src/cli/run-output.js';
import { emptyCounts } from '../../src/sweep/categories.js';
import type { AccountCompleteness } from '../../src/sweep/completeness.js';
import type { SweepProgress, SweepReport } from '../../src/sweep/types.js';

function report(over: Partial<SweepReport> = {}): SweepReport {
  return {
    run_id: 'run_2',
    mode: 'backfill',
    account: 'platform',
    window: { from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z' },
    dry_run: false,
    charges_scanned: 1200,
    malformed_charges: 0,
    unnamed_charges: 0,
    deferred_keys: 0,
    findings: { ...emptyCounts(), matched: 1190, unattributed_charge: 2 },
    repaired: emptyCounts(),
    unreconciled: 2,
    duration_ms: 1000,
    status: 'succeeded',
    ...over,
  };
}
const progress: SweepProgress = {
  runId: 'run_2',
  mode: 'backfill',
  account: 'platform',
  window: { from: new Date('2026-11-01T00:00:00Z'), to: new Date('2026-11-02T00:00:00Z') },
  start: new Date('2026-11-01T03:00:00Z'),
  resumedFrom: 'run_1',
  phase: 'slices',
  slicesDone: 3,
  slicesTotal: 21,
  chargesScanned: 150,
};

describe('the text summary of a run', () => {
  it('an interrupted run says so, how far it got and how to go on; it does not look finished', () => {
    const text = formatReport(report({ status: 'interrupted', charges_scanned: 150 }), {
      progress,
      interruptedBy: 'SIGTERM received',
    });
    expect(text.split('\n')[0]).toBe(
      'backfill run_2  account platform  INTERRUPTED (SIGTERM received): 3 of 21 slices committed; run the same backfill again to resume',
    );
    expect(text).toContain('charges scanned before it stopped 150');
    expect(text).not.toMatch(/charges scanned 150/);
    const run = formatReport(report({ mode: 'run', status: 'interrupted' }), {
      interruptedBy: 'the run deadline SWEEPER_RUN_DEADLINE (12m) was reached',
    });
    expect(run.split('\n')[0]).toMatch(
      /INTERRUPTED \(the run deadline .*\); the next run continues from the watermark$/,
    );
  });

  it('a resumed backfill says which one it continued, and from where', () => {
    const text = formatReport(report({ resumed_from: 'run_1' }), { progress });
    expect(text.split('\n')[1]).toBe(
      'resumed backfill run_1: its committed slices were kept; this run continued from 2026-11-01T03:00:00.000Z',
    );
  });

  it('lists the first open findings by id, how many more, and the next commands', () => {
    const first = Array.from({ length: 10 }, (_, i) => ({
      id: 40 + i,
      category: i === 0 ? 'stale_claim' : 'unattributed_charge',
      chargeId: i === 0 ? null : `ch_${i}`,
      tenantId: i === 0 ? 'acme' : null,
      idempotencyKey: i === 0 ? 'order-7' : null,
    }));
    const lines = openLines('acct_1', { total: 23, first });
    expect(lines[0]).toBe('open findings (the first 10 of 23):');
    expect(lines[1]).toBe('  #40  stale_claim          acme / order-7');
    expect(lines[2]).toBe('  #41  unattributed_charge  ch_1');
    expect(lines[11]).toBe('  … and 13 more');
    expect(lines.slice(12)).toEqual([
      'next:',
      '  sweeper report --status open --account acct_1    every open finding, with amounts, times and reasons',
      '  sweeper resolve ID --note "what was done"        closes a finding once a person has handled it',
    ]);
    expect(openLines('p', { total: 1, first: first.slice(1, 2) })[0]).toBe('open findings (1):');
    // A dry run's findings were rolled back: none is listed.
    expect(formatReport(report({ dry_run: true }), { open: { total: 2, first } })).not.toContain('open findings (');
    expect(formatReport(report(), { open: { total: 2, first: first.slice(0, 2) } })).toContain(
      'open findings (2):\n  #40',
    );
  });

  it('completeness in a line: both lags against the limit, each day’s settled share rounded down', () => {
    const c: AccountCompleteness = {
      account: 'platform',
      watermark: '2026-11-10T11:48:00.000Z',
      watermark_lag_seconds: 720,
      events_cursor: null,
      events_lag_seconds: null,
      max_lag_seconds: 7200,
      lagging: false,
      days: [
        { day: '2026-11-09', charges: 1203, settled: 1203, fraction: 1 },
        { day: '2026-11-10', charges: 1000, settled: 999, fraction: 0.999 },
      ],
    };
    expect(completenessLine(c)).toBe(
      'completeness: watermark 12m 00s behind, events not set yet (limit 2h 00m); settled 2026-11-09 100% of 1,203, 2026-11-10 99.9% of 1,000',
    );
    expect(completenessLine({ ...c, lagging: true })).toMatch(/^completeness: BEHIND \(past SWEEPER_MAX_LAG\): /);
    // A day with no charge says so, not "100% of 0".
    const quiet = { ...c, days: [...c.days, { day: '2026-11-11', charges: 0, settled: 0, fraction: 1 }] };
    expect(completenessLine(quiet)).toMatch(/, 2026-11-10 99\.9% of 1,000, 2026-11-11 no charges$/);
    expect([percent(1), percent(0.99999), percent(0.871), percent(0)]).toEqual(['100%', '99.9%', '87.1%', '0%']);
  });
});

describe('what each step of a scheduled run judged', () => {
  it('the window, the events, the deep re-read: each on its line, with what it found and left for a backfill', () => {
    const text = formatReport(
      report({
        mode: 'run',
        changes: {
          events: 12,
          charges: 10,
          not_swept: 3,
          malformed_events: 0,
          cursor: '2026-11-02T00:00:00.000Z',
          cursor_lag_seconds: 600,
          found: { status_drift: 2 },
          repaired: { status_drift: 2 },
          deep_read: {
            from: '2026-10-30T00:00:00.000Z',
            to: '2026-11-01T23:50:00.000Z',
            hours: 24,
            differing: 1,
            not_swept_hours: 48,
            charges: 40,
            found: { unattributed_charge: 1 },
            repaired: {},
          },
        },
      }),
    );
    const lines = text.split('\n');
    expect(lines[1]).toMatch(/^window .* charges scanned 1200$/);
    expect(lines[2]).toBe(
      'late changes: 12 events, 10 charges re-read and judged; 3 created before anything was swept, left for a backfill (found status_drift 2; repaired status_drift 2)',
    );
    expect(lines[3]).toBe(
      'deep re-read: 2026-10-30T00:00:00.000Z → 2026-11-01T23:50:00.000Z, 24 hours compared, 1 differed, 40 charges judged again; 48 hours not swept yet, left for a backfill (found unattributed_charge 1)',
    );
  });
  it('a backfill has no such lines', () => {
    expect(formatReport(report())).not.toMatch(/late changes|deep re-read/);
  });
  it('the refunds step: a line when it listed, read or failed; none when nothing could have a refund', () => {
    const refunds = {
      listed: 7,
      read_by_id: 2,
      missing: 1,
      malformed: 0,
      days_listed: 2,
      days_quiet: 0,
      cursor: null,
      found: { refund_without_effect: 1, refund_effect_without_refund: 1 },
      repaired: { refund_without_effect: 1 },
    };
    expect(formatReport(report({ refunds }))).toContain(
      'refunds: 7 listed over 2 days, 2 read by id (1 not at Stripe) (found refund_without_effect 1, refund_effect_without_refund 1; repaired refund_without_effect 1)',
    );
    const quiet = {
      ...refunds,
      listed: 0,
      read_by_id: 0,
      missing: 0,
      days_listed: 0,
      days_quiet: 1,
      found: {},
      repaired: {},
    };
    expect(formatReport(report({ refunds: quiet }))).not.toMatch(/refunds:/);
    expect(formatReport(report({ refunds: { ...quiet, error: 'the key may not read refunds' } }))).toContain(
      'refunds: not judged (the key may not read refunds)',
    );
  });
});

describe('the sweeper: line of a non-zero exit', () => {
  const story = (over: Partial<ExitStory>): ExitStory => ({
    code: 1,
    mode: 'backfill',
    accounts: [{ account: 'platform', status: 'succeeded', unreconciled: 0 }],
    interruptedBy: null,
    alertsFailed: 0,
    dryRun: false,
    ...over,
  });

  it('none for 0', () => {
    expect(exitReason(story({ code: 0 }))).toBeNull();
  });
  it('a failed account: its error first, then what to do', () => {
    expect(
      exitReason(
        story({
          accounts: [{ account: 'acct_1', status: 'failed', unreconciled: 0, error: 'Stripe refused the key\nmore' }],
        }),
      ),
    ).toBe(
      'Stripe refused the key; fix the cause, then run the same backfill again (it resumes from its last committed slice)',
    );
    expect(
      exitReason(
        story({
          mode: 'run',
          accounts: [
            { account: 'a', status: 'failed', unreconciled: 0, error: 'boom' },
            { account: 'b', status: 'failed', unreconciled: 0, error: 'bang' },
          ],
        }),
      ),
    ).toBe(
      'boom (1 more account(s) failed: see the reports above); fix the cause; the next run retries from the watermark',
    );
  });
  it('interrupted: by what, how far, and how to go on', () => {
    expect(
      exitReason(
        story({
          interruptedBy: 'SIGTERM received',
          accounts: [{ account: 'platform', status: 'interrupted', unreconciled: 2 }],
          slices: { platform: { done: 3, total: 21 } },
        }),
      ),
    ).toBe(
      'interrupted (SIGTERM received): account platform after 3 of 21 slices; committed slices stand, run the same backfill again: it resumes from its last committed slice',
    );
    expect(exitReason(story({ mode: 'run', interruptedBy: 'SIGINT received', accounts: [] }))).toBe(
      'interrupted (SIGINT received): before any account was swept; committed slices stand, the next run continues from the watermark',
    );
  });
  it('an alert that was not delivered: the results are kept, check the sink', () => {
    expect(exitReason(story({ alertsFailed: 1, firstAlertError: 'webhook post for platform: HTTP 500' }))).toBe(
      "1 alert delivery failed (webhook post for platform: HTTP 500); the run's results are saved and printed, and the next run sends the alert again: check the sink's URL and that it answers 2xx",
    );
  });
  it('findings open (3): how many where, and the commands', () => {
    expect(
      exitReason(
        story({
          code: 3,
          accounts: [
            { account: 'platform', status: 'succeeded', unreconciled: 2 },
            { account: 'acct_1', status: 'succeeded', unreconciled: 0 },
          ],
        }),
      ),
    ).toBe(
      '2 unreconciled finding(s) open (platform: 2): a person decides them. List them with `sweeper report --status open`, close each handled one with `sweeper resolve ID --note "…"`',
    );
  });
});

describe('payoutsLine', () => {
  const base = {
    listed: 3,
    skipped: false,
    reconciled: 2,
    not_itemised: 0,
    awaiting: 1,
    transactions: 5,
    linked: 4,
    fees: 3,
    found: {},
  };
  it('says what was listed and reconciled, what waits, and what was found', () => {
    expect(payoutsLine({ ...base, found: { payout_mismatch: 1 } })).toBe(
      "payouts: 3 listed, 2 reconciled (5 transactions, fees on 3 payments), 1 awaiting Stripe's reconciliation (found payout_mismatch 1)",
    );
  });
  it('is silent when the run listed nothing, and says why when the step failed', () => {
    expect(payoutsLine({ ...base, skipped: true })).toBeNull();
    expect(payoutsLine({ ...base, error: 'no Payouts read' })).toBe('payouts: not reconciled (no Payouts read)');
  });
});
