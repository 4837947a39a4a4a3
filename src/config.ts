import { z } from 'zod';
import { ConfigError } from './errors.js';
import { parseDuration, formatDuration } from './time/duration.js';

/**
 * Configuration comes from the environment (12-factor), is read once at start and
 * validated here; CLI flags override individual fields afterwards. Every error
 * names the variable and what a valid value looks like.
 */

const duration = (name: string, fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const ms = parseDuration(text);
      if (ms === undefined || ms <= 0) {
        ctx.addIssue({ code: 'custom', message: `${name} must be a duration like 90s, 15m, 1h or 7d (got "${text}")` });
        return z.NEVER;
      }
      return ms;
    });

const positiveInt = (name: string, fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const n = Number(text);
      if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n <= 0) {
        ctx.addIssue({ code: 'custom', message: `${name} must be a positive integer (got "${text}")` });
        return z.NEVER;
      }
      return n;
    });

const metadataName = (name: string, fallback: string) =>
  z
    .string()
    .default(fallback)
    .refine((v) => /^[A-Za-z0-9_.-]{1,40}$/.test(v), {
      message: `${name} must be a Stripe metadata key: 1-40 characters of letters, digits, _ . -`,
    });

const envSchema = z.object({
  DATABASE_URL: z
    .string()
    .optional()
    .refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), {
      message: 'DATABASE_URL must be a PostgreSQL URL such as postgres://user:password@host:5432/db',
    }),
  STRIPE_API_KEY: z
    .string()
    .optional()
    .refine((v) => v === undefined || /^(sk|rk)_(test|live)_[A-Za-z0-9]+$/.test(v), {
      message: 'STRIPE_API_KEY must be a Stripe secret or restricted key (sk_… or rk_…)',
    }),
  STRIPE_API_BASE: z
    .string()
    .optional()
    .refine((v) => v === undefined || /^https?:\/\/[^/]+\/?$/.test(v), {
      message: 'STRIPE_API_BASE must be a scheme, host and optional port, such as http://127.0.0.1:12111',
    }),
  SWEEPER_CLAIM_LEASE: duration('SWEEPER_CLAIM_LEASE', '2m'),
  SWEEPER_RETENTION: duration('SWEEPER_RETENTION', '7d'),
  SWEEPER_MAX_AMOUNT: positiveInt('SWEEPER_MAX_AMOUNT', '99999999'),
  SWEEPER_METADATA_TENANT_KEY: metadataName('SWEEPER_METADATA_TENANT_KEY', 'tenant_id'),
  SWEEPER_METADATA_IDEMPOTENCY_KEY: metadataName('SWEEPER_METADATA_IDEMPOTENCY_KEY', 'idempotency_key'),
  SWEEPER_ACCOUNTS: z
    .string()
    .default('platform')
    .refine((v) => v.split(',').every((a) => /^(platform|acct_[A-Za-z0-9]+)$/.test(a.trim())), {
      message: 'SWEEPER_ACCOUNTS must be a comma-separated list of Stripe account ids (acct_…) or "platform"',
    }),
  SWEEPER_SETTLE: duration('SWEEPER_SETTLE', '10m'),
  SWEEPER_OVERLAP: duration('SWEEPER_OVERLAP', '15m'),
  SWEEPER_SLICE: duration('SWEEPER_SLICE', '1h'),
  SWEEPER_FIRST_RUN_LOOKBACK: duration('SWEEPER_FIRST_RUN_LOOKBACK', '1d'),
  SWEEPER_RETRY_HORIZON: duration('SWEEPER_RETRY_HORIZON', '1d'),
  SWEEPER_SHUTDOWN_GRACE: duration('SWEEPER_SHUTDOWN_GRACE', '20s'),
  SWEEPER_STRIPE_RATE: positiveInt('SWEEPER_STRIPE_RATE', '20'),
  SWEEPER_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

const MIN_SETTLE_GRACE_MS = 60_000;

export interface Config {
  databaseUrl: string | undefined;
  stripeApiKey: string | undefined;
  stripeApiBase: string | undefined;
  /** How long an attempt holds an `in_flight` claim before another may steal it. */
  claimLeaseMs: number;
  retentionMs: number;
  /** Largest amount, in minor units, the claim library accepts. */
  maxAmount: number;
  metadataKeys: { tenantId: string; idempotencyKey: string };
  logLevel: string;
  /** Stripe accounts swept: `platform` and/or Connect `acct_…` ids. */
  accounts: string[];
  /** Work younger than this is not judged: it may still be in flight. ≥ lease + 1 minute. */
  settleMs: number;
  /** How far behind the watermark a scheduled run starts again. */
  overlapMs: number;
  /** Unit of checkpointing: one transaction per slice. */
  sliceMs: number;
  firstRunLookbackMs: number;
  /** Stripe read requests per second, shared by all accounts of the process. */
  stripeRatePerSecond: number;
  /** How long after a first attempt callers may still retry; retention must cover 24 h plus this. */
  retryHorizonMs: number;
  /** After SIGTERM, how long the current slice may take before the process exits anyway. */
  shutdownGraceMs: number;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const nonEmpty = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(nonEmpty);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const variable = first?.path.join('.') ?? 'environment';
    throw new ConfigError(`${variable}: ${first?.message ?? 'invalid'}`);
  }
  const e = parsed.data;
  if (e.SWEEPER_METADATA_TENANT_KEY === e.SWEEPER_METADATA_IDEMPOTENCY_KEY) {
    throw new ConfigError('SWEEPER_METADATA_TENANT_KEY and SWEEPER_METADATA_IDEMPOTENCY_KEY must differ');
  }
  const accounts = [...new Set(e.SWEEPER_ACCOUNTS.split(',').map((a) => a.trim()))];
  if (e.SWEEPER_SETTLE < e.SWEEPER_CLAIM_LEASE + MIN_SETTLE_GRACE_MS) {
    throw new ConfigError(
      `SWEEPER_SETTLE (${formatDuration(e.SWEEPER_SETTLE)}) must be at least SWEEPER_CLAIM_LEASE (${formatDuration(e.SWEEPER_CLAIM_LEASE)}) ` +
        'plus 1m, or the sweep would judge claims whose attempt may still be running',
    );
  }
  return {
    databaseUrl: e.DATABASE_URL,
    stripeApiKey: e.STRIPE_API_KEY,
    stripeApiBase: e.STRIPE_API_BASE,
    claimLeaseMs: e.SWEEPER_CLAIM_LEASE,
    retentionMs: e.SWEEPER_RETENTION,
    maxAmount: e.SWEEPER_MAX_AMOUNT,
    metadataKeys: { tenantId: e.SWEEPER_METADATA_TENANT_KEY, idempotencyKey: e.SWEEPER_METADATA_IDEMPOTENCY_KEY },
    logLevel: e.SWEEPER_LOG_LEVEL,
    accounts,
    settleMs: e.SWEEPER_SETTLE,
    overlapMs: e.SWEEPER_OVERLAP,
    sliceMs: e.SWEEPER_SLICE,
    firstRunLookbackMs: e.SWEEPER_FIRST_RUN_LOOKBACK,
    stripeRatePerSecond: e.SWEEPER_STRIPE_RATE,
    retryHorizonMs: e.SWEEPER_RETRY_HORIZON,
    shutdownGraceMs: e.SWEEPER_SHUTDOWN_GRACE,
  };
}

export function requireDatabaseUrl(config: Config): string {
  if (!config.databaseUrl) {
    throw new ConfigError(
      'DATABASE_URL is not set: set it to the PostgreSQL URL of the sweeper database, e.g. postgres://sweeper:secret@localhost:5432/payments',
    );
  }
  return config.databaseUrl;
}

export function requireStripeApiKey(config: Config): string {
  if (!config.stripeApiKey) {
    throw new ConfigError(
      'STRIPE_API_KEY is not set: set it to a Stripe key (a restricted read-only rk_… key is enough except for --refund-duplicates)',
    );
  }
  return config.stripeApiKey;
}

/** The configuration as it may appear in logs: no key, no database password. */
export function describeConfig(config: Config): Record<string, unknown> {
  return {
    databaseUrl: config.databaseUrl ? redactUrlPassword(config.databaseUrl) : undefined,
    stripeApiKey: config.stripeApiKey ? `${config.stripeApiKey.slice(0, 8)}…` : undefined,
    stripeApiBase: config.stripeApiBase,
    claimLease: formatDuration(config.claimLeaseMs),
    retention: formatDuration(config.retentionMs),
    maxAmount: config.maxAmount,
    metadataKeys: config.metadataKeys,
    accounts: config.accounts,
    settle: formatDuration(config.settleMs),
    overlap: formatDuration(config.overlapMs),
    slice: formatDuration(config.sliceMs),
    stripeRatePerSecond: config.stripeRatePerSecond,
  };
}

export function redactUrlPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '[unparseable url]';
  }
}
