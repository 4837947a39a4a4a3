import { describe, expect, it } from 'vitest';
import { loadConfig, requireDatabaseUrl, requireStripeApiKey } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { formatDuration, parseDuration } from '../../src/time/duration.js';

describe('durations', () => {
  it.each([
    ['90s', 90_000],
    ['15m', 900_000],
    ['1h', 3_600_000],
    ['7d', 604_800_000],
    ['250ms', 250],
  ])('parses %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
    expect(parseDuration(formatDuration(ms))).toBe(ms);
  });

  it.each(['', '7', 'd', '1.5h', '-1h', '1w', '1 h', '99999999999999999d'])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('loadConfig', () => {
  it('has defaults that need nothing set', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ claimLeaseMs: 120_000, retentionMs: 7 * 86_400_000, databaseUrl: undefined });
    expect(() => requireDatabaseUrl(config)).toThrow(/DATABASE_URL is not set/);
    expect(() => requireStripeApiKey(config)).toThrow(/STRIPE_API_KEY is not set.*rk_/);
  });

  it.each([
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL must start with postgres:\/\/ or postgresql:\/\//],
    [{ DATABASE_URL: 'postgres://sweeper:pw@db:99999/payments' }, /^DATABASE_URL is not a URL that can be parsed/],
    [{ DATABASE_URL: 'postgres://[::1/payments' }, /^DATABASE_URL is not a URL that can be parsed/],
    [{ DATABASE_URL: 'postgres://db:0/payments' }, /^DATABASE_URL has a port outside 1\.\.65535/],
    [{ STRIPE_API_KEY: 'pk_test_abc' }, /^STRIPE_API_KEY must be .*sk_… or rk_…/],
    [{ STRIPE_API_BASE: 'localhost:12111' }, /^STRIPE_API_BASE must start with http:\/\/ or https:\/\//],
    [{ STRIPE_API_BASE: 'http://127.0.0.1:99999' }, /^STRIPE_API_BASE is not a URL that can be parsed/],
    [{ STRIPE_API_BASE: 'http://127.0.0.1:0' }, /^STRIPE_API_BASE has a port outside 1\.\.65535/],
    [{ STRIPE_API_BASE: 'https://user:pass@api.stripe.com' }, /^STRIPE_API_BASE must not contain credentials/],
    [
      { STRIPE_API_BASE: 'https://api.stripe.com/v1' },
      /^STRIPE_API_BASE must be a scheme, host and optional port only/,
    ],
    [{ SWEEPER_CLAIM_LEASE: '0s' }, /^SWEEPER_CLAIM_LEASE must be a duration/],
    [{ SWEEPER_MAX_AMOUNT: '12.5' }, /^SWEEPER_MAX_AMOUNT must be a positive integer/],
    [{ SWEEPER_METADATA_TENANT_KEY: 'has space' }, /^SWEEPER_METADATA_TENANT_KEY must be a Stripe metadata key/],
    [{ SWEEPER_METADATA_TENANT_KEY: 'k', SWEEPER_METADATA_IDEMPOTENCY_KEY: 'k' }, /must differ/],
    [{ SWEEPER_LOG_LEVEL: 'loud' }, /^SWEEPER_LOG_LEVEL must be one of fatal, error/],
    [{ SWEEPER_SLICE: '1ms' }, /^SWEEPER_SLICE must be between 1m and 1d \(got 1ms\)/],
    [{ SWEEPER_SLICE: '59s' }, /^SWEEPER_SLICE must be between 1m and 1d/],
    [{ SWEEPER_SLICE: '2d' }, /^SWEEPER_SLICE must be between 1m and 1d \(got 2d\)/],
    [{ SWEEPER_OVERLAP: '25h' }, /^SWEEPER_OVERLAP must be between 1s and 1d/],
    [{ SWEEPER_SETTLE: '2d' }, /^SWEEPER_SETTLE must be between 1m and 1d/],
    [{ SWEEPER_FIRST_RUN_LOOKBACK: '400d' }, /^SWEEPER_FIRST_RUN_LOOKBACK must be between 1m and 31d/],
    [{ SWEEPER_RETENTION: '1000d' }, /^SWEEPER_RETENTION must be between 1h and 366d/],
    [{ SWEEPER_RETRY_HORIZON: '60d' }, /^SWEEPER_RETRY_HORIZON must be between 1m and 30d/],
    [{ SWEEPER_CLAIM_LEASE: '2h' }, /^SWEEPER_CLAIM_LEASE must be between 1s and 1h/],
    [{ SWEEPER_SHUTDOWN_GRACE: '1h' }, /^SWEEPER_SHUTDOWN_GRACE must be between 1s and 5m/],
    [{ SWEEPER_RUN_DEADLINE: '4s' }, /^SWEEPER_RUN_DEADLINE must be between 5s and 7d/],
    [{ SWEEPER_REQUEST_DEADLINE: '10m' }, /^SWEEPER_REQUEST_DEADLINE must be between 1s and 5m/],
    [{ SWEEPER_DB_LOCK_TIMEOUT: '0s' }, /^SWEEPER_DB_LOCK_TIMEOUT must be a duration/],
    [{ SWEEPER_DB_STATEMENT_TIMEOUT: '2h' }, /^SWEEPER_DB_STATEMENT_TIMEOUT must be between 1s and 1h/],
    [
      { SWEEPER_DB_IDLE_IN_TRANSACTION_TIMEOUT: '500ms' },
      /^SWEEPER_DB_IDLE_IN_TRANSACTION_TIMEOUT must be between 1s and 1h/,
    ],
    [{ SWEEPER_STRIPE_RATE: '1001' }, /^SWEEPER_STRIPE_RATE must be at most 1000 \(got 1001\)/],
    [{ SWEEPER_BATCH_CHARGES: '99' }, /^SWEEPER_BATCH_CHARGES must be at least 100 \(got 99\)/],
    [{ SWEEPER_BATCH_CHARGES: '100001' }, /^SWEEPER_BATCH_CHARGES must be at most 100000 \(got 100001\)/],
    [{ SWEEPER_BATCH_CHARGES: '2k' }, /^SWEEPER_BATCH_CHARGES must be a positive integer \(got "2k"\)/],
    [
      { SWEEPER_MAX_REPAIR_SHARE: '0.05' },
      /^SWEEPER_MAX_REPAIR_SHARE must be a percentage .* such as 5% \(got "0.05"\)/,
    ],
    [{ SWEEPER_MAX_REPAIR_SHARE: '0%' }, /^SWEEPER_MAX_REPAIR_SHARE must be a percentage above 0%/],
    [{ SWEEPER_MAX_REPAIR_SHARE: '120%' }, /^SWEEPER_MAX_REPAIR_SHARE must be a percentage .* at most 100%/],
    [{ SWEEPER_STORED_ANSWER: 'order.charge_id' }, /^SWEEPER_STORED_ANSWER is not JSON; example:/],
    [{ SWEEPER_STORED_ANSWER: '{"outcome": "state"}' }, /^SWEEPER_STORED_ANSWER "outcome" needs at least one of/],
  ])('rejects %j with a ConfigError naming the variable', (env, message) => {
    const error = (() => {
      try {
        loadConfig(env);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(64);
    expect((error as Error).message).toMatch(message);
    // One name, once: never "X: X must be …".
    const variable = Object.keys(env)[0] as string;
    expect((error as Error).message.startsWith(`${variable}: ${variable}`)).toBe(false);
  });

  it('reads the repair brake as a percentage and the stored-answer mapping as JSON', () => {
    expect(loadConfig({})).toMatchObject({ maxRepairShare: 0.05, storedAnswer: null });
    expect(loadConfig({ SWEEPER_MAX_REPAIR_SHARE: '0.5%' }).maxRepairShare).toBeCloseTo(0.005);
    expect(loadConfig({ SWEEPER_MAX_REPAIR_SHARE: '100%' }).maxRepairShare).toBe(1);
    expect(
      loadConfig({ SWEEPER_STORED_ANSWER: '{"charge": "order.charge_id", "outcome": "state", "success": ["paid"]}' })
        .storedAnswer,
    ).toEqual({ charge: ['order', 'charge_id'], outcome: ['state'], success: ['paid'], pending: [], declined: [] });
  });

  it('never echoes a URL that may hold a password', () => {
    for (const env of [
      { DATABASE_URL: 'postgres://sweeper:hunter2-secret@db:99999/payments' },
      { STRIPE_API_BASE: 'https://user:hunter2-secret@api.stripe.com' },
    ]) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).not.toThrow(/hunter2/);
    }
  });

  it('accepts the edges of every bound, and the new settings have their defaults', () => {
    const config = loadConfig({
      SWEEPER_SLICE: '1m',
      SWEEPER_OVERLAP: '1d',
      SWEEPER_RETENTION: '366d',
      SWEEPER_STRIPE_RATE: '100',
      SWEEPER_BATCH_CHARGES: '100',
    });
    expect(loadConfig({ SWEEPER_BATCH_CHARGES: '100000' }).batchCharges).toBe(100_000);
    expect(config).toMatchObject({
      batchCharges: 100,
      sliceMs: 60_000,
      overlapMs: 86_400_000,
      retentionMs: 366 * 86_400_000,
      stripeRatePerSecond: 100,
    });
    expect(loadConfig({})).toMatchObject({
      runDeadlineMs: 12 * 60_000,
      backfillDeadlineMs: 350 * 60_000,
      requestDeadlineMs: 20_000,
      batchCharges: 2_000,
      db: { lockTimeoutMs: 30_000, statementTimeoutMs: 300_000, idleInTransactionTimeoutMs: 300_000 },
    });
    expect(loadConfig({ DATABASE_URL: 'postgres:///payments?host=/var/run/postgresql' }).databaseUrl).toMatch(
      /^postgres:/,
    );
    // Set, the run deadline is every run's; unset, a backfill gets its own, longer one.
    expect(loadConfig({ SWEEPER_RUN_DEADLINE: '2h' })).toMatchObject({
      runDeadlineMs: 7_200_000,
      backfillDeadlineMs: 7_200_000,
    });
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', SWEEPER_RETENTION: '' }).retentionMs).toBe(7 * 86_400_000);
  });
});

describe('claimSettingsFromEnv', () => {
  it('gives the claim library the lease, maximum and metadata names the sweeper uses', async () => {
    const { claimSettingsFromEnv } = await import('../../src/claims/index.js');
    expect(
      claimSettingsFromEnv({
        SWEEPER_CLAIM_LEASE: '90s',
        SWEEPER_MAX_AMOUNT: '5000',
        SWEEPER_METADATA_TENANT_KEY: 'shop',
        SWEEPER_SETTLE: '5m',
      }),
    ).toEqual({
      leaseMs: 90_000,
      maxAmount: 5000,
      metadataKeys: { tenantId: 'shop', idempotencyKey: 'idempotency_key', reference: 'order_id' },
      quotaPerMinute: null,
    });
    expect(() => claimSettingsFromEnv({ SWEEPER_MAX_AMOUNT: 'lots' })).toThrow(/SWEEPER_MAX_AMOUNT/);
  });

  it('reads only the claim variables, with the same rules as the sweep', async () => {
    const { claimSettingsFromEnv } = await import('../../src/claims/index.js');
    // The sweep's other variables are not the payment service's business.
    expect(claimSettingsFromEnv({ SWEEPER_STRIPE_RATE: 'lots', SWEEPER_SETTLE: '1s' }).leaseMs).toBe(120_000);
    const env = { SWEEPER_CLAIM_LEASE: '2h', SWEEPER_METADATA_TENANT_KEY: 'k', SWEEPER_METADATA_IDEMPOTENCY_KEY: 'k' };
    expect(() => claimSettingsFromEnv(env)).toThrow(/^SWEEPER_CLAIM_LEASE must be between 1s and 1h/);
    expect(() => loadConfig(env)).toThrow(/^SWEEPER_CLAIM_LEASE must be between 1s and 1h/);
    const sameNames = { SWEEPER_METADATA_TENANT_KEY: 'k', SWEEPER_METADATA_IDEMPOTENCY_KEY: 'k' };
    expect(() => claimSettingsFromEnv(sameNames)).toThrow(/must differ/);
    expect(() => loadConfig(sameNames)).toThrow(/must differ/);
  });
});
