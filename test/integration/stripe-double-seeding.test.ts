import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { STRIPE_DOUBLE_BIN } from '../support/cli.js';
import { atDepth } from '../support/depth.js';

/**
 * Bulk seeding of the double from data (testkit/stripe-double/README.md "Bulk seeding"):
 * `POST /_double/charges` and `--charges FILE` of the standalone double, through HTTP and
 * the real SDK. `npm run test:deep` seeds 60,000 charges, the size that made people write
 * seeding scripts; `npm test` 6,000 (six pages of connected-account charges).
 */

const N = atDepth({ normal: 6_000, deep: 60_000 });
const DAY = 86_400;
const FROM = Math.floor(Date.parse('2026-11-01T00:00:00Z') / 1000);

/** N charges over three days, JSON lines: every tenth on a connected account, every other one attributed. */
function chargeLines(n: number, prefix: string): string {
  const lines = new Array<string>(n);
  for (let i = 0; i < n; i += 1) {
    lines[i] = JSON.stringify({
      id: `ch_${prefix}${i.toString().padStart(8, '0')}`,
      ...(i % 10 === 0 ? { account: 'acct_seeded' } : {}),
      created: FROM + Math.floor((i * 3 * DAY) / n),
      amount: 500 + (i % 977),
      currency: 'usd',
      ...(i % 2 === 0 ? { metadata: { tenant_id: 'acme', idempotency_key: `order-${i}` } } : {}),
    });
  }
  return `${lines.join('\n')}\n`;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sweeper-seed-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('POST /_double/charges', () => {
  let double: StripeDouble;
  beforeAll(async () => {
    double = await startStripeDouble();
    // The double forgets events after 30 days on its clock: the dated charges' events must
    // stay listable whatever day the suite runs (on the wall clock this test broke 30 days on).
    double.clock.set(new Date((FROM + 7 * DAY) * 1000));
  });
  afterAll(async () => {
    await double.close();
  });

  it(`takes ${N.toLocaleString('en')} charges of JSON lines in one request; the SDK lists and retrieves them`, async () => {
    const body = chargeLines(N, 'http');
    const started = performance.now();
    const response = await fetch(`${double.url}/_double/charges`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-ndjson' },
      body,
    });
    const ms = performance.now() - started;
    console.log(`POST /_double/charges: ${N} charges (${(body.length / 1e6).toFixed(1)} MB) in ${ms.toFixed(0)} ms`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      count: N,
      accounts: { platform: N - N / 10, acct_seeded: N / 10 },
      from: FROM,
      to: expect.any(Number),
    });
    expect(double.chargeCount(null)).toBe(N - N / 10);
    expect(double.chargeCount('acct_seeded')).toBe(N / 10);

    const stripe = createStripeClient({ apiKey: 'sk_test_seeded', apiBase: double.url, maxNetworkRetries: 0 });
    const one = await stripe.charges.retrieve('ch_http00000002');
    expect(one).toMatchObject({
      amount: 502,
      currency: 'usd',
      status: 'succeeded',
      captured: true,
      metadata: { tenant_id: 'acme', idempotency_key: 'order-2' },
    });
    // Every connected-account charge, through the SDK's own pagination: N / 1,000 pages, newest first.
    const listed: string[] = [];
    for await (const charge of stripe.charges.list({ limit: 100 }, { stripeAccount: 'acct_seeded' }))
      listed.push(charge.id);
    expect(listed).toHaveLength(N / 10);
    expect(listed[0]).toBe(`ch_http${(N - 10).toString().padStart(8, '0')}`);
    expect(listed.at(-1)).toBe('ch_http00000000');
    const firstDay = await stripe.charges.list({ created: { gte: FROM, lt: FROM + DAY }, limit: 100 });
    expect(firstDay.has_more).toBe(true);
    expect(firstDay.data.every((c) => c.created >= FROM && c.created < FROM + DAY)).toBe(true);
  });

  it('takes CSV (metadata.<key> columns) and, with ?events=true, stores the creation events', async () => {
    const csv =
      'id,account,created,amount,currency,status,metadata.tenant_id,metadata.idempotency_key\n' +
      `ch_csv_1,,${FROM},1200,eur,succeeded,acme,k-1\n` +
      `ch_csv_2,acct_csv,2026-11-02T10:00:00Z,990,usd,failed,,\n`;
    const response = await fetch(`${double.url}/_double/charges?events=true`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/csv' },
      body: csv,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ count: 2, accounts: { platform: 1, acct_csv: 1 } });
    const stripe = createStripeClient({ apiKey: 'sk_test_seeded', apiBase: double.url, maxNetworkRetries: 0 });
    expect(await stripe.charges.retrieve('ch_csv_1')).toMatchObject({
      amount: 1200,
      currency: 'eur',
      metadata: { tenant_id: 'acme', idempotency_key: 'k-1' },
    });
    const declined = await stripe.charges.retrieve('ch_csv_2', {}, { stripeAccount: 'acct_csv' });
    expect(declined).toMatchObject({
      status: 'failed',
      captured: false,
      created: Date.parse('2026-11-02T10:00:00Z') / 1000,
      metadata: {},
    });
    const events = await stripe.events.list({ type: 'charge.*' }, { stripeAccount: 'acct_csv' });
    expect(events.data.map((e) => [e.type, (e.data.object as { id: string }).id])).toEqual([
      ['charge.failed', 'ch_csv_2'],
    ]);
  });

  it('refuses a bad line with a 400 naming it, and adds nothing (all or none)', async () => {
    const before = double.chargeCount();
    const body = `${JSON.stringify({ id: 'ch_ok_1', amount: 100 })}\n${JSON.stringify({ id: 'ch_bad', amount: -1 })}\n`;
    const response = await fetch(`${double.url}/_double/charges`, { method: 'POST', body });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /^line 2: amount must be a non-negative integer/,
    );
    const taken = await fetch(`${double.url}/_double/charges`, {
      method: 'POST',
      body: JSON.stringify([{ id: 'ch_csv_1', amount: 5 }]),
    });
    expect(taken.status).toBe(400);
    expect(((await taken.json()) as { error: { message: string } }).error.message).toBe(
      'charge 0: id ch_csv_1 already exists',
    );
    expect(double.chargeCount()).toBe(before);
  });
});

describe('sweeper-stripe-double --charges FILE', () => {
  function startDouble(args: string[]) {
    const child = spawn(process.execPath, [STRIPE_DOUBLE_BIN, '--port', '0', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return { child, stderr: () => stderr };
  }

  it(`seeds ${N.toLocaleString('en')} charges from a JSON lines file and more from a CSV file before it listens`, async () => {
    const jsonl = path.join(dir, 'charges.jsonl');
    const csv = path.join(dir, 'more.csv');
    await writeFile(jsonl, chargeLines(N, 'file'));
    await writeFile(csv, 'amount,created,metadata.tenant_id\n700,1762000000,beta\n800,1762000001,\n');
    const { child, stderr } = startDouble(['--charges', jsonl, '--charges', csv]);
    try {
      const [url] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const seeded = new RegExp(`${N} charges from ${jsonl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} in (\\d+) ms`).exec(
        stderr(),
      );
      expect(seeded, stderr()).not.toBeNull();
      console.log(`--charges: ${N} charges seeded in ${seeded?.[1]} ms (after reading and parsing the file)`);
      expect(stderr()).toMatch(/2 charges from .*more\.csv in \d+ ms \(\{"platform":2\}\)/);
      const stripe = createStripeClient({ apiKey: 'sk_test_seeded', apiBase: url, maxNetworkRetries: 0 });
      const listed: string[] = [];
      for await (const charge of stripe.charges.list({ limit: 100 }, { stripeAccount: 'acct_seeded' }))
        listed.push(charge.id);
      expect(listed).toHaveLength(N / 10);
      const fromCsv = await stripe.charges.list({ created: { gte: 1762000000, lt: 1762000002 } });
      expect(fromCsv.data.map((c) => [c.amount, c.metadata])).toEqual([
        [800, {}],
        [700, { tenant_id: 'beta' }],
      ]);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });

  it('exits 64 naming the file and line of a bad charge, without listening', async () => {
    const bad = path.join(dir, 'bad.jsonl');
    await writeFile(bad, `${JSON.stringify({ amount: 1 })}\n{"amount": "ten"}\n`);
    const { child, stderr } = startDouble(['--charges', bad]);
    const [code] = (await once(child, 'exit')) as [number];
    expect(code).toBe(64);
    expect(stderr()).toBe(
      `stripe double: ${bad}: line 2: amount must be a non-negative integer (the smallest currency unit)\n`,
    );
  });
});
