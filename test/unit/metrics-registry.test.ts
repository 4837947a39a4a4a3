import { describe, expect, it } from 'vitest';
import { metricsConfigFromEnv } from '../../src/metrics/config.js';
import type { MetricsInput, SweepReportLike } from '../../src/metrics/input.js';
import nock from 'nock';
import { gatewayGrouping, pushToGateway } from '../../src/metrics/pushgateway.js';
import { buildMetricsRegistry } from '../../src/metrics/registry.js';
import { emptyCounts } from '../../src/sweep/categories.js';

const NOW = new Date('2026-11-10T12:00:00Z');
const ACCT = 'acct_1Nv0FGQ9RKHgCVdK';

function report(over: Partial<SweepReportLike>): SweepReportLike {
  return {
    account: 'platform',
    mode: 'run',
    dry_run: false,
    status: 'succeeded',
    charges_scanned: 0,
    deferred_keys: 0,
    repaired: emptyCounts(),
    duration_ms: 0,
    ...over,
  };
}

function input(over: Partial<MetricsInput> = {}): MetricsInput {
  return {
    reports: [],
    status: {
      watermarks: [],
      last_runs: [],
      open_findings: {},
      claims: { count: 0, in_flight: 0, oldest_created_at: null, oldest_age_seconds: null },
    },
    stripe429s: 0,
    now: NOW,
    ...over,
  };
}

/** Sample lines of the exposition text, without HELP/TYPE, as "name{labels} value". */
async function samples(i: MetricsInput): Promise<string[]> {
  const text = await buildMetricsRegistry(i).metrics();
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
}

describe('metrics registry', () => {
  it('exposes every documented metric with its labels and values', async () => {
    const lines = await samples(
      input({
        accounts: ['platform', ACCT],
        reports: [
          report({
            account: ACCT,
            charges_scanned: 1200,
            deferred_keys: 2,
            duration_ms: 4500,
            repaired: { ...emptyCounts(), stale_claim: 2, orphan_charge: 1 },
          }),
        ],
        status: {
          watermarks: [
            { account: ACCT, shard: '', watermark: '2026-11-10T11:30:00.000Z', lag_seconds: 1800 },
            { account: 'platform', shard: '', watermark: '2026-11-10T11:50:00.000Z', lag_seconds: 600 },
          ],
          last_runs: [
            {
              id: 'run_a',
              mode: 'run',
              account: 'platform',
              status: 'succeeded',
              started_at: '2026-11-10T11:59:00.000Z',
              finished_at: '2026-11-10T11:59:30.000Z',
              unreconciled: 0,
              error: null,
            },
            {
              id: 'run_b',
              mode: 'backfill',
              account: 'platform',
              status: 'succeeded',
              started_at: '2026-11-10T11:59:40.000Z',
              finished_at: '2026-11-10T11:59:50.000Z',
              unreconciled: 0,
              error: null,
            },
          ],
          open_findings: { [ACCT]: { duplicate_charge: 1, stale_claim: 3 } },
          claims: {
            count: 5000,
            in_flight: 7,
            oldest_created_at: '2026-11-03T12:00:00.000Z',
            oldest_age_seconds: 604_800,
          },
        },
        stripe429s: 4,
      }),
    );
    // Every category but matched, in the contract's order: spelled out here, the contract itself.
    const notMatched = [
      'claim_without_effect',
      'stale_claim',
      'lost_effect',
      'effect_without_claim',
      'orphan_charge',
      'unattributed_charge',
      'effect_without_charge',
      'amount_mismatch',
      'status_drift',
      'duplicate_charge',
      'duplicate_effect',
      'suspected_duplicate',
      'unstable_keys',
      'refund_without_effect',
      'refund_effect_without_refund',
      'refund_status_drift',
      'payout_mismatch',
      'unrecorded_balance_transaction',
      'unpaid_effect',
    ];
    const unreconciled = (account: string, open: Record<string, number>) =>
      notMatched.map((c) => `sweeper_unreconciled{account="${account}",category="${c}"} ${open[c] ?? 0}`);
    const repairs = notMatched.map(
      (c) =>
        `sweeper_repairs_last_run{account="${ACCT}",category="${c}"} ${({ stale_claim: 2, orphan_charge: 1 } as Record<string, number>)[c] ?? 0}`,
    );
    expect(lines).toEqual([
      ...unreconciled(ACCT, { duplicate_charge: 1, stale_claim: 3 }),
      ...unreconciled('platform', {}),
      `sweeper_watermark_lag_seconds{account="${ACCT}"} 1800`,
      'sweeper_watermark_lag_seconds{account="platform"} 600',
      // ACCT: this process's successful run (now); platform: the snapshot's scheduled run, not the backfill.
      `sweeper_last_success_timestamp_seconds{account="${ACCT}"} ${NOW.getTime() / 1000}`,
      `sweeper_last_success_timestamp_seconds{account="platform"} ${Date.parse('2026-11-10T11:59:30Z') / 1000}`,
      ...repairs,
      `sweeper_charges_scanned_last_run{account="${ACCT}"} 1200`,
      `sweeper_run_duration_seconds{account="${ACCT}"} 4.5`,
      `sweeper_deferred_keys_last_run{account="${ACCT}"} 2`,
      'sweeper_stripe_rate_limited_last_run 4',
      'sweeper_claim_store_size 5000',
      'sweeper_claim_store_in_flight 7',
      'sweeper_claim_store_oldest_age_seconds 604800',
    ]);
  });

  it('ignores dry runs and unsuccessful runs for run metrics and last success', async () => {
    const lines = await samples(
      input({
        reports: [
          report({ account: 'platform', dry_run: true, charges_scanned: 10 }),
          report({ account: ACCT, status: 'interrupted', charges_scanned: 20 }),
        ],
      }),
    );
    expect(lines.filter((l) => l.startsWith('sweeper_charges_scanned_last_run'))).toEqual([
      `sweeper_charges_scanned_last_run{account="${ACCT}"} 20`,
    ]);
    expect(lines.filter((l) => l.startsWith('sweeper_last_success_timestamp_seconds'))).toEqual([]);
    expect(lines).toContain('sweeper_claim_store_oldest_age_seconds 0');
  });

  it('takes the latest last success of the database, the snapshot and this run; the largest lag of an account’s shards', async () => {
    const lines = await samples(
      input({
        lastSuccessAt: { platform: new Date('2026-11-10T10:00:00Z'), [ACCT]: new Date('2026-11-10T09:00:00Z') },
        status: {
          watermarks: [
            { account: 'platform', shard: '0/2', watermark: 'x', lag_seconds: 100 },
            { account: 'platform', shard: '1/2', watermark: 'y', lag_seconds: 300 },
          ],
          last_runs: [
            {
              id: 'r1',
              mode: 'run',
              account: ACCT,
              status: 'failed',
              started_at: 'x',
              finished_at: '2026-11-10T11:00:00.000Z',
              unreconciled: null,
              error: 'boom',
            },
          ],
          open_findings: {},
          claims: { count: 0, in_flight: 0, oldest_created_at: null, oldest_age_seconds: null },
        },
      }),
    );
    expect(lines.filter((l) => /^sweeper_(last_success|watermark)/.test(l))).toEqual([
      'sweeper_watermark_lag_seconds{account="platform"} 300',
      `sweeper_last_success_timestamp_seconds{account="${ACCT}"} ${Date.parse('2026-11-10T09:00:00Z') / 1000}`,
      `sweeper_last_success_timestamp_seconds{account="platform"} ${Date.parse('2026-11-10T10:00:00Z') / 1000}`,
    ]);
  });

  it('sweeper_run_skipped: 1 for accounts a scheduled run left to a backfill, 0 for the others; absent for a backfill', async () => {
    const lines = await samples(
      input({ accounts: ['platform', ACCT], reports: [report({ account: ACCT })], skipped: ['platform'] }),
    );
    expect(lines.filter((l) => l.startsWith('sweeper_run_skipped'))).toEqual([
      `sweeper_run_skipped{account="${ACCT}"} 0`,
      'sweeper_run_skipped{account="platform"} 1',
    ]);
    const backfill = await samples(input({ accounts: ['platform'], reports: [report({ mode: 'backfill' })] }));
    expect(backfill.filter((l) => l.startsWith('sweeper_run_skipped'))).toEqual([]);
  });

  it('uses a fresh registry each time, not the global one', async () => {
    const a = buildMetricsRegistry(input({ stripe429s: 1 }));
    const b = buildMetricsRegistry(input({ stripe429s: 2 }));
    expect(await a.getSingleMetricAsString('sweeper_stripe_rate_limited_last_run')).toContain(
      'sweeper_stripe_rate_limited_last_run 1',
    );
    expect(await b.getSingleMetricAsString('sweeper_stripe_rate_limited_last_run')).toContain(
      'sweeper_stripe_rate_limited_last_run 2',
    );
    const { register } = await import('prom-client');
    expect(register.getSingleMetric('sweeper_unreconciled')).toBeUndefined();
  });
});

describe('pushgateway', () => {
  it('grouping labels: plain values as they are, an empty value or one with a slash as <label>@base64', () => {
    expect(gatewayGrouping({})).toEqual({});
    expect(gatewayGrouping({ shard: '0_4', account: 'acct_1' })).toEqual({ shard: '0_4', account: 'acct_1' });
    expect(gatewayGrouping({ shard: '0/4', empty: '' })).toEqual({ 'shard@base64': 'MC80', 'empty@base64': '=' });
  });

  it('PUTs under the URL path prefix (trailing slash or not) with basic auth from the URL, through prom-client', async () => {
    nock.disableNetConnect();
    try {
      for (const base of ['https://u:p%40ss@gw.example/prefix/', 'https://u:p%40ss@gw.example/prefix']) {
        const scope = nock('https://gw.example')
          .put('/prefix/metrics/job/sweeper/account/acct_1')
          .matchHeader('authorization', `Basic ${Buffer.from('u:p@ss').toString('base64')}`)
          .reply(200, '');
        await pushToGateway({ url: base, registry: buildMetricsRegistry(input()), grouping: { account: 'acct_1' } });
        expect(scope.isDone(), base).toBe(true);
      }
      nock('https://gw.example').put('/metrics/job/sweeper').replyWithError('socket hang up');
      await expect(
        pushToGateway({ url: 'https://u:secret@gw.example', registry: buildMetricsRegistry(input()) }),
      ).rejects.toThrow(/^Pushgateway unreachable: socket hang up$/);
    } finally {
      nock.cleanAll();
      nock.enableNetConnect();
    }
  });
});

describe('metricsConfigFromEnv', () => {
  it('reads the Pushgateway URL and the textfile path', () => {
    expect(metricsConfigFromEnv({})).toEqual({ pushgatewayUrl: undefined, file: undefined });
    expect(
      metricsConfigFromEnv({
        SWEEPER_PUSHGATEWAY_URL: 'http://gw:9091',
        SWEEPER_METRICS_FILE: '/var/lib/node_exporter/sweeper.prom',
      }),
    ).toEqual({
      pushgatewayUrl: 'http://gw:9091',
      file: '/var/lib/node_exporter/sweeper.prom',
    });
  });

  it.each([
    [{ SWEEPER_PUSHGATEWAY_URL: 'gw:9091' }, 'SWEEPER_PUSHGATEWAY_URL'],
    [{ SWEEPER_METRICS_FILE: '/tmp/sweeper.txt' }, 'SWEEPER_METRICS_FILE'],
  ])('refuses %o with exit code 64, naming %s', (env, variable) => {
    let error: (Error & { exitCode?: number }) | undefined;
    try {
      metricsConfigFromEnv(env);
    } catch (e) {
      error = e as Error & { exitCode?: number };
    }
    expect(error?.exitCode).toBe(64);
    expect(error?.message.startsWith(variable)).toBe(true);
  });
});
