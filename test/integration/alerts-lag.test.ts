import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAlerter, LAG_ALERT, type LagStatus } from '../../src/alerts/index.js';
import { webhookBody } from '../../src/alerts/webhook.js';
import { silentLogger } from '../../src/log.js';
import { emptyCounts, type Category } from '../../src/sweep/categories.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * The `reconciliation_lag` alert: a stalled sweeper pages even with nothing open. It
 * rides the per-category machinery (state row, change, repeat, resolve, dedup key)
 * without ever being a finding category.
 */

const T0 = new Date('2026-11-10T12:00:00Z');
const MIN = 60_000;
const ACCOUNT = 'acct_lag1';
const PD_URL = 'https://events.pagerduty.invalid/v2/enqueue';
const SLACK_URL = 'https://hooks.slack.invalid/services/T0/B0/lagsecret';
const WEBHOOK_URL = 'https://receiver.invalid/hook';
const ROUTING_KEY = 'R0UT1NGKEY0123456789abcdefLAG000';

let db: TestDatabase;
let now = T0;
let sent: Array<{ url: string; body: Record<string, unknown> }> = [];

const behind: LagStatus = {
  lagging: true,
  watermarkLagSeconds: 3 * 3600 + 300,
  eventsLagSeconds: 600,
  maxLagSeconds: 7200,
};
const caughtUp: LagStatus = { lagging: false, watermarkLagSeconds: 900, eventsLagSeconds: 600, maxLagSeconds: 7200 };

function alerter() {
  return createAlerter({
    pool: db.pool,
    config: {
      slack: { webhookUrl: SLACK_URL },
      pagerduty: { routingKey: ROUTING_KEY, url: PD_URL },
      webhook: { url: WEBHOOK_URL, secret: 'whsec_0123456789abcdef' },
      repeatMs: 60 * MIN,
    },
    clock: () => now,
    logger: silentLogger(),
    fetch: async (url, init) => {
      sent.push({ url: String(url), body: JSON.parse(String(init?.body)) as Record<string, unknown> });
      return new Response('ok', { status: 200 });
    },
  });
}
const counts = (c: Partial<Record<Category, number>> = {}) => ({ ...emptyCounts(), ...c });
const notify = (
  lag: LagStatus | undefined,
  open: Partial<Record<Category, number>> = {},
  extra: { lagOnly?: boolean } = {},
) =>
  alerter().notify({
    runId: 'run_x',
    account: ACCOUNT,
    openByCategory: counts(open),
    oldestOpenAt: null,
    ...(lag ? { lag } : {}),
    ...extra,
  });
const to = (url: string) => sent.filter((s) => s.url === url).map((s) => s.body);

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  sent = [];
  now = T0;
  await db.pool.query('DELETE FROM alert_state');
});

describe('reconciliation_lag', () => {
  it('fires (critical, its own dedup key) when a lag passes the limit with nothing open, repeats, and resolves', async () => {
    await notify(behind);
    expect(to(PD_URL)).toEqual([
      expect.objectContaining({
        event_action: 'trigger',
        dedup_key: `sweeper:${ACCOUNT}:reconciliation_lag`,
        payload: expect.objectContaining({
          severity: 'critical',
          class: LAG_ALERT,
          summary: `sweeper: reconciliation of account ${ACCOUNT} is behind: watermark 3h 5m behind, events 10m behind (limit 2h)`,
          custom_details: expect.objectContaining({
            watermark_lag_seconds: 11_100,
            events_lag_seconds: 600,
            max_lag_seconds: 7200,
            unreconciled: 0,
          }),
        }),
      }),
    ]);
    expect(String(to(SLACK_URL)[0]?.text)).toMatch(
      /^sweeper: reconciliation of account acct_lag1 is behind .*\n• reconciliation lag \(critical, new\): watermark 3h 5m behind/,
    );
    expect(to(WEBHOOK_URL)[0]).toMatchObject({
      event: 'reconciliation.lagging',
      unreconciled: 0,
      lag: { lagging: true, watermark_lag_seconds: 11_100 },
    });
    // Never a finding category: the webhook's fixed findings shape does not have it.
    expect(Object.keys(to(WEBHOOK_URL)[0]?.findings as object)).not.toContain(LAG_ALERT);

    sent = [];
    now = new Date(T0.getTime() + 10 * MIN);
    await notify(behind);
    expect(sent).toEqual([]); // unchanged inside the repeat interval

    now = new Date(T0.getTime() + 61 * MIN);
    await notify(behind);
    expect(to(PD_URL).map((e) => e.event_action)).toEqual(['trigger']); // repeated

    sent = [];
    await notify(caughtUp);
    expect(to(PD_URL)).toEqual([
      { routing_key: ROUTING_KEY, event_action: 'resolve', dedup_key: `sweeper:${ACCOUNT}:reconciliation_lag` },
    ]);
    expect(String(to(SLACK_URL)[0]?.text)).toContain('• reconciliation lag: caught up (resolved)');
    expect(to(WEBHOOK_URL)[0]).toMatchObject({ event: 'findings.resolved', lag: { lagging: false } });
  });

  it('without lag figures it is left alone: neither fired nor resolved', async () => {
    await notify(behind);
    sent = [];
    await notify(undefined);
    expect(sent).toEqual([]);
    const { rows } = await db.pool.query(`SELECT category, last_count FROM alert_state WHERE sink = 'pagerduty'`);
    expect(rows).toEqual([{ category: LAG_ALERT, last_count: 1 }]);
  });

  it('beside open findings: each has its own incident, and the findings headline stays', async () => {
    await notify(behind, { lost_effect: 2 });
    expect(
      to(PD_URL)
        .map((e) => e.dedup_key)
        .sort(),
    ).toEqual([`sweeper:${ACCOUNT}:lost_effect`, `sweeper:${ACCOUNT}:reconciliation_lag`]);
    expect(String(to(SLACK_URL)[0]?.text)).toMatch(
      /^sweeper: 2 unreconciled findings on account acct_lag1 \(2 critical\); reconciliation is behind\n/,
    );
    expect(to(WEBHOOK_URL)[0]).toMatchObject({
      event: 'findings.open',
      unreconciled: 2,
      findings: expect.objectContaining({ lost_effect: 2 }),
    });
  });

  it('lagOnly (an account whose run failed) alerts on the lag alone, leaving the findings’ alerts as they were', async () => {
    await notify(behind, { lost_effect: 1 }, { lagOnly: true });
    expect(to(PD_URL).map((e) => e.dedup_key)).toEqual([`sweeper:${ACCOUNT}:reconciliation_lag`]);
    const { rows } = await db.pool.query(`SELECT category FROM alert_state WHERE sink = 'pagerduty'`);
    expect(rows).toEqual([{ category: LAG_ALERT }]);
  });

  it('webhook bodies without lag figures keep their old shape', () => {
    const body = webhookBody(
      { runId: 'r', account: ACCOUNT, now: T0, counts: counts(), unreconciled: 0, oldestOpenAt: null, changes: [] },
      T0,
    );
    expect(body).not.toHaveProperty('lag');
    expect(body.event).toBe('findings.resolved');
  });
});
