import { z } from 'zod';
import { ConfigError } from './errors.js';
import { registerSecretsFromEnv } from './secrets.js';
import { parseDuration, formatDuration } from './time/duration.js';
import { parseStoredAnswerMapping, type StoredAnswerMapping } from './sweep/stored-answer.js';
import { DAY_MS, HOUR_MS, MINUTE_MS } from './time/units.js';
import { parseAddressList, type AddressEntry } from './serve/addresses.js';
import { AUTOMATIC_ACTOR, MAX_NAME_LENGTH, personName } from './serve/names.js';

/**
 * Configuration comes from the environment (12-factor), is read once at start and
 * validated here; CLI flags override individual fields afterwards. Every error
 * starts with the variable's name and says what a valid value looks like; every
 * duration has a floor and a ceiling, so no setting can make a run unbounded. Each
 * variable's default, bounds and meaning are defined here once: docs/configuration.md's
 * table is generated from this schema (`npm run docs:generate`, `configVariables`).
 */

/** Each duration variable's default and bounds (inclusive). */
export const DURATION_BOUNDS = {
  SWEEPER_CLAIM_LEASE: { fallback: '2m', min: 1_000, max: HOUR_MS },
  SWEEPER_RETENTION: { fallback: '7d', min: HOUR_MS, max: 366 * DAY_MS },
  SWEEPER_SETTLE: { fallback: '10m', min: MINUTE_MS, max: DAY_MS },
  SWEEPER_OVERLAP: { fallback: '15m', min: 1_000, max: DAY_MS },
  SWEEPER_SLICE: { fallback: '1h', min: MINUTE_MS, max: DAY_MS },
  SWEEPER_FIRST_RUN_LOOKBACK: { fallback: '1d', min: MINUTE_MS, max: 31 * DAY_MS },
  SWEEPER_RETRY_HORIZON: { fallback: '1d', min: MINUTE_MS, max: 30 * DAY_MS },
  SWEEPER_SHUTDOWN_GRACE: { fallback: '20s', min: 1_000, max: 5 * MINUTE_MS },
  SWEEPER_RUN_DEADLINE: { fallback: '12m', min: 5_000, max: 7 * DAY_MS },
  SWEEPER_REQUEST_DEADLINE: { fallback: '20s', min: 1_000, max: 5 * MINUTE_MS },
  SWEEPER_DB_LOCK_TIMEOUT: { fallback: '30s', min: 100, max: 10 * MINUTE_MS },
  SWEEPER_DB_STATEMENT_TIMEOUT: { fallback: '5m', min: 1_000, max: HOUR_MS },
  SWEEPER_DB_IDLE_IN_TRANSACTION_TIMEOUT: { fallback: '5m', min: 1_000, max: HOUR_MS },
  SWEEPER_EVENTS_LAG: { fallback: '5m', min: 1_000, max: 6 * HOUR_MS },
  SWEEPER_EVENTS_OVERLAP: { fallback: '10m', min: 1_000, max: DAY_MS },
  SWEEPER_DEEP_READ_EVERY: { fallback: '1d', min: HOUR_MS, max: 31 * DAY_MS },
  SWEEPER_MAX_LAG: { fallback: '2h', min: 10 * MINUTE_MS, max: 30 * DAY_MS },
  SWEEPER_PROGRESS_INTERVAL: { fallback: '10s', min: 1_000, max: 15 * MINUTE_MS },
  SWEEPER_DUPLICATE_LOOKBACK: { fallback: '7d', min: MINUTE_MS, max: 366 * DAY_MS },
  SWEEPER_SUSPECT_WINDOW: { fallback: '10m', min: 1_000, max: DAY_MS },
  SWEEPER_PAYOUT_GRACE: { fallback: '10d', min: HOUR_MS, max: 90 * DAY_MS },
  SWEEPER_PAYOUT_EVERY: { fallback: '1h', min: 1_000, max: DAY_MS },
  // Not a page a minute, not silence for more than a week (src/alerts/config.ts).
  SWEEPER_ALERT_REPEAT: { fallback: '1h', min: MINUTE_MS, max: 7 * DAY_MS },
} as const satisfies Record<string, { fallback: string; min: number; max: number }>;

type DurationVariable = keyof typeof DURATION_BOUNDS;

/** A duration variable with its default and bounds from DURATION_BOUNDS; the value in milliseconds. */
export const duration = (name: DurationVariable) => {
  const { fallback, min, max } = DURATION_BOUNDS[name];
  return z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const ms = parseDuration(text);
      if (ms === undefined || ms <= 0) {
        ctx.addIssue({ code: 'custom', message: `${name} must be a duration like 90s, 15m, 1h or 7d (got "${text}")` });
        return z.NEVER;
      }
      if (ms < min || ms > max) {
        ctx.addIssue({
          code: 'custom',
          message: `${name} must be between ${formatDuration(min)} and ${formatDuration(max)} (got ${formatDuration(ms)})`,
        });
        return z.NEVER;
      }
      return ms;
    })
    .meta({ fallback, bounds: `${formatDuration(min)}–${formatDuration(max)}` });
};

/** A duration that `0` turns off (0 ms). */
const durationOrOff = (name: DurationVariable) =>
  z
    .string()
    .default(DURATION_BOUNDS[name].fallback)
    .transform((text, ctx) => {
      if (text.trim() === '0') return 0;
      const parsed = duration(name).safeParse(text);
      if (!parsed.success) {
        ctx.addIssue({ code: 'custom', message: `${parsed.error.issues[0]?.message ?? name} (or 0: off)` });
        return z.NEVER;
      }
      return parsed.data;
    })
    .meta({
      fallback: DURATION_BOUNDS[name].fallback,
      bounds: `0 (off), ${formatDuration(DURATION_BOUNDS[name].min)}–${formatDuration(DURATION_BOUNDS[name].max)}`,
    });

const positiveInt = (name: string, fallback: string, max = Number.MAX_SAFE_INTEGER, min = 1) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const n = Number(text);
      if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n <= 0) {
        ctx.addIssue({ code: 'custom', message: `${name} must be a positive integer (got "${text}")` });
        return z.NEVER;
      }
      if (n > max) {
        ctx.addIssue({ code: 'custom', message: `${name} must be at most ${max} (got ${n})` });
        return z.NEVER;
      }
      if (n < min) {
        ctx.addIssue({ code: 'custom', message: `${name} must be at least ${min} (got ${n})` });
        return z.NEVER;
      }
      return n;
    })
    .meta({ bounds: max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `${min}–${max}` });

const metadataName = (name: string, fallback: string) =>
  z
    .string()
    .default(fallback)
    .meta({ bounds: '1–40 letters, digits, `_` `.` `-`' })
    .refine((v) => /^[A-Za-z0-9_.-]{1,40}$/.test(v), {
      message: `${name} must be a Stripe metadata key: 1-40 characters of letters, digits, _ . -`,
    });

/**
 * A URL the WHATWG parser accepts, with one of `protocols`, a port in 1..65535 when
 * one is given, and (unless `credentials`) no `user:password@`. Returns the problem, or null.
 */
export function urlProblem(
  value: string,
  protocols: readonly string[],
  options: { credentials: boolean; host: boolean },
): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL that can be parsed (check the port, brackets and special characters; percent-encode them in a password)';
  }
  if (!protocols.includes(url.protocol)) return `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`;
  if (options.host && url.hostname === '') return 'must name a host';
  if (url.port !== '' && (Number(url.port) < 1 || Number(url.port) > 65_535)) return 'has a port outside 1..65535';
  if (!options.credentials && (url.username !== '' || url.password !== '')) {
    return 'must not contain credentials (user:password@): they cannot be sent that way and would end up in logs';
  }
  return null;
}

/**
 * An optional URL variable (urlProblem's rules; `pathless`: scheme, host and port only).
 * The value is echoed in an error only with `echo`, and then never with credentials in it.
 */
export const url = (
  name: string,
  protocols: readonly string[],
  example: string,
  options: { credentials: boolean; host: boolean; pathless?: boolean; echo?: boolean },
) =>
  z
    .string()
    .optional()
    .superRefine((value, ctx) => {
      if (value === undefined) return;
      let problem = urlProblem(value, protocols, options);
      if (!problem && options.pathless) {
        const parsed = new URL(value);
        if ((parsed.pathname !== '/' && parsed.pathname !== '') || parsed.search || parsed.hash) {
          problem = 'must be a scheme, host and optional port only, without a path or query';
        }
      }
      // Not echoed unless asked: it may hold a password or be a secret itself.
      const got = options.echo ? ` (got "${value.includes('@') ? '[a URL with credentials]' : value}")` : '';
      if (problem) ctx.addIssue({ code: 'custom', message: `${name} ${problem}, such as ${example}${got}` });
    });

/**
 * An optional variable read by `parse`: its value, or what is wrong with it (said after the
 * variable's name); unset: null.
 */
const parsedOrNull = <T>(name: string, parse: (text: string) => { value: T } | { problem: string }) =>
  z
    .string()
    .optional()
    .transform((text, ctx): T | null => {
      if (text === undefined) return null;
      const parsed = parse(text);
      if ('problem' in parsed) {
        ctx.addIssue({ code: 'custom', message: `${name} ${parsed.problem}` });
        return z.NEVER;
      }
      return parsed.value;
    });

/** Comma-separated names of people (SWEEPER_UI_RESOLVERS), each as `personName` accepts it. */
function personNames(text: string): { value: string[] } | { problem: string } {
  const names: string[] = [];
  for (const item of text.split(',').filter((n) => n.trim() !== '')) {
    const checked = personName(item);
    if ('problem' in checked) return { problem: `holds a name that ${checked.problem}` };
    names.push(checked.name);
  }
  return { value: names };
}

/** One person's name (SWEEPER_ACTOR). */
function onePersonName(text: string): { value: string } | { problem: string } {
  const checked = personName(text);
  return 'problem' in checked ? checked : { value: checked.name };
}

/** A share of a whole, written as a percentage such as `5%` (or `0.5%`); a fraction in (0, 1]. */
const percentage = (name: string, fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const match = /^\s*(\d+(?:\.\d+)?)\s*%\s*$/.exec(text);
      const value = match ? Number(match[1]) : NaN;
      if (!(value > 0 && value <= 100)) {
        ctx.addIssue({
          code: 'custom',
          message: `${name} must be a percentage above 0% and at most 100%, such as 5% (got "${text}")`,
        });
        return z.NEVER;
      }
      return value / 100;
    })
    .meta({ fallback, bounds: 'above 0%, at most 100%' });

/**
 * A backfill's deadline when SWEEPER_RUN_DEADLINE is not set: 5h50m, below the 6 hours
 * of jobs/k8s/backfill-job.yaml. A backfill stopped there resumes from its last slice.
 */
export const DEFAULT_BACKFILL_DEADLINE_MS = 350 * MINUTE_MS;

/** The review page's sign-in token: long enough that guessing it is hopeless. */
export const MIN_UI_TOKEN_LENGTH = 16;

const hoursAndMinutes = (ms: number) => `${Math.floor(ms / HOUR_MS)}h${Math.round((ms % HOUR_MS) / MINUTE_MS)}m`;

const envSchema = z.object({
  DATABASE_URL: url('DATABASE_URL', ['postgres:', 'postgresql:'], 'postgres://user:password@host:5432/db', {
    credentials: true,
    host: false,
  }).describe(
    'PostgreSQL URL; required by every command but `demo`; an unparseable URL or a port outside 1–65535 is refused',
  ),
  STRIPE_API_KEY: z
    .string()
    .optional()
    .refine((v) => v === undefined || /^(sk|rk)_(test|live)_[A-Za-z0-9]+$/.test(v), {
      message: 'STRIPE_API_KEY must be a Stripe secret or restricted key (sk_… or rk_…)',
    })
    .describe(
      '`sk_…` or restricted `rk_…` (Charges read; `run` also Events read: [the key](operations.md#the-stripe-key)); required by `run`, `backfill` and `schedule`',
    ),
  STRIPE_API_BASE: url('STRIPE_API_BASE', ['http:', 'https:'], 'http://127.0.0.1:12111', {
    credentials: false,
    host: true,
    pathless: true,
  }).describe(
    'unset: Stripe. `scheme://host[:port]`, e.g. `http://127.0.0.1:12111` for stripe-mock or the double; no path, no credentials, port 1–65535',
  ),
  SWEEPER_CLAIM_LEASE: duration('SWEEPER_CLAIM_LEASE').describe(
    'how long one attempt holds an `in_flight` claim; longer than a Stripe call with retries (20 s timeout × 3)',
  ),
  SWEEPER_RETENTION: duration('SWEEPER_RETENTION').describe(
    'claims and mirror kept this long; partitions exist this far behind and as far ahead, at most 31 days; `expire` refuses less than 24 h + `SWEEPER_RETRY_HORIZON`',
  ),
  SWEEPER_MAX_AMOUNT: positiveInt('SWEEPER_MAX_AMOUNT', '99999999').describe(
    'largest amount (minor units) the claim library accepts',
  ),
  SWEEPER_METADATA_TENANT_KEY: metadataName('SWEEPER_METADATA_TENANT_KEY', 'tenant_id').describe(
    'Stripe metadata key carrying the tenant',
  ),
  SWEEPER_METADATA_IDEMPOTENCY_KEY: metadataName('SWEEPER_METADATA_IDEMPOTENCY_KEY', 'idempotency_key').describe(
    "Stripe metadata key carrying the caller's key; must differ from `SWEEPER_METADATA_TENANT_KEY`",
  ),
  SWEEPER_ACCOUNTS: z
    .string()
    .default('platform')
    .refine((v) => v.split(',').every((a) => /^(platform|connected|acct_[A-Za-z0-9]+)$/.test(a.trim())), {
      message:
        'SWEEPER_ACCOUNTS must be a comma-separated list of "platform", "connected" (every connected account) and Stripe account ids (acct_…)',
    })
    .describe(
      'comma-separated: `platform`, Connect `acct_…` ids, and `connected`: every connected account Stripe lists, discovered each run ([Platforms](platforms.md)); each account has its own watermark and lock',
    ),
  SWEEPER_SETTLE: duration('SWEEPER_SETTLE').describe(
    'work younger than this is not judged; must be ≥ `SWEEPER_CLAIM_LEASE` + 1m',
  ),
  SWEEPER_OVERLAP: duration('SWEEPER_OVERLAP').describe('how far behind the watermark a run starts'),
  SWEEPER_SLICE: duration('SWEEPER_SLICE').describe(
    'listing and progress unit, and the longest span one transaction judges',
  ),
  SWEEPER_FIRST_RUN_LOOKBACK: duration('SWEEPER_FIRST_RUN_LOOKBACK').describe(
    "where an account's first scheduled run starts; older history: `backfill`",
  ),
  SWEEPER_RETRY_HORIZON: duration('SWEEPER_RETRY_HORIZON').describe(
    'how long after a first attempt callers may still retry; retention must be ≥ 24 h + this',
  ),
  SWEEPER_SHUTDOWN_GRACE: duration('SWEEPER_SHUTDOWN_GRACE').describe(
    'after SIGTERM, how long the slice in progress may take before the process exits anyway',
  ),
  SWEEPER_RUN_DEADLINE: duration('SWEEPER_RUN_DEADLINE').describe(
    'after this the run stops as on SIGTERM (the slice in progress finishes or rolls back, the run is recorded ' +
      `\`interrupted\`, exit 1). Unset: the default for \`run\`, ${hoursAndMinutes(DEFAULT_BACKFILL_DEADLINE_MS)} for ` +
      "`backfill`, below the CronJob's `activeDeadlineSeconds` (14 min) and the backfill Job's (6 h); set, it applies to both",
  ),
  SWEEPER_REQUEST_DEADLINE: duration('SWEEPER_REQUEST_DEADLINE').describe(
    'total time of one Stripe request: connection, headers and body, not only idle gaps; retried once, then its window fails',
  ),
  SWEEPER_DB_LOCK_TIMEOUT: duration('SWEEPER_DB_LOCK_TIMEOUT').describe(
    'PostgreSQL `lock_timeout` of every session: a longer lock wait fails the slice (exit 1)',
  ),
  SWEEPER_DB_STATEMENT_TIMEOUT: duration('SWEEPER_DB_STATEMENT_TIMEOUT').describe(
    '`statement_timeout` of every session (`migrate`: none, and no lock limit)',
  ),
  SWEEPER_DB_IDLE_IN_TRANSACTION_TIMEOUT: duration('SWEEPER_DB_IDLE_IN_TRANSACTION_TIMEOUT').describe(
    "`idle_in_transaction_session_timeout`: the server ends a session frozen in a transaction and frees its locks. A dry run keeps its transaction open while it lists each slice: keep this above a slice's listing time",
  ),
  SWEEPER_EVENTS_LAG: duration('SWEEPER_EVENTS_LAG').describe(
    'scheduled runs read change events up to now − this (the Events API is eventually consistent)',
  ),
  SWEEPER_EVENTS_OVERLAP: duration('SWEEPER_EVENTS_OVERLAP').describe(
    'each events read starts this far before the cursor again',
  ),
  SWEEPER_DEEP_READ_EVERY: duration('SWEEPER_DEEP_READ_EVERY').describe(
    'how often a scheduled run re-lists the last `SWEEPER_DEEP_READ_DAYS` and compares them with the mirror',
  ),
  SWEEPER_MAX_LAG: duration('SWEEPER_MAX_LAG').describe(
    'a watermark or events cursor further behind than this alerts (`reconciliation_lag`, [Completeness](judgement.md#completeness)), even with nothing open; longer than `SWEEPER_SETTLE` and `SWEEPER_EVENTS_LAG`',
  ),
  SWEEPER_PROGRESS_INTERVAL: duration('SWEEPER_PROGRESS_INTERVAL').describe(
    'when stderr is not a terminal, a progress log line this often during a sweep ([Seeing a run](operations.md#seeing-a-run))',
  ),
  SWEEPER_DEEP_READ_DAYS: positiveInt('SWEEPER_DEEP_READ_DAYS', '3', 30).describe(
    'how many days the deep re-read covers',
  ),
  // Below 100, a batch costs more statements than it saves memory.
  SWEEPER_BATCH_CHARGES: positiveInt('SWEEPER_BATCH_CHARGES', '2000', 100_000, 100).describe(
    "the most charges created in a slice that one transaction judges: a denser slice is judged in parts of at most this many, each committed and checkpointed on its own ([Dense slices](performance.md#dense-slices-judged-in-parts)); bounds a batch's memory",
  ),
  SWEEPER_STRIPE_RATE: positiveInt('SWEEPER_STRIPE_RATE', '25', 1000).describe(
    "Stripe requests per second per account and endpoint (`GET /v1/charges` of one account is one): Stripe's limit; a 429 naming it pauses that account's endpoint; above 25 only where Stripe raised your limit, or against a double",
  ),
  SWEEPER_STRIPE_GLOBAL_RATE: positiveInt('SWEEPER_STRIPE_GLOBAL_RATE', '50', 10_000)
    .meta({ fallback: '50, or `SWEEPER_STRIPE_RATE` when higher', bounds: '1–10000' })
    .describe(
      "Stripe requests per second of the whole process, every account and endpoint together (Stripe's limit per key is 100 in live mode, 25 in test mode, shared with your payment traffic); with `--shard I/N` each shard takes 1/N of it; a 429 naming it pauses every request ([Platforms](platforms.md#two-rate-budgets))",
    ),
  SWEEPER_ACCOUNT_CONCURRENCY: positiveInt('SWEEPER_ACCOUNT_CONCURRENCY', '8', 64).describe(
    'accounts with something to judge swept at once by a scheduled run or a backfill (each holds a database connection while it judges); accounts with nothing new are settled in groups besides them; a dry run sweeps one at a time',
  ),
  SWEEPER_STORED_ANSWER: z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (text === undefined) return null;
      const mapping = parseStoredAnswerMapping(text);
      if (typeof mapping === 'string') {
        ctx.addIssue({ code: 'custom', message: `SWEEPER_STORED_ANSWER ${mapping}` });
        return z.NEVER;
      }
      return mapping;
    })
    .describe(
      'a writer\'s own stored-answer shape, as JSON: the dotted path of the field naming the charge (`charge`) and of the field saying how the request ended (`outcome`, with its `success`, `pending` and `declined` values), e.g. `{"charge": "order.charge_id", "outcome": "state", "success": ["paid"]}`; unset: Stripe\'s objects and the claim library\'s shape only ([Stored answers](judgement.md#stored-answers))',
    ),
  SWEEPER_METADATA_REFERENCE_KEY: metadataName('SWEEPER_METADATA_REFERENCE_KEY', 'order_id').describe(
    'Stripe metadata key carrying the business reference (the order, invoice or booking a payment is for); must differ from the tenant and key names',
  ),
  SWEEPER_DUPLICATE_LOOKBACK: duration('SWEEPER_DUPLICATE_LOOKBACK').describe(
    'two payments for one reference are a `duplicate_effect` when created within this of each other; at most `SWEEPER_RETENTION` ([Duplicate payments](judgement.md#duplicate-payments-for-one-order))',
  ),
  SWEEPER_SUSPECT_WINDOW: durationOrOff('SWEEPER_SUSPECT_WINDOW').describe(
    'two payments without a reference, by one customer or card, for the same amount, are a `suspected_duplicate` when created within this of each other; `0` turns it off',
  ),
  SWEEPER_PAYOUT_GRACE: duration('SWEEPER_PAYOUT_GRACE').describe(
    'a succeeded payment older than this, on an account with automatic payouts, whose charge is in no reconciled payout is an `unpaid_effect`; each run also lists the payouts created this far back ([Payouts and fees](judgement.md#payouts-and-fees))',
  ),
  SWEEPER_PAYOUT_EVERY: duration('SWEEPER_PAYOUT_EVERY').describe(
    "how often a scheduled run lists the account's payouts (one request when nothing is new); the runs in between send no payout request ([Payouts and fees](judgement.md#payouts-and-fees))",
  ),
  SWEEPER_CLAIM_QUOTA: z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (text === undefined) return null;
      const n = Number(text);
      if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n <= 0 || n > 1_000_000) {
        ctx.addIssue({
          code: 'custom',
          message: `SWEEPER_CLAIM_QUOTA must be a whole number of claims per minute per tenant, 1 to 1000000 (got "${text}")`,
        });
        return z.NEVER;
      }
      return n;
    })
    .meta({ bounds: '1–1000000; unset: no quota' })
    .describe(
      'the claim library: claims per minute one tenant may take; past it the answer is 429 `quota_exceeded` with `Retry-After`, and nothing is claimed or charged ([claim library](claim-library.md#bounded-claims-per-tenant))',
    ),
  SWEEPER_MAX_REPAIR_SHARE: percentage('SWEEPER_MAX_REPAIR_SHARE', '5%').describe(
    'the repair brake: a run stops before repairing more than this share of what it judged in one category',
  ),
  SWEEPER_LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      message: 'SWEEPER_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent',
    })
    .default('info')
    .describe(
      'pino level. Unset, a terminal with pretty logs shows warnings and up and the few info lines an operator acts on ([Seeing a run](operations.md#seeing-a-run)); set, it shows that level everywhere',
    ),
  SWEEPER_LOG_FORMAT: z
    .enum(['json', 'pretty'], {
      message: 'SWEEPER_LOG_FORMAT must be json or pretty (unset: pretty when stderr is a terminal, JSON otherwise)',
    })
    .optional()
    .describe(
      '`pretty` (pino-pretty, coloured on a terminal) or `json`; unset: pretty when stderr is a terminal, JSON otherwise',
    ),
  SWEEPER_UI_TOKEN: z
    .string()
    .optional()
    .refine((v) => v === undefined || v.trim().length >= MIN_UI_TOKEN_LENGTH, {
      // The value is not echoed: it is a secret.
      message: `SWEEPER_UI_TOKEN must be at least ${MIN_UI_TOKEN_LENGTH} characters, such as the output of openssl rand -base64 32`,
    })
    .meta({ bounds: `≥ ${MIN_UI_TOKEN_LENGTH} characters` })
    .describe(
      '`sweeper serve`: the shared sign-in token of the review page (a secret: compared in constant time, never logged); each person signs in with it and their name ([the review page](review.md#signing-in))',
    ),
  SWEEPER_UI_TRUSTED_HEADER: z
    .string()
    .optional()
    .refine((v) => v === undefined || /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(v.trim()), {
      message: 'SWEEPER_UI_TRUSTED_HEADER must be an HTTP header name such as X-Forwarded-User',
    })
    .meta({ bounds: 'an HTTP header name' })
    .describe(
      '`sweeper serve`: the header in which an auth proxy names the signed-in person (e.g. `X-Forwarded-User`); honoured only from `SWEEPER_UI_TRUSTED_PROXIES`, ignored from any other address',
    ),
  SWEEPER_UI_TRUSTED_PROXIES: parsedOrNull('SWEEPER_UI_TRUSTED_PROXIES', (text) => {
    const entries = parseAddressList(text);
    return typeof entries === 'string' ? { problem: entries } : { value: entries };
  })
    .meta({ bounds: 'IP addresses and CIDR networks, comma-separated' })
    .describe(
      '`sweeper serve`: the auth proxies and TLS terminators in front of the page (e.g. `10.0.0.5,10.1.0.0/16`): only their `SWEEPER_UI_TRUSTED_HEADER` and `X-Forwarded-Proto`/`-For` are believed',
    ),
  SWEEPER_UI_RESOLVERS: parsedOrNull('SWEEPER_UI_RESOLVERS', personNames)
    .meta({ bounds: 'names, comma-separated' })
    .describe(
      '`sweeper serve`: who may resolve, ignore and mark findings not a duplicate, and approve and apply saved plans (names as they sign in, or as the proxy header gives them; case does not matter); everyone else reads. Unset: nobody changes anything (with `--insecure-local`: the local actor may)',
    ),
  SWEEPER_ACTOR: parsedOrNull('SWEEPER_ACTOR', onePersonName)
    .meta({ bounds: `1–${MAX_NAME_LENGTH} characters, not \`${AUTOMATIC_ACTOR}\`` })
    .describe(
      "who a person's action is recorded as when nothing else names them: `sweeper serve --insecure-local`'s one user, and a plan's author, approver or applier without `--by`; unset: the OS user",
    ),
});

const MIN_SETTLE_GRACE_MS = MINUTE_MS;

/** The SWEEPER_ACCOUNTS entry that stands for every connected account Stripe lists. */
export const CONNECTED = 'connected';

export interface Config {
  databaseUrl: string | undefined;
  stripeApiKey: string | undefined;
  stripeApiBase: string | undefined;
  /** How long an attempt holds an `in_flight` claim before another may steal it. */
  claimLeaseMs: number;
  retentionMs: number;
  /** Largest amount, in minor units, the claim library accepts. */
  maxAmount: number;
  metadataKeys: MetadataNames;
  logLevel: string;
  /** SWEEPER_LOG_LEVEL was set: on a terminal too, every line at that level (cli/log-output.ts). */
  logLevelSet: boolean;
  /** Forced log format; unset, the CLI picks pretty on a terminal and JSON otherwise. */
  logFormat: 'json' | 'pretty' | undefined;
  /** When stderr is not a terminal, a progress log line this often during a sweep. */
  progressIntervalMs: number;
  /** Stripe accounts named in SWEEPER_ACCOUNTS: `platform` and/or Connect `acct_…` ids (not `connected`). */
  accounts: string[];
  /** Work younger than this is not judged: it may still be in flight. ≥ lease + 1 minute. */
  settleMs: number;
  /** How far behind the watermark a scheduled run starts again. */
  overlapMs: number;
  /** Unit of listing and progress: each slice is listed once, and judged in one or more batches. */
  sliceMs: number;
  /** The most charges created in a slice that one batch (one transaction) judges; a denser slice is judged in parts. */
  batchCharges: number;
  firstRunLookbackMs: number;
  /** `connected` in SWEEPER_ACCOUNTS: every connected account Stripe lists is swept too. */
  discoverConnected: boolean;
  /** Stripe requests per second per account and endpoint. */
  stripeRatePerSecond: number;
  /** Stripe requests per second of the whole process (every account and endpoint). */
  stripeGlobalRatePerSecond: number;
  /** Accounts with something to judge swept at once. */
  accountConcurrency: number;
  /** How long after a first attempt callers may still retry; retention must cover 24 h plus this. */
  retryHorizonMs: number;
  /** After SIGTERM, how long the current slice may take before the process exits anyway. */
  shutdownGraceMs: number;
  /** After this, `run` stops as on SIGTERM (below the CronJob's activeDeadlineSeconds). */
  runDeadlineMs: number;
  /** The same for `backfill`: SWEEPER_RUN_DEADLINE when set, else below backfill-job.yaml's deadline. */
  backfillDeadlineMs: number;
  /** Total time one Stripe request may take, headers and body. */
  requestDeadlineMs: number;
  /** PostgreSQL session limits of the sweeper's own connections (src/db/pool.ts). */
  db: DbTimeouts;
  /** Late changes (docs/judgement.md): events younger than the lag wait; each read re-reads the overlap. */
  eventsLagMs: number;
  eventsOverlapMs: number;
  /** How often, and how many days back, the deep re-read compares Stripe with the mirror. */
  deepReadEveryMs: number;
  deepReadDays: number;
  /** A watermark or events cursor further behind than this alerts (a stalled sweeper pages even with nothing open). */
  maxLagMs: number;
  /** A writer's own stored-answer shape (docs/judgement.md "Stored answers"); null when not set. */
  storedAnswer: StoredAnswerMapping | null;
  /** The repair brake: a run stops before repairing more than this share of what it judged in one category. */
  maxRepairShare: number;
  /** Payments for one reference created within this of each other are duplicates (duplicate_effect). */
  duplicateLookbackMs: number;
  /** Payments without a reference, one customer or card, within this: suspected_duplicate; 0 = off. */
  suspectWindowMs: number;
  /** A succeeded payment older than this whose charge is in no payout: unpaid_effect; payouts listed this far back. */
  payoutGraceMs: number;
  /** Scheduled runs list an account's payouts at most this often. */
  payoutEveryMs: number;
}

/** The metadata names under which the claim library records a charge's tenant, key and reference. */
export interface MetadataNames {
  tenantId: string;
  idempotencyKey: string;
  reference: string;
}

export interface DbTimeouts {
  lockTimeoutMs: number;
  statementTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
}

/** The variables the claim library shares with the sweep, so both agree on the lease and the metadata names. */
const claimEnvSchema = envSchema.pick({
  SWEEPER_CLAIM_LEASE: true,
  SWEEPER_MAX_AMOUNT: true,
  SWEEPER_METADATA_TENANT_KEY: true,
  SWEEPER_METADATA_IDEMPOTENCY_KEY: true,
  SWEEPER_METADATA_REFERENCE_KEY: true,
  SWEEPER_CLAIM_QUOTA: true,
});

/**
 * Unset and empty variables alike take their defaults; the first problem is thrown as a
 * ConfigError naming its variable. `trim`: surrounding white space is dropped first (a
 * value of spaces is unset), as the alert and metrics variables have always been read.
 */
export function parseEnv<S extends z.ZodType>(
  schema: S,
  env: Readonly<Record<string, string | undefined>>,
  options: { trim?: boolean } = {},
): z.output<S> {
  const nonEmpty = Object.fromEntries(
    Object.entries(env)
      .map(([k, v]) => [k, options.trim ? v?.trim() : v] as const)
      .filter(([, v]) => v !== undefined && v !== ''),
  );
  const parsed = schema.safeParse(nonEmpty);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const variable = first?.path.join('.') || 'environment';
    const message = first?.message ?? 'is invalid';
    // Messages name their variable first; one that does not gets it as a prefix.
    throw new ConfigError(message.startsWith(`${variable} `) ? message : `${variable}: ${message}`);
  }
  return parsed.data;
}

function metadataKeysOf(e: {
  SWEEPER_METADATA_TENANT_KEY: string;
  SWEEPER_METADATA_IDEMPOTENCY_KEY: string;
  SWEEPER_METADATA_REFERENCE_KEY: string;
}): MetadataNames {
  if (e.SWEEPER_METADATA_TENANT_KEY === e.SWEEPER_METADATA_IDEMPOTENCY_KEY) {
    throw new ConfigError('SWEEPER_METADATA_TENANT_KEY and SWEEPER_METADATA_IDEMPOTENCY_KEY must differ');
  }
  if ([e.SWEEPER_METADATA_TENANT_KEY, e.SWEEPER_METADATA_IDEMPOTENCY_KEY].includes(e.SWEEPER_METADATA_REFERENCE_KEY)) {
    throw new ConfigError(
      'SWEEPER_METADATA_REFERENCE_KEY must differ from SWEEPER_METADATA_TENANT_KEY and SWEEPER_METADATA_IDEMPOTENCY_KEY',
    );
  }
  return {
    tenantId: e.SWEEPER_METADATA_TENANT_KEY,
    idempotencyKey: e.SWEEPER_METADATA_IDEMPOTENCY_KEY,
    reference: e.SWEEPER_METADATA_REFERENCE_KEY,
  };
}

/** What the claim library takes from the environment (src/claims/index.ts `claimSettingsFromEnv`). */
export interface ClaimSettings {
  leaseMs: number;
  maxAmount: number;
  metadataKeys: MetadataNames;
  /** Claims per minute one tenant may take; null: no quota. */
  quotaPerMinute: number | null;
}

/**
 * The claim library's settings: only SWEEPER_CLAIM_LEASE, SWEEPER_MAX_AMOUNT and
 * SWEEPER_METADATA_*, read and checked exactly as `loadConfig` reads them. The payment
 * service that embeds the library does not depend on the sweep's other variables.
 */
export function loadClaimSettings(env: NodeJS.ProcessEnv = process.env): ClaimSettings {
  const e = parseEnv(claimEnvSchema, env);
  return {
    leaseMs: e.SWEEPER_CLAIM_LEASE,
    maxAmount: e.SWEEPER_MAX_AMOUNT,
    metadataKeys: metadataKeysOf(e),
    quotaPerMinute: e.SWEEPER_CLAIM_QUOTA,
  };
}

/** What `sweeper serve` reads besides the sweep's configuration (docs/review.md). */
export interface ReviewSettings {
  /** The shared sign-in token; null: no token sign-in. */
  token: string | null;
  /** The auth proxy's header naming the person, lower-cased; null: none. */
  trustedHeader: string | null;
  /** The proxies whose forwarded headers are believed; empty: none. */
  trustedProxies: AddressEntry[];
  /** Who may change anything; everyone else reads. */
  resolvers: string[];
  /** SWEEPER_ACTOR: the actor of `--insecure-local` (and of plan commands without `--by`); null: the OS user. */
  actor: string | null;
}

const reviewEnvSchema = envSchema.pick({
  SWEEPER_UI_TOKEN: true,
  SWEEPER_UI_TRUSTED_HEADER: true,
  SWEEPER_UI_TRUSTED_PROXIES: true,
  SWEEPER_UI_RESOLVERS: true,
  SWEEPER_ACTOR: true,
});

/**
 * The review page's variables, each checked as `loadConfig` checks it, and together: a
 * trusted header needs the proxies it is trusted from. Whether any authentication is
 * configured at all is `sweeper serve`'s to decide (it may run `--insecure-local`).
 */
export function loadReviewSettings(env: NodeJS.ProcessEnv = process.env): ReviewSettings {
  registerSecretsFromEnv(env);
  const e = parseEnv(reviewEnvSchema, env);
  const trustedHeader = e.SWEEPER_UI_TRUSTED_HEADER?.trim().toLowerCase() ?? null;
  if (trustedHeader !== null && e.SWEEPER_UI_TRUSTED_PROXIES === null) {
    throw new ConfigError(
      'SWEEPER_UI_TRUSTED_HEADER is set but SWEEPER_UI_TRUSTED_PROXIES is not: set it to the addresses of the auth proxy, ' +
        'or anyone could send the header',
    );
  }
  return {
    token: e.SWEEPER_UI_TOKEN?.trim() ?? null,
    trustedHeader,
    trustedProxies: e.SWEEPER_UI_TRUSTED_PROXIES ?? [],
    resolvers: e.SWEEPER_UI_RESOLVERS ?? [],
    actor: e.SWEEPER_ACTOR,
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Before anything can fail: no message about a bad value may carry a secret.
  registerSecretsFromEnv(env);
  const e = parseEnv(envSchema, env);
  const metadataKeys = metadataKeysOf(e);
  const named = [...new Set(e.SWEEPER_ACCOUNTS.split(',').map((a) => a.trim()))];
  const accounts = named.filter((a) => a !== CONNECTED);
  // Unset, one account alone never waits on the global budget (SWEEPER_STRIPE_RATE set high for a raised limit).
  const globalSet = env.SWEEPER_STRIPE_GLOBAL_RATE !== undefined && env.SWEEPER_STRIPE_GLOBAL_RATE.trim() !== '';
  const globalRate = globalSet
    ? e.SWEEPER_STRIPE_GLOBAL_RATE
    : Math.max(e.SWEEPER_STRIPE_GLOBAL_RATE, e.SWEEPER_STRIPE_RATE);
  if (e.SWEEPER_SETTLE < e.SWEEPER_CLAIM_LEASE + MIN_SETTLE_GRACE_MS) {
    throw new ConfigError(
      `SWEEPER_SETTLE (${formatDuration(e.SWEEPER_SETTLE)}) must be at least SWEEPER_CLAIM_LEASE (${formatDuration(e.SWEEPER_CLAIM_LEASE)}) ` +
        'plus 1m, or the sweep would judge claims whose attempt may still be running',
    );
  }
  // Unset, the lookback is the default or the retention, whichever is shorter.
  const lookbackSet = env.SWEEPER_DUPLICATE_LOOKBACK !== undefined && env.SWEEPER_DUPLICATE_LOOKBACK !== '';
  if (!lookbackSet) e.SWEEPER_DUPLICATE_LOOKBACK = Math.min(e.SWEEPER_DUPLICATE_LOOKBACK, e.SWEEPER_RETENTION);
  if (e.SWEEPER_DUPLICATE_LOOKBACK > e.SWEEPER_RETENTION) {
    throw new ConfigError(
      `SWEEPER_DUPLICATE_LOOKBACK (${formatDuration(e.SWEEPER_DUPLICATE_LOOKBACK)}) must be at most SWEEPER_RETENTION (${formatDuration(e.SWEEPER_RETENTION)}): ` +
        'the mirror keeps charges that long',
    );
  }
  const leastLag = Math.max(e.SWEEPER_SETTLE, e.SWEEPER_EVENTS_LAG);
  if (e.SWEEPER_MAX_LAG <= leastLag) {
    throw new ConfigError(
      `SWEEPER_MAX_LAG (${formatDuration(e.SWEEPER_MAX_LAG)}) must be longer than SWEEPER_SETTLE (${formatDuration(e.SWEEPER_SETTLE)}) ` +
        `and SWEEPER_EVENTS_LAG (${formatDuration(e.SWEEPER_EVENTS_LAG)}): right after a run the watermark and the events cursor are that far behind, ` +
        'so the reconciliation_lag alert would never clear',
    );
  }
  return {
    databaseUrl: e.DATABASE_URL,
    stripeApiKey: e.STRIPE_API_KEY,
    stripeApiBase: e.STRIPE_API_BASE,
    claimLeaseMs: e.SWEEPER_CLAIM_LEASE,
    retentionMs: e.SWEEPER_RETENTION,
    maxAmount: e.SWEEPER_MAX_AMOUNT,
    metadataKeys,
    logLevel: e.SWEEPER_LOG_LEVEL,
    logLevelSet: env.SWEEPER_LOG_LEVEL !== undefined && env.SWEEPER_LOG_LEVEL !== '',
    logFormat: e.SWEEPER_LOG_FORMAT,
    progressIntervalMs: e.SWEEPER_PROGRESS_INTERVAL,
    accounts,
    settleMs: e.SWEEPER_SETTLE,
    overlapMs: e.SWEEPER_OVERLAP,
    sliceMs: e.SWEEPER_SLICE,
    batchCharges: e.SWEEPER_BATCH_CHARGES,
    firstRunLookbackMs: e.SWEEPER_FIRST_RUN_LOOKBACK,
    discoverConnected: named.includes(CONNECTED),
    stripeRatePerSecond: e.SWEEPER_STRIPE_RATE,
    stripeGlobalRatePerSecond: globalRate,
    accountConcurrency: e.SWEEPER_ACCOUNT_CONCURRENCY,
    retryHorizonMs: e.SWEEPER_RETRY_HORIZON,
    shutdownGraceMs: e.SWEEPER_SHUTDOWN_GRACE,
    runDeadlineMs: e.SWEEPER_RUN_DEADLINE,
    backfillDeadlineMs:
      env.SWEEPER_RUN_DEADLINE === undefined || env.SWEEPER_RUN_DEADLINE === ''
        ? DEFAULT_BACKFILL_DEADLINE_MS
        : e.SWEEPER_RUN_DEADLINE,
    requestDeadlineMs: e.SWEEPER_REQUEST_DEADLINE,
    db: {
      lockTimeoutMs: e.SWEEPER_DB_LOCK_TIMEOUT,
      statementTimeoutMs: e.SWEEPER_DB_STATEMENT_TIMEOUT,
      idleInTransactionTimeoutMs: e.SWEEPER_DB_IDLE_IN_TRANSACTION_TIMEOUT,
    },
    eventsLagMs: e.SWEEPER_EVENTS_LAG,
    eventsOverlapMs: e.SWEEPER_EVENTS_OVERLAP,
    deepReadEveryMs: e.SWEEPER_DEEP_READ_EVERY,
    deepReadDays: e.SWEEPER_DEEP_READ_DAYS,
    maxLagMs: e.SWEEPER_MAX_LAG,
    storedAnswer: e.SWEEPER_STORED_ANSWER,
    maxRepairShare: e.SWEEPER_MAX_REPAIR_SHARE,
    duplicateLookbackMs: e.SWEEPER_DUPLICATE_LOOKBACK,
    suspectWindowMs: e.SWEEPER_SUSPECT_WINDOW,
    payoutGraceMs: e.SWEEPER_PAYOUT_GRACE,
    payoutEveryMs: e.SWEEPER_PAYOUT_EVERY,
  };
}

let defaults: Readonly<Config> | undefined;

/**
 * The configuration with nothing set: every default as the schema defines it, for
 * callers that are not the CLI (src/sweep/types.ts `sweepOptions`).
 */
export function configDefaults(): Readonly<Config> {
  defaults ??= loadConfig({});
  return defaults;
}

/** One variable of the schema as docs/configuration.md shows it. */
export interface ConfigVariable {
  name: string;
  /** As an operator writes it (`10m`, `25`, `platform`); undefined when unset means "not set". */
  fallback: string | undefined;
  /** The values accepted, when the schema bounds them. */
  bounds: string | undefined;
  description: string;
}

/**
 * Every variable `loadConfig` reads, in the schema's order, with its default, bounds and
 * description read from the schema itself: the source of docs/configuration.md's table.
 * Throws for a variable without a description, so none is added undocumented.
 */
export function configVariables(shape: Readonly<Record<string, z.ZodType>> = envSchema.shape): ConfigVariable[] {
  return Object.entries(shape).map(([name, schema]) => {
    const meta = schema.meta() ?? {};
    if (typeof meta.description !== 'string' || meta.description.trim() === '') {
      throw new Error(`${name} has no description in src/config.ts: add .describe('…') to its schema entry`);
    }
    const parsed = schema.safeParse(undefined);
    const fallback =
      typeof meta.fallback === 'string'
        ? meta.fallback
        : parsed.success && parsed.data !== undefined && parsed.data !== null
          ? String(parsed.data)
          : undefined;
    const inner = schema instanceof z.ZodDefault || schema instanceof z.ZodOptional ? schema.unwrap() : schema;
    const bounds =
      typeof meta.bounds === 'string'
        ? meta.bounds
        : inner instanceof z.ZodEnum
          ? `one of ${inner.options.map((o) => `\`${String(o)}\``).join(', ')}`
          : undefined;
    return { name, fallback, bounds, description: meta.description };
  });
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

export function redactUrlPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '[unparseable url]';
  }
}
