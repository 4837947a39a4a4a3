import { describe, expect, it } from 'vitest';
import { describeConfig, loadConfig, requireDatabaseUrl, requireStripeApiKey } from '../../src/config.js';
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
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL: /],
    [{ STRIPE_API_KEY: 'pk_test_abc' }, /^STRIPE_API_KEY: .*sk_… or rk_…/],
    [{ STRIPE_API_BASE: 'localhost:12111' }, /^STRIPE_API_BASE: /],
    [{ SWEEPER_CLAIM_LEASE: '0s' }, /^SWEEPER_CLAIM_LEASE: /],
    [{ SWEEPER_MAX_AMOUNT: '12.5' }, /^SWEEPER_MAX_AMOUNT: .*positive integer/],
    [{ SWEEPER_METADATA_TENANT_KEY: 'has space' }, /^SWEEPER_METADATA_TENANT_KEY: /],
    [{ SWEEPER_METADATA_TENANT_KEY: 'k', SWEEPER_METADATA_IDEMPOTENCY_KEY: 'k' }, /must differ/],
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
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', SWEEPER_RETENTION: '' }).retentionMs).toBe(7 * 86_400_000);
  });

  it('describes itself without the key or the database password', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://sweeper:s3cret-pw@db:5432/payments',
      STRIPE_API_KEY: 'sk_test_51Habcdefghijklmnop',
    });
    const text = JSON.stringify(describeConfig(config));
    expect(text).not.toMatch(/s3cret-pw/);
    expect(text).not.toMatch(/abcdefghijklmnop/);
    expect(text).toMatch(/sweeper:\*\*\*@db:5432/);
  });
});

describe('claimSettingsFromEnv', () => {
  it('gives the claim library the lease, maximum and metadata names the sweeper uses', async () => {
    const { claimSettingsFromEnv } = await import('../../src/claims/index.js');
    expect(
      claimSettingsFromEnv({ SWEEPER_CLAIM_LEASE: '90s', SWEEPER_MAX_AMOUNT: '5000', SWEEPER_METADATA_TENANT_KEY: 'shop', SWEEPER_SETTLE: '5m' }),
    ).toEqual({ leaseMs: 90_000, maxAmount: 5000, metadataKeys: { tenantId: 'shop', idempotencyKey: 'idempotency_key' } });
    expect(() => claimSettingsFromEnv({ SWEEPER_MAX_AMOUNT: 'lots' })).toThrow(/SWEEPER_MAX_AMOUNT/);
  });
});
