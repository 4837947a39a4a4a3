import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions, utcDay } from '../../src/db/partitions.js';
import { buildMetricsRegistry } from '../../src/metrics/index.js';
import { readCompleteness, readCompletenessAll } from '../../src/sweep/completeness.js';
import { lockAccounts } from '../../src/sweep/lock.js';
import { readStatus } from '../../src/sweep/status.js';
import { createTestDatabase, explaining, type TestDatabase } from '../support/db.js';

/**
 * How complete reconciliation is, against a real schema: lags from the watermark and
 * the events cursor, and per day the mirror's charges that are settled (judged by the
 * scheduled sweep or a backfill's committed slices, and not the charge of an open
 * finding, a duplicate's extras included).
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// Noon yesterday (UTC): the three days asked for lie inside the template's partitions.
const Y = Math.floor(Date.now() / DAY) * DAY - DAY;
const NOW = new Date(Y + 12 * HOUR);
const at = (ms: number) => new Date(ms);
const ACCOUNT = 'acct_complete1';
let db: TestDatabase;

async function run(
  id: string,
  over: {
    mode?: string;
    account?: string;
    from: number;
    to: number;
    checkpoint: number;
    status: string;
    started?: number;
  },
) {
  await db.pool.query(
    `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at, charges_scanned)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1234)`,
    [
      id,
      over.mode ?? 'run',
      over.account ?? ACCOUNT,
      at(over.from),
      at(over.to),
      over.status,
      at(over.checkpoint),
      at(over.started ?? over.from),
    ],
  );
}
async function charges(account: string, list: Array<[string, number]>) {
  for (const [id, created] of list) {
    await db.pool.query(
      `INSERT INTO stripe_charges (account, charge_id, created, amount, amount_captured, amount_refunded, currency, status,
                                   captured, refunded, disputed, livemode, fetched_at)
       VALUES ($1, $2, $3, 100, 100, 0, 'usd', 'succeeded', true, false, false, false, $3)`,
      [account, id, at(created)],
    );
  }
}
async function finding(
  subject: string,
  state: string,
  chargeId: string | null,
  details: Record<string, unknown> = {},
  category = 'unattributed_charge',
) {
  await db.pool.query(
    `INSERT INTO recon_findings (category, account, subject, charge_id, state, details, first_seen_run, last_seen_run, first_seen_at, last_seen_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'run_seed', 'run_seed', $7, $7)`,
    [category, ACCOUNT, subject, chargeId, state, JSON.stringify(details), NOW],
  );
}

beforeAll(async () => {
  db = await createTestDatabase();
  await ensureDayPartitions(db.pool, { from: utcDay(at(Y - 4 * DAY)), to: utcDay(at(Y + DAY)) });
  await run('run_seed', { from: Y - 10 * DAY, to: Y + 6 * HOUR, checkpoint: Y + 6 * HOUR, status: 'succeeded' });
  // The scheduled sweep judged up to 06:00 today; events were read up to 09:00.
  await db.pool.query(
    `INSERT INTO recon_watermarks (account, shard, watermark, run_id, updated_at) VALUES ($1, '', $2, 'run_seed', $2)`,
    [ACCOUNT, at(Y + 6 * HOUR)],
  );
  await db.pool.query(
    `INSERT INTO recon_event_cursors (account, cursor, run_id, updated_at) VALUES ($1, $2, 'run_seed', $2)`,
    [ACCOUNT, at(Y + 9 * HOUR)],
  );
  // A backfill of 09:00-12:00 stopped after committing 09:00-10:00.
  await run('run_backfill', {
    mode: 'backfill',
    from: Y + 9 * HOUR,
    to: Y + 12 * HOUR,
    checkpoint: Y + 10 * HOUR,
    status: 'interrupted',
  });

  await charges(ACCOUNT, [
    ['ch_old1', Y - 3 * DAY + HOUR], // before the three days: not counted
    ['ch_a1', Y - 2 * DAY + HOUR],
    ['ch_a2', Y - 2 * DAY + 2 * HOUR],
    ['ch_a3', Y - 2 * DAY + 3 * HOUR],
    ['ch_a4', Y - 2 * DAY + 4 * HOUR],
    ['ch_b1', Y - DAY + HOUR],
    ['ch_b2', Y - DAY + 2 * HOUR],
    ['ch_b3', Y - DAY + 3 * HOUR],
    ['ch_c1', Y + 5 * HOUR], // before the watermark
    ['ch_c2', Y + 8 * HOUR], // after it, in no backfill
    ['ch_c3', Y + 9.5 * HOUR], // in the backfill's committed slice
    ['ch_c4', Y + 10.5 * HOUR], // in the backfill's window, past its checkpoint
  ]);
  await charges('acct_other', [['ch_x1', Y + 5 * HOUR]]);
  await finding('ch_a1', 'open', 'ch_a1');
  await finding('ch_a2', 'resolved', 'ch_a2');
  await finding(
    'acme\u241fk1',
    'open',
    'ch_b1',
    { kept: 'ch_b1', count: 2, charges: [{ id: 'ch_b1' }, { id: 'ch_b2' }] },
    'duplicate_charge',
  );
  await finding('acme\u241fk2', 'open', null, {}, 'stale_claim'); // no charge: no day's count changes
});
afterAll(async () => {
  await db.drop();
});

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('completeness', () => {
  it('per day: charges in the mirror, and those judged and not the charge of an open finding', async () => {
    const c = await readCompleteness(db.pool, ACCOUNT, { now: NOW, days: 3, maxLagMs: 2 * HOUR });
    expect(c.days).toEqual([
      { day: dayOf(Y - 2 * DAY), charges: 4, settled: 3, fraction: 0.75 }, // ch_a1 is open; a resolved finding is settled
      { day: dayOf(Y - DAY), charges: 3, settled: 1, fraction: 0.3333 }, // the duplicate's kept charge and its extra are open
      { day: dayOf(Y), charges: 4, settled: 2, fraction: 0.5 }, // before the watermark, or in a backfill's committed slice
    ]);
  });

  it('asks the open findings about the charges of the days measured, never reads them all', async () => {
    // An account with a long history of open findings (none about these days' charges)
    // and a few charges in the days measured: the plan probes the open findings by charge.
    const many = 'acct_complete_many';
    await charges(many, [
      ['ch_m1', Y + HOUR],
      ['ch_m2', Y + 2 * HOUR],
    ]);
    await db.pool.query(
      `INSERT INTO recon_findings (category, account, subject, charge_id, state, details, first_seen_run, last_seen_run, first_seen_at, last_seen_at)
       SELECT 'unattributed_charge', $1, 'ch_old_' || i, 'ch_old_' || i, 'open', '{}', 'run_seed', 'run_seed', $2, $2
         FROM generate_series(1, 20000) i`,
      [many, NOW],
    );
    await finding('ch_m2', 'open', 'ch_m2');
    await db.pool.query(`UPDATE recon_findings SET account = $1 WHERE subject = 'ch_m2'`, [many]);
    await db.pool.query(
      `INSERT INTO recon_watermarks (account, shard, watermark, run_id, updated_at) VALUES ($1, '', $2, 'run_seed', $2)`,
      [many, at(Y + 3 * HOUR)],
    );
    await db.pool.query('ANALYZE recon_findings');
    const seen = explaining(db.pool);
    const c = await readCompleteness(seen.db, many, { now: NOW, days: 1, maxLagMs: 2 * HOUR }).finally(
      // The other tests see the accounts with a watermark: this one is gone again.
      () =>
        db.pool.query(
          `WITH w AS (DELETE FROM recon_watermarks WHERE account = $1), f AS (DELETE FROM recon_findings WHERE account = $1)
           DELETE FROM stripe_charges WHERE account = $1`,
          [many],
        ),
    );
    // Both judged (before the watermark); ch_m2 is held by its open finding.
    expect(c.days).toEqual([{ day: dayOf(Y), charges: 2, settled: 1, fraction: 0.5 }]);
    const plan = seen.plans.join('\n');
    expect(plan).toMatch(/recon_findings_open_charge on recon_findings/);
    expect(plan).toMatch(/charge_id = s(_\d+)?\.charge_id/);
    expect(plan).not.toMatch(/Seq Scan on recon_findings/);
    // The by-category index only for the open duplicates (of the three categories that name charges).
    for (const line of plan.split('\n').filter((l) => /using recon_findings_open on/.test(l))) {
      const at = plan.split('\n').indexOf(line);
      expect(plan.split('\n')[at + 1]).toMatch(
        /category = ANY \('\{duplicate_charge,duplicate_effect,suspected_duplicate\}'/,
      );
    }
  });

  it('both lags, and lagging once either is past SWEEPER_MAX_LAG', async () => {
    const c = await readCompleteness(db.pool, ACCOUNT, { now: NOW, days: 3, maxLagMs: 2 * HOUR });
    expect(c).toMatchObject({
      watermark: at(Y + 6 * HOUR).toISOString(),
      watermark_lag_seconds: 6 * 3600,
      events_cursor: at(Y + 9 * HOUR).toISOString(),
      events_lag_seconds: 3 * 3600,
      max_lag_seconds: 7200,
      lagging: true,
    });
    expect((await readCompleteness(db.pool, ACCOUNT, { now: NOW, days: 3, maxLagMs: 7 * HOUR })).lagging).toBe(false);
    expect((await readCompleteness(db.pool, ACCOUNT, { now: NOW, days: 3, maxLagMs: 4 * HOUR })).lagging).toBe(true); // the watermark alone
  });

  it('an account no scheduled run has touched: lags unknown, not lagging, empty days complete', async () => {
    const c = await readCompleteness(db.pool, 'acct_never', { now: NOW, days: 2, maxLagMs: 2 * HOUR });
    expect(c).toEqual({
      account: 'acct_never',
      watermark: null,
      watermark_lag_seconds: null,
      events_cursor: null,
      events_lag_seconds: null,
      max_lag_seconds: 7200,
      lagging: false,
      days: [
        { day: dayOf(Y - DAY), charges: 0, settled: 0, fraction: 1 },
        { day: dayOf(Y), charges: 0, settled: 0, fraction: 1 },
      ],
    });
    // The configured accounts and every account with a watermark or a cursor.
    expect(
      (await readCompletenessAll(db.pool, ['platform'], { now: NOW, days: 1, maxLagMs: HOUR })).map((a) => a.account),
    ).toEqual([ACCOUNT, 'platform']);
  });

  it('metrics: lag per kind, lagging, and per day (days_ago) the settled fraction and the charges', async () => {
    const c = await readCompleteness(db.pool, ACCOUNT, { now: NOW, days: 3, maxLagMs: 2 * HOUR });
    const never = await readCompleteness(db.pool, 'acct_never', { now: NOW, days: 3, maxLagMs: 2 * HOUR });
    const text = await buildMetricsRegistry({
      reports: [],
      status: {
        watermarks: [],
        last_runs: [],
        open_findings: {},
        claims: { count: 0, in_flight: 0, oldest_created_at: null, oldest_age_seconds: null },
      },
      stripe429s: 0,
      now: NOW,
      completeness: [c, never],
    }).metrics();
    expect(text).toContain(`sweeper_lag_seconds{account="${ACCOUNT}",kind="watermark"} 21600`);
    expect(text).toContain(`sweeper_lag_seconds{account="${ACCOUNT}",kind="events"} 10800`);
    expect(text).not.toContain('sweeper_lag_seconds{account="acct_never"'); // unknown is not "caught up"
    expect(text).toContain(`sweeper_reconciliation_lagging{account="${ACCOUNT}"} 1`);
    expect(text).toContain('sweeper_reconciliation_lagging{account="acct_never"} 0');
    expect(text).toContain(`sweeper_settled_fraction{account="${ACCOUNT}",days_ago="0"} 0.5`);
    expect(text).toContain(`sweeper_settled_fraction{account="${ACCOUNT}",days_ago="2"} 0.75`);
    expect(text).toContain(`sweeper_day_charges{account="${ACCOUNT}",days_ago="1"} 3`);
  });
});

describe('status of a run in progress', () => {
  it('shows the window, the slice and checkpoint, the charges so far and the age; and whether a process still holds the account', async () => {
    await run('run_live', {
      from: Y + 6 * HOUR - 15 * 60_000,
      to: Y + 11 * HOUR + 50 * 60_000,
      checkpoint: Y + 9 * HOUR,
      status: 'running',
      started: NOW.getTime() - 200_000,
    });
    const options = { sliceMs: HOUR, completeness: { accounts: [ACCOUNT], now: NOW, days: 3, maxLagMs: 2 * HOUR } };
    const dead = await readStatus(db.pool, NOW, options);
    expect(dead.live_runs).toEqual([
      {
        id: 'run_live',
        mode: 'run',
        account: ACCOUNT,
        window: { from: at(Y + 5.75 * HOUR).toISOString(), to: at(Y + 11 * HOUR + 50 * 60_000).toISOString() },
        checkpoint: at(Y + 9 * HOUR).toISOString(),
        slices_done: 4, // 05:45-06:00, then three whole hours
        slices_total: 7,
        percent: 53,
        charges_scanned: 1234,
        started_at: at(NOW.getTime() - 200_000).toISOString(),
        age_seconds: 200,
        lock_held: false, // no process holds it: the run's process died
      },
    ]);
    expect(dead.completeness?.map((c) => c.account)).toEqual([ACCOUNT]);

    const lock = await lockAccounts(db.pool, [ACCOUNT], { mode: 'run' });
    try {
      expect((await readStatus(db.pool, NOW, options)).live_runs[0]?.lock_held).toBe(true);
      // Another account's lock is not this one's.
      expect((await readStatus(db.pool, NOW, options)).live_runs.every((r) => r.account === ACCOUNT)).toBe(true);
    } finally {
      await lock.release();
    }
    expect((await readStatus(db.pool, NOW, options)).live_runs[0]?.lock_held).toBe(false);
    // A dense slice's part committed (checkpoint inside 09:00-10:00): still four whole slices.
    await db.pool.query(`UPDATE recon_runs SET checkpoint = $1 WHERE id = 'run_live'`, [at(Y + 9.5 * HOUR)]);
    expect((await readStatus(db.pool, NOW, options)).live_runs[0]).toMatchObject({
      checkpoint: at(Y + 9.5 * HOUR).toISOString(),
      slices_done: 4,
      slices_total: 7,
    });
    await db.pool.query(`UPDATE recon_runs SET status = 'interrupted' WHERE id = 'run_live'`);
    expect((await readStatus(db.pool, NOW)).live_runs).toEqual([]);
  });
});
