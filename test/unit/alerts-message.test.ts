import { describe, expect, it } from 'vitest';
import { ALERT_CATEGORIES, severityOf, type AlertCategory } from '../../src/alerts/categories.js';
import { formatAge, type AlertContext } from '../../src/alerts/message.js';
import { pagerDutyEvent } from '../../src/alerts/pagerduty.js';
import { slackMessage } from '../../src/alerts/slack.js';
import type { CategoryChange, Change } from '../../src/alerts/transitions.js';

const NOW = new Date('2026-11-10T12:00:00Z');

function context(entries: Array<[AlertCategory, number, number, Change]>, oldestOpenAt: Date | null): AlertContext {
  const counts = Object.fromEntries(ALERT_CATEGORIES.map((c) => [c, 0])) as Record<AlertCategory, number>;
  const changes: CategoryChange[] = ALERT_CATEGORIES.map((category) => ({
    category,
    previous: 0,
    current: 0,
    change: 'none',
  }));
  for (const [category, previous, current, change] of entries) {
    counts[category] = current;
    const row = changes.find((c) => c.category === category);
    if (row) Object.assign(row, { previous, current, change });
  }
  return {
    runId: 'run_20261110T120000Z_abc123',
    account: 'acct_1Nv0FGQ9RKHgCVdK',
    now: NOW,
    counts,
    unreconciled: Object.values(counts).reduce((a, b) => a + b, 0),
    oldestOpenAt,
    changes,
  };
}

describe('formatAge', () => {
  it.each([
    [0, '0s'],
    [45_000, '45s'],
    [12 * 60_000 + 5_000, '12m'],
    [2 * 3_600_000 + 5 * 60_000, '2h 5m'],
    [3 * 3_600_000, '3h'],
    [3 * 86_400_000 + 4 * 3_600_000 + 59_000, '3d 4h'],
    [-5_000, '0s'],
  ])('%d ms → %s', (ms, text) => {
    expect(formatAge(ms)).toBe(text);
  });
});

describe('severity', () => {
  it('is critical exactly for the categories where money may be wrong', () => {
    expect(ALERT_CATEGORIES.filter((c) => severityOf(c) === 'critical').sort()).toEqual([
      'amount_mismatch',
      'duplicate_charge',
      'duplicate_effect',
      'effect_without_charge',
      'lost_effect',
      'payout_mismatch',
      'refund_effect_without_refund',
      'refund_status_drift',
    ]);
  });
});

describe('slack message', () => {
  it('escapes what Slack treats as markup in blocks but keeps text plain', () => {
    const ctx = { ...context([['stale_claim', 0, 1, 'opened']], null), account: 'a<b>&c' };
    const message = slackMessage(ctx);
    expect(message.text).toContain('account a<b>&c');
    expect(JSON.stringify(message.blocks)).toContain('account a&lt;b&gt;&amp;c');
  });

  it('says down from N for a decreased category carried by another change', () => {
    const ctx = context(
      [
        ['stale_claim', 3, 1, 'decreased'],
        ['orphan_charge', 0, 1, 'opened'],
      ],
      new Date(NOW.getTime() - 90_000),
    );
    expect(slackMessage(ctx).text.split('\n')).toEqual([
      'sweeper: 2 unreconciled findings on account acct_1Nv0FGQ9RKHgCVdK',
      '• stale_claim: 1 (down from 3)',
      '• orphan_charge: 1 (new)',
      'Oldest open finding: 1m old (evidence dated 2026-11-10T11:58:30.000Z)',
      'Investigate: sweeper report --status open --account acct_1Nv0FGQ9RKHgCVdK',
      'Run run_20261110T120000Z_abc123',
    ]);
  });
});

describe('pagerduty event', () => {
  it('has no event for a category without news', () => {
    const ctx = context([['stale_claim', 3, 1, 'decreased']], null);
    expect(ctx.changes.map((c) => pagerDutyEvent('key', ctx, c)).filter(Boolean)).toEqual([]);
  });
});
