import { z } from 'zod';
import { duration, parseEnv, url } from '../config.js';
import { registerSecretsFromEnv } from '../secrets.js';
import { formatDuration } from '../time/duration.js';

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

export type Env = Readonly<Record<string, string | undefined>>;

const httpUrl = (name: string, example: string, echo: boolean) =>
  // fetch refuses a URL with `user:password@`, so such a sink could never be reached, and
  // the password would travel into every log line that names the URL: refused.
  url(name, ['https:', 'http:'], example, { credentials: false, host: true, echo }).meta({
    bounds: 'http(s) URL, no `user:password@`',
  });

/**
 * The alert variables, read with the sweep's own parser (src/config.ts `parseEnv`):
 * defaults, bounds and descriptions live here once, and docs/configuration.md's sink
 * table is generated from this schema. A variable that needs its partner says so.
 */
export const alertEnvSchema = z
  .object({
    SWEEPER_SLACK_WEBHOOK_URL: httpUrl(
      'SWEEPER_SLACK_WEBHOOK_URL',
      'https://hooks.slack.com/services/…',
      false,
    ).describe('Slack incoming webhook (a secret: never echoed, redacted everywhere)'),
    SWEEPER_PAGERDUTY_ROUTING_KEY: z
      .string()
      .optional()
      .refine((v) => v === undefined || /^[A-Za-z0-9_-]{1,128}$/.test(v), {
        message:
          'SWEEPER_PAGERDUTY_ROUTING_KEY must be a PagerDuty Events API v2 integration (routing) key: letters and digits',
      })
      .meta({ bounds: '1–128 letters, digits, `_` `-`' })
      .describe('PagerDuty Events API v2 integration (routing) key (never logged)'),
    SWEEPER_PAGERDUTY_URL: httpUrl('SWEEPER_PAGERDUTY_URL', DEFAULT_PAGERDUTY_URL, true)
      .meta({ fallback: DEFAULT_PAGERDUTY_URL })
      .describe("PagerDuty's enqueue endpoint; needs `SWEEPER_PAGERDUTY_ROUTING_KEY`"),
    SWEEPER_WEBHOOK_URL: httpUrl('SWEEPER_WEBHOOK_URL', 'https://receiver.example/hooks/sweeper', true).describe(
      'signed generic webhook ([the webhook](operations.md#the-webhook)); needs `SWEEPER_WEBHOOK_SECRET`',
    ),
    SWEEPER_WEBHOOK_SECRET: z
      .string()
      .optional()
      .refine((v) => v === undefined || v.length >= 16, {
        message: 'SWEEPER_WEBHOOK_SECRET must be at least 16 characters',
      })
      .meta({ bounds: '≥ 16 characters' })
      .describe('signs each webhook post (`X-Sweeper-Signature`); needs `SWEEPER_WEBHOOK_URL`; never logged'),
    SWEEPER_ALERT_REPEAT: duration('SWEEPER_ALERT_REPEAT').describe('how often an open, unchanged alert is re-sent'),
  })
  .superRefine((e, ctx) => {
    const missing = (variable: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: [variable], message: `${variable} must be set with ${message}` });
    // A URL without a key would silently alert nobody.
    if (e.SWEEPER_PAGERDUTY_URL !== undefined && e.SWEEPER_PAGERDUTY_ROUTING_KEY === undefined)
      missing('SWEEPER_PAGERDUTY_ROUTING_KEY', 'SWEEPER_PAGERDUTY_URL: without it no alert reaches PagerDuty');
    if (e.SWEEPER_WEBHOOK_URL !== undefined && e.SWEEPER_WEBHOOK_SECRET === undefined)
      missing('SWEEPER_WEBHOOK_SECRET', 'SWEEPER_WEBHOOK_URL: receivers verify the X-Sweeper-Signature with it');
    if (e.SWEEPER_WEBHOOK_SECRET !== undefined && e.SWEEPER_WEBHOOK_URL === undefined)
      missing('SWEEPER_WEBHOOK_URL', 'SWEEPER_WEBHOOK_SECRET: the secret signs posts to it');
  });

export function alertConfigFromEnv(env: Env = process.env): AlertConfig {
  // First: a bad value's error must not be the first place its secret shows up.
  registerSecretsFromEnv(env);
  const e = parseEnv(alertEnvSchema, env, { trim: true });
  const { SWEEPER_PAGERDUTY_ROUTING_KEY: routingKey, SWEEPER_WEBHOOK_URL: webhookUrl } = e;
  const webhookSecret = e.SWEEPER_WEBHOOK_SECRET;
  return {
    slack: e.SWEEPER_SLACK_WEBHOOK_URL === undefined ? undefined : { webhookUrl: e.SWEEPER_SLACK_WEBHOOK_URL },
    pagerduty:
      routingKey === undefined ? undefined : { routingKey, url: e.SWEEPER_PAGERDUTY_URL ?? DEFAULT_PAGERDUTY_URL },
    webhook:
      webhookUrl === undefined || webhookSecret === undefined ? undefined : { url: webhookUrl, secret: webhookSecret },
    repeatMs: e.SWEEPER_ALERT_REPEAT,
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
