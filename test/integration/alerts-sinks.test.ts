import nock from 'nock';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAlerter } from '../../src/alerts/alerter.js';
import type { AlertConfig } from '../../src/alerts/config.js';
import { readOpenFindings } from '../../src/alerts/open-findings.js';
import { verifySignature } from '../../src/alerts/signature.js';
import { silentLogger } from '../../src/log.js';
import { emptyCounts, type Category } from '../../src/sweep/categories.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/** Each sink's exact payload, on the wire, against nock. */

const NOW = new Date('2026-11-10T12:00:00Z');
const ACCOUNT = 'acct_1Nv0FGQ9RKHgCVdK';
const RUN = 'run_20261110T120000Z_abc123';
const SLACK_ORIGIN = 'https://hooks.slack.com';
const SLACK_PATH = '/services/T000/B000/slacksecrettoken';
const PD_ORIGIN = 'https://events.pagerduty.com';
const ROUTING_KEY = 'R0UT1NGKEY0123456789abcdefABCDEF';
const HOOK_ORIGIN = 'https://receiver.example';
const SECRET = 'whsec_0123456789abcdef';

const config = (sinks: Partial<AlertConfig>): AlertConfig => ({
  slack: undefined,
  pagerduty: undefined,
  webhook: undefined,
  repeatMs: 3_600_000,
  ...sinks,
});
const SLACK = { slack: { webhookUrl: `${SLACK_ORIGIN}${SLACK_PATH}` } };
const PAGERDUTY = { pagerduty: { routingKey: ROUTING_KEY, url: `${PD_ORIGIN}/v2/enqueue` } };
const WEBHOOK = { webhook: { url: `${HOOK_ORIGIN}/hooks/sweeper`, secret: SECRET } };

function open(counts: Partial<Record<Category, number>>): Record<Category, number> {
  return { ...emptyCounts(), ...counts };
}

/** The global fetch (which nock intercepts), keeping the raw bodies: signatures are over bytes. */
function recordingFetch(): { fetch: typeof fetch; bodies: string[] } {
  const bodies: string[] = [];
  return {
    bodies,
    fetch: (input, init) => {
      bodies.push(String(init?.body));
      return globalThis.fetch(input, init);
    },
  };
}

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  nock.disableNetConnect();
});
afterAll(async () => {
  nock.enableNetConnect();
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE alert_state');
});
afterEach(() => {
  const pending = nock.pendingMocks();
  nock.cleanAll();
  expect(pending).toEqual([]);
});

function alerter(sinks: Partial<AlertConfig>, fetch?: typeof globalThis.fetch) {
  return createAlerter({ pool: db.pool, config: config(sinks), clock: () => NOW, logger: silentLogger(), fetch });
}

describe('slack', () => {
  it('posts a readable summary: account, count, categories, oldest age, the command to run', async () => {
    const bodies: unknown[] = [];
    nock(SLACK_ORIGIN)
      .post(SLACK_PATH, (body) => bodies.push(body) > 0)
      .matchHeader('content-type', 'application/json')
      .reply(200, 'ok');

    const result = await alerter(SLACK).notify({
      runId: RUN,
      account: ACCOUNT,
      openByCategory: open({ stale_claim: 2, duplicate_charge: 1 }),
      oldestOpenAt: new Date('2026-11-10T09:55:00Z'),
    });

    expect(result).toEqual({ sent: 1, failed: 0, errors: [] });
    const text = [
      `sweeper: 3 unreconciled findings on account ${ACCOUNT} (1 critical)`,
      '• duplicate_charge: 1 (critical, new)',
      '• stale_claim: 2 (new)',
      'Oldest open finding: 2h 5m old (evidence dated 2026-11-10T09:55:00.000Z)',
      `Investigate: sweeper report --status open --account ${ACCOUNT}`,
      `Run ${RUN}`,
    ].join('\n');
    expect(bodies).toEqual([
      {
        text,
        blocks: [
          {
            type: 'section',
            text: { type: 'mrkdwn', text: `*sweeper: 3 unreconciled findings on account ${ACCOUNT} (1 critical)*` },
          },
          {
            type: 'section',
            text: {
              type: 'mrkdwn',
              text: '• duplicate_charge: 1 (critical, new)\n• stale_claim: 2 (new)\nOldest open finding: 2h 5m old (evidence dated 2026-11-10T09:55:00.000Z)',
            },
          },
          {
            type: 'section',
            text: { type: 'mrkdwn', text: `Investigate: \`sweeper report --status open --account ${ACCOUNT}\`` },
          },
          { type: 'context', elements: [{ type: 'mrkdwn', text: `Run ${RUN}` }] },
        ],
      },
    ]);
  });

  it('says when the account is reconciled again, and what was resolved', async () => {
    nock(SLACK_ORIGIN).post(SLACK_PATH).reply(200, 'ok');
    const slack = alerter(SLACK);
    await slack.notify({
      runId: 'run_1',
      account: ACCOUNT,
      openByCategory: open({ lost_effect: 2 }),
      oldestOpenAt: NOW,
    });

    const bodies: Array<{ text: string }> = [];
    nock(SLACK_ORIGIN)
      .post(SLACK_PATH, (body) => bodies.push(body) > 0)
      .reply(200, 'ok');
    expect(await slack.notify({ runId: RUN, account: ACCOUNT, openByCategory: open({}), oldestOpenAt: null })).toEqual({
      sent: 1,
      failed: 0,
      errors: [],
    });
    expect(bodies[0]?.text).toBe(
      [
        `sweeper: account ${ACCOUNT} is reconciled, no open findings`,
        '• lost_effect: 0 (resolved, was 2)',
        `Run ${RUN}`,
      ].join('\n'),
    );
  });
});

describe('pagerduty', () => {
  it('triggers one event per open category, dedup_key per account and category, severity by category', async () => {
    const events: Array<{ dedup_key: string }> = [];
    nock(PD_ORIGIN)
      .post('/v2/enqueue', (body) => events.push(body) > 0)
      .times(2)
      .reply(202, { status: 'success', message: 'Event processed', dedup_key: 'x' });

    const result = await alerter(PAGERDUTY).notify({
      runId: RUN,
      account: ACCOUNT,
      openByCategory: open({ stale_claim: 2, duplicate_charge: 1 }),
      oldestOpenAt: new Date('2026-11-10T09:55:00Z'),
    });

    expect(result).toEqual({ sent: 2, failed: 0, errors: [] });
    const details = {
      account: ACCOUNT,
      unreconciled: 3,
      findings: { stale_claim: 2, duplicate_charge: 1 },
      oldest_open_at: '2026-11-10T09:55:00.000Z',
      run_id: RUN,
      command: `sweeper report --status open --account ${ACCOUNT}`,
    };
    expect(events.sort((a, b) => a.dedup_key.localeCompare(b.dedup_key))).toEqual([
      {
        routing_key: ROUTING_KEY,
        event_action: 'trigger',
        dedup_key: `sweeper:${ACCOUNT}:duplicate_charge`,
        payload: {
          summary: `sweeper: 1 open duplicate_charge finding on account ${ACCOUNT}`,
          source: 'sweeper',
          severity: 'critical',
          component: ACCOUNT,
          group: 'payment-reconciliation',
          class: 'duplicate_charge',
          custom_details: { ...details, category: 'duplicate_charge', open: 1, previous: 0 },
        },
      },
      {
        routing_key: ROUTING_KEY,
        event_action: 'trigger',
        dedup_key: `sweeper:${ACCOUNT}:stale_claim`,
        payload: {
          summary: `sweeper: 2 open stale_claim findings on account ${ACCOUNT}`,
          source: 'sweeper',
          severity: 'warning',
          component: ACCOUNT,
          group: 'payment-reconciliation',
          class: 'stale_claim',
          custom_details: { ...details, category: 'stale_claim', open: 2, previous: 0 },
        },
      },
    ]);
  });
});

describe('generic webhook', () => {
  it('posts the documented body with a signature the receiver recipe verifies', async () => {
    const recorder = recordingFetch();
    const received: Array<{ headers: Record<string, unknown>; body: unknown }> = [];
    nock(HOOK_ORIGIN)
      .post('/hooks/sweeper')
      .reply(function (_uri, body) {
        received.push({ headers: { ...this.req.headers }, body });
        return [204, ''];
      });

    const result = await alerter(WEBHOOK, recorder.fetch).notify({
      runId: RUN,
      account: ACCOUNT,
      openByCategory: open({ amount_mismatch: 1, orphan_charge: 4 }),
      oldestOpenAt: new Date('2026-11-09T12:00:00Z'),
    });

    expect(result).toEqual({ sent: 1, failed: 0, errors: [] });
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request?.body).toEqual({
      event: 'findings.open',
      run_id: RUN,
      account: ACCOUNT,
      unreconciled: 5,
      findings: {
        claim_without_effect: 0,
        stale_claim: 0,
        lost_effect: 0,
        effect_without_claim: 0,
        orphan_charge: 4,
        unattributed_charge: 0,
        effect_without_charge: 0,
        amount_mismatch: 1,
        status_drift: 0,
        duplicate_charge: 0,
        duplicate_effect: 0,
        suspected_duplicate: 0,
        unstable_keys: 0,
        refund_without_effect: 0,
        refund_effect_without_refund: 0,
        refund_status_drift: 0,
        payout_mismatch: 0,
        unrecorded_balance_transaction: 0,
        unpaid_effect: 0,
      },
      oldest_open_at: '2026-11-09T12:00:00.000Z',
      sent_at: '2026-11-10T12:00:00.000Z',
    });
    const header = String(request?.headers['x-sweeper-signature']);
    const t = NOW.getTime() / 1000;
    expect(header).toMatch(new RegExp(`^t=${t},v1=[0-9a-f]{64}$`));
    const raw = recorder.bodies[0] ?? '';
    expect(JSON.parse(raw)).toEqual(request?.body);

    expect(verifySignature(SECRET, header, raw, { now: NOW })).toEqual({ valid: true, timestamp: t });
    expect(
      verifySignature(SECRET, header, raw.replace('"orphan_charge":4', '"orphan_charge":0'), { now: NOW }),
    ).toEqual({
      valid: false,
      reason: 'signature',
    });
    expect(verifySignature(SECRET, header, raw, { now: new Date(NOW.getTime() + 301_000) })).toEqual({
      valid: false,
      reason: 'timestamp',
    });
  });

  it('sends findings.resolved when the account is back to zero', async () => {
    nock(HOOK_ORIGIN).post('/hooks/sweeper').reply(200);
    const hook = alerter(WEBHOOK);
    await hook.notify({
      runId: 'run_1',
      account: ACCOUNT,
      openByCategory: open({ status_drift: 1 }),
      oldestOpenAt: NOW,
    });
    const bodies: Array<{ event: string; unreconciled: number }> = [];
    nock(HOOK_ORIGIN)
      .post('/hooks/sweeper', (body) => bodies.push(body) > 0)
      .reply(200);
    await hook.notify({ runId: RUN, account: ACCOUNT, openByCategory: open({}), oldestOpenAt: null });
    expect(bodies).toMatchObject([{ event: 'findings.resolved', unreconciled: 0, run_id: RUN }]);
  });
});

describe('several sinks at once', () => {
  it('delivers to each configured sink', async () => {
    nock(SLACK_ORIGIN).post(SLACK_PATH).reply(200, 'ok');
    nock(PD_ORIGIN).post('/v2/enqueue').reply(202, {});
    nock(HOOK_ORIGIN).post('/hooks/sweeper').reply(200);
    const all = alerter({ ...SLACK, ...PAGERDUTY, ...WEBHOOK });
    expect(all.sinks).toEqual(['slack', 'pagerduty', 'webhook']);
    expect(
      await all.notify({ runId: RUN, account: ACCOUNT, openByCategory: open({ lost_effect: 1 }), oldestOpenAt: NOW }),
    ).toEqual({
      sent: 3,
      failed: 0,
      errors: [],
    });
  });

  it('does nothing, and touches nothing, without sinks', async () => {
    const none = alerter({});
    expect(none.sinks).toEqual([]);
    expect(
      await none.notify({ runId: RUN, account: ACCOUNT, openByCategory: open({ lost_effect: 1 }), oldestOpenAt: NOW }),
    ).toEqual({
      sent: 0,
      failed: 0,
      errors: [],
    });
  });
});

describe('open findings from the database', () => {
  it('counts open findings per category for one account, and finds the oldest', async () => {
    await db.pool.query(
      `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at)
       VALUES ('run_seed', 'run', $1, $2, $3, 'succeeded', $3, $3)`,
      [ACCOUNT, new Date('2026-11-01Z'), NOW],
    );
    const finding = (category: string, account: string, subject: string, state: string, firstSeen: string) =>
      db.pool.query(
        `INSERT INTO recon_findings (category, account, subject, state, first_seen_run, last_seen_run, first_seen_at, last_seen_at)
         VALUES ($1, $2, $3, $4, 'run_seed', 'run_seed', $5, $5)`,
        [category, account, subject, state, new Date(firstSeen)],
      );
    await finding('stale_claim', ACCOUNT, 'a', 'open', '2026-11-09T10:00:00Z');
    await finding('stale_claim', ACCOUNT, 'b', 'open', '2026-11-10T10:00:00Z');
    await finding('lost_effect', ACCOUNT, 'c', 'open', '2026-11-08T10:00:00Z');
    await finding('orphan_charge', ACCOUNT, 'd', 'repaired', '2026-11-01T10:00:00Z');
    await finding('amount_mismatch', ACCOUNT, 'e', 'resolved', '2026-11-01T10:00:00Z');
    await finding('stale_claim', 'platform', 'f', 'open', '2026-11-01T10:00:00Z');

    expect(await readOpenFindings(db.pool, ACCOUNT)).toEqual({
      openByCategory: open({ stale_claim: 2, lost_effect: 1 }),
      oldestOpenAt: new Date('2026-11-08T10:00:00Z'),
    });
    expect(await readOpenFindings(db.pool, 'acct_nothing')).toEqual({ openByCategory: open({}), oldestOpenAt: null });

    const events: Array<{ dedup_key: string; event_action: string }> = [];
    nock(PD_ORIGIN)
      .post('/v2/enqueue', (body) => events.push(body) > 0)
      .times(2)
      .reply(202, {});
    expect(await alerter(PAGERDUTY).notifyAccount({ runId: RUN, account: ACCOUNT })).toEqual({
      sent: 2,
      failed: 0,
      errors: [],
    });
    expect(events.map((e) => `${e.event_action} ${e.dedup_key}`).sort()).toEqual([
      `trigger sweeper:${ACCOUNT}:lost_effect`,
      `trigger sweeper:${ACCOUNT}:stale_claim`,
    ]);
  });
});
