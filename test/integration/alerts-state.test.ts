import { Writable } from 'node:stream';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAlerter } from '../../src/alerts/alerter.js';
import type { AlertConfig } from '../../src/alerts/config.js';
import { createLogger, silentLogger, type Logger } from '../../src/log.js';
import { emptyCounts, type Category } from '../../src/sweep/categories.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/** When alerts fire, repeat, resolve and retry: the state kept per (sink, account, category). */

const T0 = new Date('2026-11-10T12:00:00Z');
const MIN = 60_000;
const ACCOUNT = 'acct_1Nv0FGQ9RKHgCVdK';
const SLACK_ORIGIN = 'https://hooks.slack.com';
const SLACK_PATH = '/services/T000/B000/slacksecrettoken';
const SLACK_URL = `${SLACK_ORIGIN}${SLACK_PATH}`;
const PD_ORIGIN = 'https://events.pagerduty.com';
const ROUTING_KEY = 'R0UT1NGKEY0123456789abcdefABCDEF';
const SECRET = 'whsec_0123456789abcdef';

const SLACK = { slack: { webhookUrl: SLACK_URL } };
const PAGERDUTY = { pagerduty: { routingKey: ROUTING_KEY, url: `${PD_ORIGIN}/v2/enqueue` } };

let db: TestDatabase;
let now: Date;
const clock = () => now;

function open(counts: Partial<Record<Category, number>>): Record<Category, number> {
  return { ...emptyCounts(), ...counts };
}

function alerter(
  sinks: Partial<AlertConfig>,
  options: { fetch?: typeof fetch; logger?: Logger; timeoutMs?: number } = {},
) {
  return createAlerter({
    pool: db.pool,
    config: { slack: undefined, pagerduty: undefined, webhook: undefined, repeatMs: 60 * MIN, ...sinks },
    clock,
    logger: options.logger ?? silentLogger(),
    fetch: options.fetch,
    timeoutMs: options.timeoutMs,
  });
}

const run = (a: ReturnType<typeof alerter>, runId: string, counts: Partial<Record<Category, number>>) =>
  a.notify({
    runId,
    account: ACCOUNT,
    openByCategory: open(counts),
    oldestOpenAt: Object.keys(counts).length ? T0 : null,
  });

function slackCalls(status = 200): { texts: string[] } {
  const texts: string[] = [];
  nock(SLACK_ORIGIN)
    .post(SLACK_PATH, (body: { text: string }) => texts.push(body.text) > 0)
    .reply(status, status === 200 ? 'ok' : 'no_service');
  return { texts };
}

async function state(): Promise<Array<{ sink: string; category: string; last_count: number; last_sent_at: Date }>> {
  const { rows } = await db.pool.query(
    'SELECT sink, category, last_count, last_sent_at FROM alert_state ORDER BY sink, category',
  );
  return rows;
}

beforeAll(async () => {
  db = await createTestDatabase();
  nock.disableNetConnect();
});
afterAll(async () => {
  nock.enableNetConnect();
  await db.drop();
});
beforeEach(async () => {
  now = T0;
  await db.pool.query('TRUNCATE alert_state');
});
afterEach(() => {
  const pending = nock.pendingMocks();
  nock.cleanAll();
  expect(pending).toEqual([]);
});

describe('pagerduty dedup and resolve', () => {
  it('sends nothing at 0, triggers at 2, resolves with the same dedup_key at 0', async () => {
    const pd = alerter(PAGERDUTY);
    // Any request would fail (net connect is disabled) and show up in `failed`.
    expect(await run(pd, 'run_1', {})).toEqual({ sent: 0, failed: 0, errors: [] });

    const events: unknown[] = [];
    nock(PD_ORIGIN)
      .post('/v2/enqueue', (body) => events.push(body) > 0)
      .reply(202, {});
    now = new Date(T0.getTime() + 10 * MIN);
    expect(await run(pd, 'run_2', { duplicate_charge: 2 })).toEqual({ sent: 1, failed: 0, errors: [] });
    expect(events).toMatchObject([
      {
        routing_key: ROUTING_KEY,
        event_action: 'trigger',
        dedup_key: `sweeper:${ACCOUNT}:duplicate_charge`,
        payload: { severity: 'critical', source: 'sweeper', custom_details: { open: 2, run_id: 'run_2' } },
      },
    ]);

    events.length = 0;
    nock(PD_ORIGIN)
      .post('/v2/enqueue', (body) => events.push(body) > 0)
      .reply(202, {});
    now = new Date(T0.getTime() + 20 * MIN);
    expect(await run(pd, 'run_3', {})).toEqual({ sent: 1, failed: 0, errors: [] });
    expect(events).toEqual([
      { routing_key: ROUTING_KEY, event_action: 'resolve', dedup_key: `sweeper:${ACCOUNT}:duplicate_charge` },
    ]);

    // Resolved stays quiet.
    now = new Date(T0.getTime() + 200 * MIN);
    expect(await run(pd, 'run_4', {})).toEqual({ sent: 0, failed: 0, errors: [] });
    expect(await state()).toEqual([
      {
        sink: 'pagerduty',
        category: 'duplicate_charge',
        last_count: 0,
        last_sent_at: new Date(T0.getTime() + 20 * MIN),
      },
    ]);
  });

  it('re-triggers only the category that changed', async () => {
    const pd = alerter(PAGERDUTY);
    nock(PD_ORIGIN).post('/v2/enqueue').times(2).reply(202, {});
    await run(pd, 'run_1', { stale_claim: 1, lost_effect: 1 });

    const keys: string[] = [];
    nock(PD_ORIGIN)
      .post(
        '/v2/enqueue',
        (body: { dedup_key: string; event_action: string }) => keys.push(`${body.event_action} ${body.dedup_key}`) > 0,
      )
      .reply(202, {});
    now = new Date(T0.getTime() + 5 * MIN);
    expect(await run(pd, 'run_2', { stale_claim: 1, lost_effect: 3 })).toEqual({ sent: 1, failed: 0, errors: [] });
    expect(keys).toEqual([`trigger sweeper:${ACCOUNT}:lost_effect`]);
  });
});

describe('repeat interval', () => {
  it('does not repeat an unchanged alert inside the interval, repeats it after', async () => {
    const slack = alerter(SLACK);
    const first = slackCalls();
    expect(await run(slack, 'run_1', { stale_claim: 2 })).toEqual({ sent: 1, failed: 0, errors: [] });
    expect(first.texts[0]).toContain('• stale_claim: 2 (new)');

    now = new Date(T0.getTime() + 59 * MIN);
    expect(await run(slack, 'run_2', { stale_claim: 2 })).toEqual({ sent: 0, failed: 0, errors: [] });

    const repeat = slackCalls();
    now = new Date(T0.getTime() + 60 * MIN);
    expect(await run(slack, 'run_3', { stale_claim: 2 })).toEqual({ sent: 1, failed: 0, errors: [] });
    expect(repeat.texts[0]).toContain('• stale_claim: 2\n');

    // The repeat restarted the interval.
    now = new Date(T0.getTime() + 119 * MIN);
    expect(await run(slack, 'run_4', { stale_claim: 2 })).toEqual({ sent: 0, failed: 0, errors: [] });
  });

  it('sends a rise inside the interval at once; a fall is recorded quietly and becomes the new baseline', async () => {
    const slack = alerter(SLACK);
    slackCalls();
    await run(slack, 'run_1', { stale_claim: 3 });

    now = new Date(T0.getTime() + 5 * MIN);
    expect(await run(slack, 'run_2', { stale_claim: 1 })).toEqual({ sent: 0, failed: 0, errors: [] });
    expect(await state()).toEqual([{ sink: 'slack', category: 'stale_claim', last_count: 1, last_sent_at: T0 }]);

    const rise = slackCalls();
    now = new Date(T0.getTime() + 10 * MIN);
    expect(await run(slack, 'run_3', { stale_claim: 2 })).toEqual({ sent: 1, failed: 0, errors: [] });
    expect(rise.texts[0]).toContain('• stale_claim: 2 (up from 1)');
  });

  it('keeps the interval per sink: a new category on Slack re-sends the whole account', async () => {
    const slack = alerter(SLACK);
    slackCalls();
    await run(slack, 'run_1', { stale_claim: 2 });
    const next = slackCalls();
    now = new Date(T0.getTime() + 5 * MIN);
    expect(await run(slack, 'run_2', { stale_claim: 2, orphan_charge: 1 })).toEqual({ sent: 1, failed: 0, errors: [] });
    expect(next.texts[0]).toContain('• stale_claim: 2\n• orphan_charge: 1 (new)');
  });
});

describe('delivery failures', () => {
  it('counts a 500 as failed, keeps the state, and the next run retries', async () => {
    const slack = alerter(SLACK);
    slackCalls(500);
    expect(await run(slack, 'run_1', { lost_effect: 1 })).toEqual({
      sent: 0,
      failed: 1,
      errors: [`slack message for ${ACCOUNT}: HTTP 500: no_service`],
    });
    expect(await state()).toEqual([]);

    const retry = slackCalls();
    now = new Date(T0.getTime() + 1 * MIN);
    expect(await run(slack, 'run_2', { lost_effect: 1 })).toEqual({ sent: 1, failed: 0, errors: [] });
    expect(retry.texts[0]).toContain('• lost_effect: 1 (critical, new)');
    expect(await state()).toEqual([{ sink: 'slack', category: 'lost_effect', last_count: 1, last_sent_at: now }]);
  });

  it('counts a connection error as failed; a failed resolve is retried too', async () => {
    const pd = alerter(PAGERDUTY);
    nock(PD_ORIGIN).post('/v2/enqueue').reply(202, {});
    await run(pd, 'run_1', { amount_mismatch: 1 });

    nock(PD_ORIGIN).post('/v2/enqueue').replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
    now = new Date(T0.getTime() + 5 * MIN);
    const failed = await run(pd, 'run_2', {});
    expect(failed).toMatchObject({ sent: 0, failed: 1 });
    expect(failed.errors).toEqual([
      expect.stringMatching(
        /^pagerduty resolve amount_mismatch for acct_1Nv0FGQ9RKHgCVdK: network error: socket hang up/,
      ),
    ]);
    expect(await state()).toEqual([
      { sink: 'pagerduty', category: 'amount_mismatch', last_count: 1, last_sent_at: T0 },
    ]);

    const events: unknown[] = [];
    nock(PD_ORIGIN)
      .post('/v2/enqueue', (body) => events.push(body) > 0)
      .reply(202, {});
    now = new Date(T0.getTime() + 10 * MIN);
    expect(await run(pd, 'run_3', {})).toEqual({ sent: 1, failed: 0, errors: [] });
    expect(events).toEqual([
      { routing_key: ROUTING_KEY, event_action: 'resolve', dedup_key: `sweeper:${ACCOUNT}:amount_mismatch` },
    ]);
  });

  it('gives up on a sink that does not answer in time', async () => {
    // Answers only by failing when the delivery's own timeout aborts it.
    const hanging: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      });
    const slack = alerter(SLACK, { fetch: hanging, timeoutMs: 5 });
    expect(await run(slack, 'run_1', { stale_claim: 1 })).toEqual({
      sent: 0,
      failed: 1,
      errors: [`slack message for ${ACCOUNT}: no answer within 5 ms`],
    });
    expect(await state()).toEqual([]);
  });

  it('keeps each sink on its own: a Slack failure does not re-page PagerDuty', async () => {
    const both = alerter({ ...SLACK, ...PAGERDUTY });
    slackCalls(500);
    nock(PD_ORIGIN).post('/v2/enqueue').reply(202, {});
    expect(await run(both, 'run_1', { stale_claim: 1 })).toMatchObject({ sent: 1, failed: 1 });

    slackCalls();
    now = new Date(T0.getTime() + 5 * MIN);
    expect(await run(both, 'run_2', { stale_claim: 1 })).toEqual({ sent: 1, failed: 0, errors: [] });
  });

  it('never logs or returns the Slack URL, the routing key or the webhook secret', async () => {
    const chunks: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        chunks.push(chunk.toString());
        done();
      },
    });
    // A client whose error quotes everything it was given, as some do.
    const leaky: typeof fetch = async (input, init) => {
      throw new Error(
        `request to ${String(input)} failed; body ${String(init?.body)}; headers ${JSON.stringify(init?.headers)}`,
      );
    };
    const all = alerter(
      { ...SLACK, ...PAGERDUTY, webhook: { url: 'https://receiver.example/hooks', secret: SECRET } },
      { fetch: leaky, logger: createLogger({ destination, level: 'debug' }) },
    );
    const result = await run(all, 'run_1', { duplicate_charge: 1 });
    expect(result).toMatchObject({ sent: 0, failed: 3 });
    const output = `${chunks.join('')}\n${result.errors.join('\n')}`;
    expect(output).toContain('alert delivery failed');
    expect(output).toContain('[redacted]');
    for (const secret of ['slacksecrettoken', ROUTING_KEY, SECRET]) expect(output).not.toContain(secret);
  });
});
