import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { silentLogger } from '../../src/log.js';
import type { MetricsInput } from '../../src/metrics/input.js';
import { readLastSuccessByAccount } from '../../src/metrics/last-success.js';
import { publishMetrics } from '../../src/metrics/publish.js';
import { emptyCounts } from '../../src/sweep/categories.js';
import { readStatus } from '../../src/sweep/status.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { seedClaim } from '../support/scenario.js';

/** From the database the sweep leaves behind to a textfile and a Pushgateway. */

const NOW = new Date('2026-11-10T12:00:00Z');
const ACCT = 'acct_1Nv0FGQ9RKHgCVdK';
const GATEWAY = 'http://pushgateway.example:9091';

let db: TestDatabase;
let dir: string;
let input: MetricsInput;

async function seed(): Promise<void> {
  const q = db.pool;
  const runRow = (
    id: string,
    account: string,
    mode: string,
    status: string,
    started: string,
    finished: string | null,
  ) =>
    q.query(
      `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at, finished_at)
       VALUES ($1, $2, $3, '2026-11-09T00:00:00Z', '2026-11-10T11:00:00Z', $4, '2026-11-10T11:00:00Z', $5, $6)`,
      [id, mode, account, status, new Date(started), finished && new Date(finished)],
    );
  // platform: succeeded at 10:00, then failed at 11:00 — the metric must still show 10:00.
  await runRow('run_p1', 'platform', 'run', 'succeeded', '2026-11-10T09:59:00Z', '2026-11-10T10:00:00Z');
  await runRow('run_p2', 'platform', 'run', 'failed', '2026-11-10T10:59:00Z', '2026-11-10T11:00:00Z');
  await runRow('run_a1', ACCT, 'run', 'succeeded', '2026-11-10T11:29:00Z', '2026-11-10T11:30:00Z');
  await runRow('run_a2', ACCT, 'backfill', 'succeeded', '2026-11-10T11:40:00Z', '2026-11-10T11:45:00Z');
  await q.query(
    `INSERT INTO recon_watermarks (account, shard, watermark, run_id, updated_at) VALUES
       ('platform', '', '2026-11-10T09:50:00Z', 'run_p1', $1), ($2, '', '2026-11-10T11:20:00Z', 'run_a1', $1)`,
    [NOW, ACCT],
  );
  const finding = (category: string, account: string, subject: string, state: string) =>
    q.query(
      `INSERT INTO recon_findings (category, account, subject, state, first_seen_run, last_seen_run, first_seen_at, last_seen_at)
       VALUES ($1, $2, $3, $4, 'run_a1', 'run_a1', $5, $5)`,
      [category, account, subject, state, NOW],
    );
  await finding('duplicate_charge', ACCT, 'ch_1', 'open');
  await finding('stale_claim', ACCT, 'k1', 'open');
  await finding('stale_claim', ACCT, 'k2', 'open');
  await finding('orphan_charge', ACCT, 'ch_2', 'repaired');
  await ensureDayPartitions(q, { from: '2026-11-08', to: '2026-11-11' });
  await seedClaim(q, {
    tenantId: 'acme',
    key: 'old',
    status: 'completed',
    createdAt: new Date('2026-11-08T12:00:00Z'),
  });
  await seedClaim(q, {
    tenantId: 'acme',
    key: 'live',
    status: 'in_flight',
    createdAt: new Date('2026-11-10T11:59:00Z'),
  });
}

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(path.join(tmpdir(), 'sweeper-metrics-'));
  await seed();
  input = {
    reports: [
      {
        account: ACCT,
        mode: 'run',
        dry_run: false,
        status: 'succeeded',
        charges_scanned: 321,
        deferred_keys: 0,
        repaired: { ...emptyCounts(), orphan_charge: 1 },
        duration_ms: 2_250,
      },
    ],
    status: await readStatus(db.pool, NOW),
    stripe429s: 3,
    now: NOW,
    accounts: ['platform', ACCT],
    lastSuccessAt: await readLastSuccessByAccount(db.pool),
  };
  nock.disableNetConnect();
});
afterAll(async () => {
  nock.enableNetConnect();
  await rm(dir, { recursive: true, force: true });
  await db.drop();
});
afterEach(() => {
  const pending = nock.pendingMocks();
  nock.cleanAll();
  expect(pending).toEqual([]);
});

function sample(text: string, name: string, labels = ''): string | undefined {
  return text
    .split('\n')
    .find((l) => l.startsWith(`${name}${labels} `))
    ?.slice(`${name}${labels} `.length);
}

describe('textfile for node_exporter', () => {
  it('renders names, labels and values from the database and the run, replacing the file whole', async () => {
    const own = path.join(dir, 'textfile');
    await mkdir(own);
    const file = path.join(own, 'sweeper.prom');
    const result = await publishMetrics({ config: { file, pushgatewayUrl: undefined }, input, logger: silentLogger() });
    expect(result).toEqual({ written: true, pushed: false, errors: [] });
    const text = await readFile(file, 'utf8');

    expect(text).toContain('# TYPE sweeper_unreconciled gauge');
    expect(sample(text, 'sweeper_unreconciled', `{account="${ACCT}",category="duplicate_charge"}`)).toBe('1');
    expect(sample(text, 'sweeper_unreconciled', `{account="${ACCT}",category="stale_claim"}`)).toBe('2');
    expect(sample(text, 'sweeper_unreconciled', `{account="${ACCT}",category="orphan_charge"}`)).toBe('0');
    expect(sample(text, 'sweeper_unreconciled', '{account="platform",category="stale_claim"}')).toBe('0');
    expect(sample(text, 'sweeper_repairs_last_run', `{account="${ACCT}",category="orphan_charge"}`)).toBe('1');
    expect(sample(text, 'sweeper_charges_scanned_last_run', `{account="${ACCT}"}`)).toBe('321');
    expect(sample(text, 'sweeper_run_duration_seconds', `{account="${ACCT}"}`)).toBe('2.25');
    expect(sample(text, 'sweeper_deferred_keys_last_run', `{account="${ACCT}"}`)).toBe('0');
    expect(sample(text, 'sweeper_stripe_rate_limited_last_run')).toBe('3');
    expect(sample(text, 'sweeper_last_success_timestamp_seconds', '{account="platform"}')).toBe(
      String(Date.parse('2026-11-10T10:00:00Z') / 1000),
    );
    expect(sample(text, 'sweeper_last_success_timestamp_seconds', `{account="${ACCT}"}`)).toBe(
      String(NOW.getTime() / 1000),
    );
    expect(sample(text, 'sweeper_watermark_lag_seconds', '{account="platform"}')).toBe('7800');
    expect(sample(text, 'sweeper_watermark_lag_seconds', `{account="${ACCT}"}`)).toBe('2400');
    expect(sample(text, 'sweeper_claim_store_size')).toBe('2');
    expect(sample(text, 'sweeper_claim_store_in_flight')).toBe('1');
    expect(sample(text, 'sweeper_claim_store_oldest_age_seconds')).toBe('172800');

    // A second write replaces the file and leaves no temporary file for the collector to trip on.
    await publishMetrics({
      config: { file, pushgatewayUrl: undefined },
      input: { ...input, stripe429s: 9 },
      logger: silentLogger(),
    });
    expect(sample(await readFile(file, 'utf8'), 'sweeper_stripe_rate_limited_last_run')).toBe('9');
    expect(await readdir(own)).toEqual(['sweeper.prom']);
  });

  it('returns, not throws, a file it cannot write', async () => {
    const file = path.join(dir, 'no-such-dir', 'sweeper.prom');
    const result = await publishMetrics({ config: { file, pushgatewayUrl: undefined }, input, logger: silentLogger() });
    expect(result.written).toBe(false);
    expect(result.errors).toEqual([expect.stringMatching(/^metrics file .*sweeper\.prom: ENOENT/)]);
  });
});

describe('pushgateway', () => {
  it('PUTs the exposition text under job "sweeper"', async () => {
    const file = path.join(dir, 'expected.prom');
    await publishMetrics({ config: { file, pushgatewayUrl: undefined }, input, logger: silentLogger() });
    const expected = await readFile(file, 'utf8');

    const bodies: string[] = [];
    nock(GATEWAY)
      .put('/metrics/job/sweeper', (body: string) => bodies.push(body) > 0)
      .matchHeader('content-type', 'text/plain; version=0.0.4; charset=utf-8')
      .reply(200, '');
    const result = await publishMetrics({
      config: { file: undefined, pushgatewayUrl: GATEWAY },
      input,
      logger: silentLogger(),
    });
    expect(result).toEqual({ written: false, pushed: true, errors: [] });
    expect(bodies).toEqual([expected]);
  });

  it('sends grouping labels and basic auth, and returns a refusal without the credentials', async () => {
    nock(GATEWAY)
      // "shard@base64/MC80": the gateway's escape for a value with a slash; prom-client
      // percent-encodes the @, which the gateway decodes.
      .put('/metrics/job/sweeper/shard%40base64/MC80')
      .matchHeader('authorization', `Basic ${Buffer.from('ops:s3cret').toString('base64')}`)
      .reply(503, 'overloaded');
    const result = await publishMetrics({
      config: { file: undefined, pushgatewayUrl: 'http://ops:s3cret@pushgateway.example:9091' },
      input,
      logger: silentLogger(),
      grouping: { shard: '0/4' },
    });
    expect(result).toEqual({
      written: false,
      pushed: false,
      errors: ['metrics push: Pushgateway answered HTTP 503: overloaded'],
    });
  });
});
