import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { runCli, type CliResult } from '../support/cli.js';
import { createTestDatabase, onServer, type TestDatabase } from '../support/db.js';
import { startHostileUpstream, type HostileUpstream } from '../support/hostile-upstream.js';

/**
 * Every secret set to a recognisable value, every upstream echoing them back in its
 * errors (Stripe's 401 quotes the key; each alert sink and the Pushgateway answer 500
 * quoting the URL, headers and body they got), then every byte that left the process or
 * was stored is searched: stdout, stderr, report files, what the sinks received, and
 * every text and jsonb column of every table. Zero occurrences.
 */
const SECRETS = {
  stripeKey: 'sk_test_SEKRETstripeKEY0001',
  dbPassword: 'SEKRETdbPASS0002',
  webhookSecret: 'whsec_SEKRETwebhook0003',
  routingKey: 'SEKRETroutingKEY0004',
  slackPath: 'SEKRETslackPATH0005',
  pushPassword: 'SEKRETpushPASS0006',
};
// A role of the test's own whose password is the secret: a server that checks passwords
// (the throwaway one `npm test` starts) then needs it, and a trusting one (CI's) ignores it.
const ROLE = `sweeper_secrets_${process.pid}_${Date.now().toString(36)}`;
const NEEDLES = [...Object.values(SECRETS), Buffer.from(`ops:${SECRETS.pushPassword}`).toString('base64')];

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let double: StripeDouble;
let proxy: HostileUpstream;
let sinks: Server;
let sinkUrl: string;
let db: TestDatabase;
let dir: string;
const received: Received[] = [];
const outputs: CliResult[] = [];

beforeAll(async () => {
  double = await startStripeDouble();
  proxy = await startHostileUpstream(double.url);
  // Every sink fails, quoting everything it was sent: the worst an error message can hold.
  sinks = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`cannot deliver to ${req.url} (auth ${req.headers.authorization ?? '-'}): ${body.slice(0, 150)}`);
    });
  });
  await new Promise<void>((resolve) => sinks.listen(0, '127.0.0.1', resolve));
  sinkUrl = `http://127.0.0.1:${(sinks.address() as AddressInfo).port}`;
  db = await createTestDatabase();
  await onServer(`CREATE ROLE ${ROLE} LOGIN SUPERUSER PASSWORD '${SECRETS.dbPassword}'`);
  dir = await mkdtemp(path.join(tmpdir(), 'sweeper-secrets-'));
  // Something to find, so that alerts go out.
  double.createCharge(null, { created: new Date(Date.now() - 40 * 60_000), amount: 4242 });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await db.drop();
  // What the role owned went with the database.
  await onServer(`DROP ROLE IF EXISTS ${ROLE}`);
  await new Promise<void>((resolve) => {
    sinks.closeAllConnections();
    sinks.close(() => resolve());
  });
  await proxy.close();
  await double.close();
});

function env(): Record<string, string> {
  const url = new URL(db.url);
  url.username = ROLE;
  url.password = SECRETS.dbPassword;
  const push = new URL(sinkUrl);
  push.username = 'ops';
  push.password = SECRETS.pushPassword;
  return {
    DATABASE_URL: url.toString(),
    STRIPE_API_KEY: SECRETS.stripeKey,
    STRIPE_API_BASE: proxy.url,
    SWEEPER_SLACK_WEBHOOK_URL: `${sinkUrl}/services/T000/B000/${SECRETS.slackPath}`,
    SWEEPER_PAGERDUTY_ROUTING_KEY: SECRETS.routingKey,
    SWEEPER_PAGERDUTY_URL: `${sinkUrl}/pagerduty`,
    SWEEPER_WEBHOOK_URL: `${sinkUrl}/hook`,
    SWEEPER_WEBHOOK_SECRET: SECRETS.webhookSecret,
    SWEEPER_PUSHGATEWAY_URL: push.toString(),
    SWEEPER_LOG_LEVEL: 'debug',
    SWEEPER_FIRST_RUN_LOOKBACK: '2h',
  };
}

async function cli(args: string[], extra: Record<string, string> = {}): Promise<CliResult> {
  const result = await runCli(args, { ...env(), ...extra });
  outputs.push(result);
  return result;
}

/** Every value of every text, varchar, char, json and jsonb column of every table. */
async function databaseText(): Promise<string> {
  const { rows: columns } = await db.pool.query<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')`,
  );
  const parts: string[] = [];
  for (const { table_name, column_name } of columns) {
    const { rows } = await db.pool.query<{ v: string | null }>(
      `SELECT "${column_name}"::text AS v FROM "${table_name}"`,
    );
    for (const row of rows) if (row.v !== null) parts.push(row.v);
  }
  return parts.join('\n');
}

/** What the sinks received, minus what their protocol must carry: PagerDuty's routing key, the Pushgateway's Basic auth. */
function sentToSinks(): string {
  return received
    .map((r) => {
      let body = r.body;
      if (r.path.startsWith('/pagerduty')) {
        const event = JSON.parse(body) as Record<string, unknown>;
        expect(event.routing_key).toBe(SECRETS.routingKey);
        delete event.routing_key;
        body = JSON.stringify(event);
      }
      const headers = { ...r.headers };
      delete headers.authorization;
      return `${JSON.stringify(headers)}\n${body}`;
    })
    .join('\n');
}

describe('secrets never leave the process or reach the database', () => {
  it('after runs whose every upstream echoes them, no output, file, payload or column holds one', async () => {
    const first = await cli(['run', '--json']);
    // The findings are committed and printed; the sinks all failed, so the run failed.
    expect(first.code, first.stderr).toBe(1);
    expect(first.stdout).toContain('"unattributed_charge":1');
    expect(received.map((r) => r.path.split('/')[1])).toEqual(
      expect.arrayContaining(['services', 'pagerduty', 'hook', 'metrics']),
    );
    await cli(['run']);

    proxy.mode = 'echo-key-401';
    const rejected = await cli(['run', '--json']);
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toMatch(/Stripe rejected the API key \(401\)/);
    proxy.mode = 'pass';

    const csv = path.join(dir, 'findings.csv');
    expect((await cli(['report', '--format', 'csv', '--out', csv])).code).toBe(0);
    await cli(['report', '--format', 'json']);
    await cli(['status']);
    await cli(['status', '--json']);
    const missing = new URL(env().DATABASE_URL as string);
    missing.pathname = '/no_such_database_k7q';
    const unreachable = await cli(['status'], { DATABASE_URL: missing.toString() });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/does not exist/);

    // The upstreams did echo them: the test is not vacuous.
    const echoed = received.map((r) => `${r.path} ${r.headers.authorization ?? ''} ${r.body}`).join('\n');
    expect(echoed).toContain(SECRETS.slackPath);
    expect(echoed).toContain(SECRETS.routingKey);

    const stderr = outputs.map((o) => o.stderr).join('\n');
    expect(stderr.length).toBeGreaterThan(1_000); // debug logs: plenty of text to leak into
    const haystacks: Record<string, string> = {
      stdout: outputs.map((o) => o.stdout).join('\n'),
      stderr,
      report: await readFile(csv, 'utf8'),
      sinks: sentToSinks(),
      database: await databaseText(),
    };
    for (const [where, text] of Object.entries(haystacks)) {
      for (const secret of NEEDLES) expect(text.includes(secret), `${secret} in ${where}`).toBe(false);
    }
  });
});
