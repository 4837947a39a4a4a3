import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { MALFORMED_CHARGE_CATEGORY } from '../../src/sweep/categories.js';
import { cliEnv, runCli, sweeperLines, type CliResult } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import {
  POISON_KEY,
  POISONS,
  startHostileUpstream,
  type HostileMode,
  type HostileUpstream,
  type Poison,
} from '../support/hostile-upstream.js';

/**
 * `sweeper run` against a Stripe that misbehaves. A broken listing fails the run
 * (exit 1, one line naming the window and what was wrong) and the watermark stays
 * where it was; a poison charge becomes an open finding naming it and why, while the
 * rest of its slice commits and the watermark moves on (exit 3). No assertion on time:
 * every case must simply end, within vitest's timeout.
 */
const MINUTE = 60_000;
let double: StripeDouble;
let proxy: HostileUpstream;

function env(db: TestDatabase): Record<string, string> {
  return cliEnv(
    { db, stripe: proxy.url, key: 'sk_test_hostileUpstreamKey42' },
    {
      SWEEPER_SLICE: '1h',
      SWEEPER_FIRST_RUN_LOOKBACK: '2h',
      // Every run re-reads the last hour, so the charges made at the start are in every listing.
      SWEEPER_OVERLAP: '1h',
      SWEEPER_REQUEST_DEADLINE: '1s',
      SWEEPER_LOG_LEVEL: 'warn',
    },
  );
}

async function watermark(db: TestDatabase): Promise<Date | null> {
  const { rows } = await db.pool.query<{ watermark: Date }>(
    `SELECT watermark FROM recon_watermarks WHERE account = 'platform'`,
  );
  return rows[0]?.watermark ?? null;
}

/** The last `sweeper: …` line: what an operator reads. */
function verdict(result: CliResult): string {
  return sweeperLines(result.stderr).at(-1) ?? '';
}

beforeAll(async () => {
  double = await startStripeDouble();
  proxy = await startHostileUpstream(double.url, { dripMs: 300 });
});

afterAll(async () => {
  await proxy.close();
  await double.close();
});

describe('a broken listing fails the run and never moves the watermark', () => {
  let db: TestDatabase;
  let before: Date | null;

  beforeAll(async () => {
    db = await createTestDatabase();
    // Three charges in one second of the window: a listing cannot split them apart in time,
    // so pages of two must go through a cursor (slices are listed concurrently, each its own listing).
    const second = new Date(Math.floor((Date.now() - 40 * MINUTE) / 1000) * 1000);
    for (const amount of [740, 739, 738]) double.createCharge(null, { created: second, amount });
    proxy.mode = 'pass';
    const clean = await runCli(['run', '--json'], env(db));
    expect(clean.code, clean.stderr).toBe(3); // three unattributed charges
    before = await watermark(db);
    expect(before).not.toBeNull();
  }, 120_000);

  afterAll(async () => {
    await db.drop();
  });

  it.each<[HostileMode, RegExp]>([
    ['data-null', /data is null, not an array/],
    ['data-string', /data is a string, not an array/],
    ['has-more-missing', /has_more is missing, not a boolean/],
    ['body-null', /could not be read as a Stripe list/],
    ['cursor-loop', /the cursor did not advance/],
    ['duplicate-id', /charge ch_\w+ was listed twice in one listing/],
    ['drip', /no complete answer within the request deadline, 2 times \(SWEEPER_REQUEST_DEADLINE\)/],
  ])('%s → exit 1, one line naming the window and the problem, watermark kept', async (mode, problem) => {
    proxy.mode = mode;
    const result = await runCli(['run', '--json'], env(db));
    expect(result.code, result.stderr).toBe(1);
    expect(verdict(result)).toMatch(
      /^sweeper: charges of the platform account in \[.+\) could not be listed completely: /,
    );
    expect(verdict(result)).toMatch(problem);
    expect(result.stderr).not.toMatch(/TypeError|Cannot read properties/);
    expect(await watermark(db)).toEqual(before);
    const { rows } = await db.pool.query<{ status: string; error: string }>(
      `SELECT status, error FROM recon_runs WHERE account = 'platform' ORDER BY started_at DESC, id DESC LIMIT 1`,
    );
    expect(rows[0]).toMatchObject({ status: 'failed', error: expect.stringMatching(problem) });
  });

  it('a 401 that echoes the API key → exit 1 naming STRIPE_API_KEY, and the key appears nowhere', async () => {
    proxy.mode = 'echo-key-401';
    const result = await runCli(['run', '--json'], env(db));
    expect(result.code, result.stderr).toBe(1);
    expect(verdict(result)).toMatch(
      /Stripe rejected the API key \(401\).*Invalid API Key provided: \[redacted\].*STRIPE_API_KEY must be/,
    );
    expect(`${result.stdout}${result.stderr}`).not.toContain('hostileUpstreamKey42');
    const { rows } = await db.pool.query<{ error: string }>(`SELECT error FROM recon_runs WHERE error LIKE '%401%'`);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.error).not.toContain('hostileUpstreamKey42');
    expect(await watermark(db)).toEqual(before);
  });
});

describe('a poison charge becomes an open finding naming it; the rest of its slice commits', () => {
  let db: TestDatabase;
  const poisoned = new Map<string, Poison>();
  const good: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy.mode = 'poison';
    const at = (minutes: number) => new Date(Date.now() - minutes * MINUTE);
    good.push(double.createCharge(null, { created: at(50), amount: 1200 }).id);
    for (const [i, name] of (Object.keys(POISONS) as Poison[]).filter((p) => p !== 'no_id').entries()) {
      const charge = double.createCharge(null, {
        created: at(49 - i),
        amount: 1000 + i,
        metadata: { [POISON_KEY]: name },
      });
      poisoned.set(charge.id, name);
    }
    good.push(double.createCharge(null, { created: at(30), amount: 1300 }).id);
  });

  afterAll(async () => {
    await db.drop();
  });

  it('exit 3; each poison charge is an open finding with its reason; the good ones are in the mirror; the watermark moved on', async () => {
    const result = await runCli(['run', '--json'], env(db));
    expect(result.code, result.stderr).toBe(3);
    const { rows: findings } = await db.pool.query<{ charge_id: string; state: string; reason: string }>(
      `SELECT charge_id, state, details ->> 'reason' AS reason FROM recon_findings WHERE category = $1`,
      [MALFORMED_CHARGE_CATEGORY],
    );
    for (const [id, name] of poisoned) {
      const finding = findings.find((f) => f.charge_id === id);
      expect(finding, `finding for ${name}`).toBeDefined();
      expect(finding?.state).toBe('open');
      expect(finding?.reason).toMatch(POISONS[name].problem);
    }
    const { rows: mirror } = await db.pool.query<{ charge_id: string }>('SELECT charge_id FROM stripe_charges');
    const mirrored = mirror.map((r) => r.charge_id);
    expect(mirrored).toEqual(expect.arrayContaining(good));
    for (const id of poisoned.keys()) expect(mirrored).not.toContain(id);
    const reached = await watermark(db);
    expect(reached?.getTime()).toBeGreaterThan(Date.now() - 30 * MINUTE);
    const [report] = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { status: string; malformed_charges: number });
    expect(report).toMatchObject({ status: 'succeeded', malformed_charges: poisoned.size });
    // The findings' text is safe: no NUL made it into the database.
    const { rows: nul } = await db.pool.query(`SELECT 1 FROM recon_findings WHERE details::text LIKE '%\\u0000%'`);
    expect(nul).toEqual([]);
  });

  it('a rerun finds the same findings again, not new ones', async () => {
    const count = async () =>
      (
        await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM recon_findings WHERE charge_id = ANY($1)`, [
          [...poisoned.keys()],
        ])
      ).rows[0]?.n;
    expect(await count()).toBe(poisoned.size);
    const result = await runCli(['run', '--json'], env(db));
    expect(result.code, result.stderr).toBe(3);
    expect(await count()).toBe(poisoned.size);
  });
});

describe('a charge without an id cannot be named', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    proxy.mode = 'poison';
    for (const [minutes, poison] of [
      [45, 'no_id'],
      [44, undefined],
    ] as const) {
      double.createCharge('acct_1NoId', {
        created: new Date(Date.now() - minutes * MINUTE),
        ...(poison ? { metadata: { [POISON_KEY]: poison } } : {}),
      });
    }
  });
  afterAll(async () => {
    await db.drop();
  });

  it('is counted and logged, the rest commits, and the run exits 1 saying how many', async () => {
    const result = await runCli(['run', '--json'], { ...env(db), SWEEPER_ACCOUNTS: 'acct_1NoId' });
    expect(result.code, result.stderr).toBe(1);
    expect(verdict(result)).toMatch(
      /^sweeper: 1 charge\(s\) from Stripe had no usable id and could not be judged or recorded/,
    );
    expect(result.stderr).toMatch(/Stripe returned a charge the sweep cannot judge/);
    const [report] = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { status: string; malformed_charges: number });
    // The listing's copy has no id; the late-changes step re-reads the charge its creation
    // event names, by id, and that copy (still without an id) is named by the request: a finding.
    expect(report).toMatchObject({ status: 'succeeded', malformed_charges: 2, unnamed_charges: 1 });
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM stripe_charges WHERE account = 'acct_1NoId'`);
    expect(rows[0].n).toBe(1);
  });
});
