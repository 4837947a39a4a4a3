/**
 * The process's secrets, by value. Redaction by field name (pino's `redact`) misses a
 * secret that arrives inside text: an upstream 401 quoting the API key, a sink's
 * error echoing its own URL, a driver message with a connection string. So every
 * known secret value is registered once at start, and every place where text
 * leaves the process or is stored (logs, stderr, --json, reports, recon_runs.error,
 * alert errors) passes it through `redact`.
 */

export const REDACTED = '[redacted]';

/**
 * Shorter values are not redacted by value: replacing a 3-letter password
 * everywhere would mangle every line and hide nothing worth hiding.
 */
export const MIN_SECRET_LENGTH = 6;

const secrets = new Set<string>();
let ordered: string[] = [];

/** Adds a secret value, in the forms it may appear in: raw, JSON-escaped and percent-encoded. */
export function registerSecret(value: string | null | undefined): void {
  if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH) return;
  const forms = [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)];
  let added = false;
  for (const form of forms) {
    if (form.length >= MIN_SECRET_LENGTH && !secrets.has(form)) {
      secrets.add(form);
      added = true;
    }
  }
  // Longest first, so a secret containing another is replaced whole.
  if (added) ordered = [...secrets].sort((a, b) => b.length - a.length);
}

/** The password (and, if it is long, the user) of a URL such as `postgres://user:pass@host`. */
export function registerUrlCredentials(url: string | null | undefined): void {
  if (!url) return;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return;
  }
  if (parsed.password) {
    registerSecret(parsed.password);
    registerSecret(safeDecode(parsed.password));
    // `user:pass` as it appears in the URL, and as a Basic credential would carry it.
    registerSecret(`${parsed.username}:${parsed.password}`);
    registerSecret(Buffer.from(`${safeDecode(parsed.username)}:${safeDecode(parsed.password)}`).toString('base64'));
  }
}

/** A URL that is itself a credential (Slack's incoming webhook): the whole URL and its path. */
export function registerSecretUrl(url: string | null | undefined): void {
  if (!url) return;
  registerSecret(url);
  try {
    const parsed = new URL(url);
    registerSecret(`${parsed.host}${parsed.pathname}`);
    if (parsed.pathname.length > 1) registerSecret(parsed.pathname);
    registerUrlCredentials(url);
  } catch {
    // Not a URL: the raw value is registered, which is all there is.
  }
}

/** Variables whose whole value is a secret, and variables holding URLs that may carry one. */
export const SECRET_VARIABLES = [
  'STRIPE_API_KEY',
  'SWEEPER_WEBHOOK_SECRET',
  'SWEEPER_PAGERDUTY_ROUTING_KEY',
  'SWEEPER_UI_TOKEN',
] as const;
export const SECRET_URL_VARIABLES = ['SWEEPER_SLACK_WEBHOOK_URL'] as const;
export const URL_VARIABLES = [
  'DATABASE_URL',
  'STRIPE_API_BASE',
  'SWEEPER_WEBHOOK_URL',
  'SWEEPER_PAGERDUTY_URL',
  'SWEEPER_PUSHGATEWAY_URL',
] as const;

/** Registers every secret the environment holds; called first thing by the CLI, before any validation. */
export function registerSecretsFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): void {
  for (const name of SECRET_VARIABLES) registerSecret(env[name]?.trim());
  for (const name of SECRET_URL_VARIABLES) registerSecretUrl(env[name]?.trim());
  for (const name of URL_VARIABLES) registerUrlCredentials(env[name]?.trim());
}

export function redact(text: string): string {
  if (ordered.length === 0 || text.length < MIN_SECRET_LENGTH) return text;
  let out = text;
  for (const secret of ordered) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

/** `redact` applied to every string of a JSON-like value (keys included); the shape is kept. */
export function redactDeep<T>(value: T): T {
  if (ordered.length === 0) return value;
  return walk(value) as T;
}

function walk(value: unknown): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map(walk);
  if (value instanceof Date || value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [redact(k), walk(v)]));
}

/** Tests only: forget every registered secret. */
export function clearSecrets(): void {
  secrets.clear();
  ordered = [];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
