import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import { runCli, type CliResult } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { seedClaim, seedEffect } from '../support/scenario.js';

/**
 * docs/judgement.md "Duplicate payments for one order" through the CLI against the Stripe
 * double: an order paid twice under two keys, days apart and in two runs; a person's
 * verdict that sticks; a third payment that raises the group again; and the alerts:
 * PagerDuty pages for duplicate_effect, while suspected_duplicate reaches Slack only.
 */

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const T0 = Math.floor(Date.now() / HOUR) * HOUR;
const ago = (ms: number) => new Date(T0 - ms);

let double: StripeDouble;
let db: TestDatabase;
let sinks: Server;
let sinkUrl: string;
const received: Array<{ path: string; body: Record<string, unknown> }> = [];

beforeAll(async () => {
  double = await startStripeDouble();
  db = await createTestDatabase({ poolSize: 2 });
  await ensureDayPartitions(db.pool, { from: utcDay(ago(8 * DAY)), to: utcDay(ago(-DAY)) });
  sinks = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: JSON.parse(body) as Record<string, unknown> });
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"success"}');
    });
  });
  await new Promise<void>((resolve) => sinks.listen(0, '127.0.0.1', resolve));
  sinkUrl = `http://127.0.0.1:${(sinks.address() as { port: number }).port}`;
});
afterAll(async () => {
  await db.drop();
  await double.close();
  await new Promise<void>((resolve) => sinks.close(() => resolve()));
});

const env = () => ({
  DATABASE_URL: db.url,
  STRIPE_API_KEY: 'sk_test_duplicates',
  STRIPE_API_BASE: double.url,
  SWEEPER_LOG_LEVEL: 'warn',
  SWEEPER_SLACK_WEBHOOK_URL: `${sinkUrl}/slack`,
  SWEEPER_PAGERDUTY_ROUTING_KEY: 'R0UTINGKEY0000000000000000000000',
  SWEEPER_PAGERDUTY_URL: `${sinkUrl}/pagerduty`,
});
const backfill = async (from: Date, to: Date): Promise<CliResult & { report: Record<string, unknown> }> => {
  const result = await runCli(
    ['backfill', '--from', from.toISOString(), '--to', to.toISOString(), '--json', '--no-resume'],
    env(),
  );
  return { ...result, report: JSON.parse(result.stdout.trim().split('\n')[0] ?? '{}') as Record<string, unknown> };
};
const rows = async (sql: string, args: unknown[] = []) => (await db.pool.query(sql, args)).rows;

/** A payment for order-9 of tenant shop, made through the library under its own key: claim, row and charge agree. */
async function paid(key: string, at: Date, metadata: Record<string, string> = { order_id: 'order-9' }) {
  const c = double.createCharge(null, {
    created: at,
    amount: 2500,
    customer: 'cus_Shopper1',
    metadata: { tenant_id: 'shop', idempotency_key: key, ...metadata },
    events: false,
  });
  await seedClaim(db.pool, {
    tenantId: 'shop',
    key,
    status: 'completed',
    createdAt: at,
    responseCharge: c.id,
    amount: 2500,
  });
  await seedEffect(db.pool, { chargeId: c.id, tenantId: 'shop', key, amount: 2500, createdAt: at });
  return c.id;
}

describe('an order paid twice under two keys, through the CLI', () => {
  const firstDay = [ago(4 * DAY + HOUR), ago(4 * DAY - HOUR)] as const;
  const lastDay = [ago(DAY + HOUR), ago(DAY - HOUR)] as const;
  const ids: string[] = [];

  it('the first payment alone is matched; the second, three days later in another run, raises duplicate_effect and pages', async () => {
    ids.push(await paid('checkout-attempt-1', ago(4 * DAY)));
    const first = await backfill(...firstDay);
    expect(first.code, first.stderr).toBe(0);
    ids.push(await paid('checkout-attempt-2', ago(DAY)));
    // And a charge nobody can attribute, for the verdict's refusal below.
    double.createCharge(null, { created: ago(DAY - 10 * MIN), amount: 100, events: false });
    received.length = 0;
    const second = await backfill(...lastDay);
    expect(second.code, second.stderr).toBe(3);
    expect(second.report).toMatchObject({ findings: { duplicate_effect: 1 } });
    expect(
      await rows(
        `SELECT state, charge_id, details->'extras' AS extras FROM recon_findings WHERE category = 'duplicate_effect'`,
      ),
    ).toEqual([{ state: 'open', charge_id: ids[0], extras: [ids[1]] }]);
    const pages = received.filter((r) => r.path === '/pagerduty').map((r) => r.body);
    expect(pages).toContainEqual(
      expect.objectContaining({
        event_action: 'trigger',
        payload: expect.objectContaining({ class: 'duplicate_effect', severity: 'critical' }),
      }),
    );
    expect(received.some((r) => r.path === '/slack' && JSON.stringify(r.body).includes('duplicate_effect'))).toBe(true);
  });

  it("a person's not-a-duplicate sticks; a third payment for the order raises it again, naming all three", async () => {
    const [{ id }] = await rows(`SELECT id FROM recon_findings WHERE category = 'duplicate_effect'`);
    const [{ id: unattributed }] = await rows(`SELECT id FROM recon_findings WHERE category = 'unattributed_charge'`);
    const wrong = await runCli(['resolve', String(unattributed), '--not-duplicate', '--note', 'x'], env());
    expect(wrong.code).toBe(64);
    expect(wrong.stderr).toMatch(/--not-duplicate is for duplicate_effect and suspected_duplicate findings/);
    expect(await rows(`SELECT state FROM recon_findings WHERE id = $1`, [unattributed])).toEqual([{ state: 'open' }]);
    const resolved = await runCli(['resolve', String(id), '--not-duplicate', '--note', 'two orders by design'], env());
    expect(resolved.code, resolved.stderr).toBe(0);
    const again = await backfill(...lastDay);
    expect(again.report).toMatchObject({ findings: { duplicate_effect: 0 } });
    expect(await rows(`SELECT state FROM recon_findings WHERE category = 'duplicate_effect'`)).toEqual([
      { state: 'resolved' },
    ]);

    ids.push(await paid('checkout-attempt-3', ago(DAY - 30 * MIN)));
    const third = await backfill(...lastDay);
    expect(third.code).toBe(3);
    const open = await rows(
      `SELECT details->'extras' AS extras FROM recon_findings WHERE category = 'duplicate_effect' AND state = 'open'`,
    );
    expect(open).toEqual([{ extras: [ids[1], ids[2]] }]);
  });
});

describe('a suspected duplicate alerts but never pages', () => {
  it('one customer pays the same amount twice, minutes apart, with no order to tell: Slack hears of it, PagerDuty does not', async () => {
    await paid('no-order-1', ago(6 * HOUR), {});
    await paid('no-order-2', ago(6 * HOUR - 3 * MIN), {});
    received.length = 0;
    const result = await backfill(ago(7 * HOUR), ago(5 * HOUR));
    expect(result.report).toMatchObject({ findings: { suspected_duplicate: 1 } });
    expect(received.some((r) => r.path === '/slack' && JSON.stringify(r.body).includes('suspected_duplicate'))).toBe(
      true,
    );
    const classes = received
      .filter((r) => r.path === '/pagerduty')
      .map((r) => (r.body.payload as { class?: string } | undefined)?.class);
    expect(classes).not.toContain('suspected_duplicate');
  });
});
