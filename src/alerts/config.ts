import { ConfigError } from '../errors.js';
import { urlProblem } from '../config.js';
import { registerSecretsFromEnv } from '../secrets.js';
import { formatDuration, parseDuration } from '../time/duration.js';
import { DAY_MS, MINUTE_MS } from '../time/units.js';

/**
 * Alert sinks, each enabled by its own variables; any number at once. The Slack
 * URL, the PagerDuty routing key and the webhook secret are credentials: error
 * messages name the variable but never echo its value.
 */
export interface SlackConfig {
  webhookUrl: string;
}

export interface PagerDutyConfig {
  routingKey: string;
  url: string;
}

export interface WebhookConfig {
  url: string;
  secret: string;
}

export interface AlertConfig {
  slack: SlackConfig | undefined;
  pagerduty: PagerDutyConfig | undefined;
  webhook: WebhookConfig | undefined;
  /** An open, unchanged category is re-sent at most this often. */
  repeatMs: number;
}

export const DEFAULT_PAGERDUTY_URL = 'https://events.pagerduty.com/v2/enqueue';
export const DEFAULT_ALERT_REPEAT = '1h';

export type Env = Readonly<Record<string, string | undefined>>;

/** SWEEPER_ALERT_REPEAT's bounds: not a page a minute, not silence for more than a week. */
export const MIN_ALERT_REPEAT_MS = MINUTE_MS;
export const MAX_ALERT_REPEAT_MS = 7 * DAY_MS;

export function alertConfigFromEnv(env: Env = process.env): AlertConfig {
  // First: a bad value's error must not be the first place its secret shows up.
  registerSecretsFromEnv(env);
  const get = (name: string) => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };

  const slackUrl = get('SWEEPER_SLACK_WEBHOOK_URL');
  if (slackUrl !== undefined) requireHttpUrl('SWEEPER_SLACK_WEBHOOK_URL', slackUrl, { secret: true });

  const routingKey = get('SWEEPER_PAGERDUTY_ROUTING_KEY');
  if (routingKey !== undefined && !/^[A-Za-z0-9_-]{1,128}$/.test(routingKey)) {
    throw new ConfigError(
      'SWEEPER_PAGERDUTY_ROUTING_KEY must be a PagerDuty Events API v2 integration (routing) key: letters and digits',
    );
  }
  const pagerDutyUrl = get('SWEEPER_PAGERDUTY_URL');
  if (pagerDutyUrl !== undefined) {
    requireHttpUrl('SWEEPER_PAGERDUTY_URL', pagerDutyUrl, { secret: false });
    // A URL without a key would silently alert nobody.
    if (routingKey === undefined)
      throw new ConfigError(
        'SWEEPER_PAGERDUTY_ROUTING_KEY must be set with SWEEPER_PAGERDUTY_URL: without it no alert reaches PagerDuty',
      );
  }

  const webhookUrl = get('SWEEPER_WEBHOOK_URL');
  const webhookSecret = get('SWEEPER_WEBHOOK_SECRET');
  if (webhookUrl !== undefined) {
    requireHttpUrl('SWEEPER_WEBHOOK_URL', webhookUrl, { secret: false });
    if (webhookSecret === undefined) {
      throw new ConfigError(
        'SWEEPER_WEBHOOK_SECRET must be set with SWEEPER_WEBHOOK_URL: receivers verify the X-Sweeper-Signature with it',
      );
    }
  }
  if (webhookSecret !== undefined) {
    if (webhookUrl === undefined)
      throw new ConfigError(
        'SWEEPER_WEBHOOK_URL must be set with SWEEPER_WEBHOOK_SECRET: the secret signs posts to it',
      );
    if (webhookSecret.length < 16) throw new ConfigError('SWEEPER_WEBHOOK_SECRET must be at least 16 characters');
  }

  const repeatText = get('SWEEPER_ALERT_REPEAT') ?? DEFAULT_ALERT_REPEAT;
  const repeatMs = parseDuration(repeatText);
  if (repeatMs === undefined || repeatMs <= 0) {
    throw new ConfigError(`SWEEPER_ALERT_REPEAT must be a duration like 90s, 15m, 1h or 7d (got "${repeatText}")`);
  }
  if (repeatMs < MIN_ALERT_REPEAT_MS || repeatMs > MAX_ALERT_REPEAT_MS) {
    throw new ConfigError(
      `SWEEPER_ALERT_REPEAT must be between ${formatDuration(MIN_ALERT_REPEAT_MS)} and ${formatDuration(MAX_ALERT_REPEAT_MS)} (got ${formatDuration(repeatMs)})`,
    );
  }

  return {
    slack: slackUrl === undefined ? undefined : { webhookUrl: slackUrl },
    pagerduty: routingKey === undefined ? undefined : { routingKey, url: pagerDutyUrl ?? DEFAULT_PAGERDUTY_URL },
    webhook:
      webhookUrl === undefined || webhookSecret === undefined ? undefined : { url: webhookUrl, secret: webhookSecret },
    repeatMs,
  };
}

/** The alert configuration as it may appear in logs: which sinks, never their credentials. */
export function describeAlertConfig(config: AlertConfig): Record<string, unknown> {
  return {
    sinks: configuredSinks(config),
    pagerdutyUrl: config.pagerduty?.url,
    webhookHost: config.webhook ? new URL(config.webhook.url).host : undefined,
    repeat: formatDuration(config.repeatMs),
  };
}

export function configuredSinks(config: AlertConfig): Array<'slack' | 'pagerduty' | 'webhook'> {
  const sinks: Array<'slack' | 'pagerduty' | 'webhook'> = [];
  if (config.slack) sinks.push('slack');
  if (config.pagerduty) sinks.push('pagerduty');
  if (config.webhook) sinks.push('webhook');
  return sinks;
}

/** Every value that must never reach a log line or an error message. */
export function alertSecrets(config: AlertConfig): string[] {
  return [config.slack?.webhookUrl, config.pagerduty?.routingKey, config.webhook?.secret].filter(
    (s): s is string => s !== undefined,
  );
}

/**
 * An http(s) URL with a host and a valid port, and no `user:password@`: fetch refuses
 * such a URL, so the sink could never be reached, and the password would travel into
 * every log line that names the URL. The value is echoed only when it is not a secret.
 */
function requireHttpUrl(name: string, value: string, { secret }: { secret: boolean }): void {
  const problem = urlProblem(value, ['https:', 'http:'], { credentials: false, host: true });
  if (!problem) return;
  const got = secret ? '' : ` (got "${value.includes('@') ? '[a URL with credentials]' : value}")`;
  throw new ConfigError(
    problem.startsWith('must start') ? `${name} must be an http(s) URL${got}` : `${name} ${problem}${got}`,
  );
}
