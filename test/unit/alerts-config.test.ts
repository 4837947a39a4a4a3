import { describe, expect, it } from 'vitest';
import { alertConfigFromEnv, describeAlertConfig, DEFAULT_PAGERDUTY_URL } from '../../src/alerts/config.js';

const SLACK = 'https://hooks.slack.com/services/T000/B000/slacksecrettoken';
const KEY = 'R0UT1NGKEY0123456789abcdefABCDEF';
const SECRET = 'whsec_0123456789abcdef';

function configError(env: Record<string, string>): Error & { exitCode?: number } {
  try {
    alertConfigFromEnv(env);
  } catch (error) {
    return error as Error & { exitCode?: number };
  }
  throw new Error('expected alertConfigFromEnv to throw');
}

describe('alertConfigFromEnv', () => {
  it('enables no sink and repeats hourly when nothing is set', () => {
    expect(alertConfigFromEnv({})).toEqual({
      slack: undefined,
      pagerduty: undefined,
      webhook: undefined,
      repeatMs: 3_600_000,
    });
    expect(alertConfigFromEnv({ SWEEPER_SLACK_WEBHOOK_URL: '  ', SWEEPER_ALERT_REPEAT: '' }).slack).toBeUndefined();
  });

  it('enables every sink whose variables are set, with the public PagerDuty endpoint by default', () => {
    const config = alertConfigFromEnv({
      SWEEPER_SLACK_WEBHOOK_URL: SLACK,
      SWEEPER_PAGERDUTY_ROUTING_KEY: KEY,
      SWEEPER_WEBHOOK_URL: 'https://receiver.example/hooks/sweeper',
      SWEEPER_WEBHOOK_SECRET: SECRET,
      SWEEPER_ALERT_REPEAT: '15m',
    });
    expect(config).toEqual({
      slack: { webhookUrl: SLACK },
      pagerduty: { routingKey: KEY, url: DEFAULT_PAGERDUTY_URL },
      webhook: { url: 'https://receiver.example/hooks/sweeper', secret: SECRET },
      repeatMs: 900_000,
    });
    expect(
      alertConfigFromEnv({ SWEEPER_PAGERDUTY_ROUTING_KEY: KEY, SWEEPER_PAGERDUTY_URL: 'http://127.0.0.1:9/enqueue' })
        .pagerduty?.url,
    ).toBe('http://127.0.0.1:9/enqueue');
  });

  it.each([
    [{ SWEEPER_ALERT_REPEAT: 'hourly' }, 'SWEEPER_ALERT_REPEAT'],
    [{ SWEEPER_ALERT_REPEAT: '0s' }, 'SWEEPER_ALERT_REPEAT'],
    [{ SWEEPER_SLACK_WEBHOOK_URL: 'hooks.slack.com/services/slacksecrettoken' }, 'SWEEPER_SLACK_WEBHOOK_URL'],
    [{ SWEEPER_PAGERDUTY_ROUTING_KEY: 'has spaces in it' }, 'SWEEPER_PAGERDUTY_ROUTING_KEY'],
    [{ SWEEPER_PAGERDUTY_URL: 'https://events.pagerduty.com/v2/enqueue' }, 'SWEEPER_PAGERDUTY_ROUTING_KEY'],
    [{ SWEEPER_PAGERDUTY_ROUTING_KEY: KEY, SWEEPER_PAGERDUTY_URL: 'ftp://x' }, 'SWEEPER_PAGERDUTY_URL'],
    [{ SWEEPER_WEBHOOK_URL: 'https://receiver.example/' }, 'SWEEPER_WEBHOOK_SECRET'],
    [{ SWEEPER_WEBHOOK_SECRET: SECRET }, 'SWEEPER_WEBHOOK_URL'],
    [{ SWEEPER_WEBHOOK_URL: 'https://receiver.example/', SWEEPER_WEBHOOK_SECRET: 'short' }, 'SWEEPER_WEBHOOK_SECRET'],
  ])('refuses %o with exit code 64, naming %s', (env, variable) => {
    const error = configError(env);
    expect(error.exitCode).toBe(64);
    expect(error.message.startsWith(variable)).toBe(true);
  });

  it('never echoes a credential in an error message', () => {
    expect(
      configError({ SWEEPER_SLACK_WEBHOOK_URL: 'hooks.slack.com/services/slacksecrettoken' }).message,
    ).not.toContain('slacksecrettoken');
    expect(configError({ SWEEPER_PAGERDUTY_ROUTING_KEY: 'secret key' }).message).not.toContain('secret key');
    expect(
      configError({ SWEEPER_WEBHOOK_URL: 'https://r.example/', SWEEPER_WEBHOOK_SECRET: 'short' }).message,
    ).not.toContain('short"');
  });

  it('describes itself for logs without credentials', () => {
    const described = describeAlertConfig(
      alertConfigFromEnv({
        SWEEPER_SLACK_WEBHOOK_URL: SLACK,
        SWEEPER_PAGERDUTY_ROUTING_KEY: KEY,
        SWEEPER_WEBHOOK_URL: 'https://receiver.example/hooks',
        SWEEPER_WEBHOOK_SECRET: SECRET,
      }),
    );
    expect(described).toEqual({
      sinks: ['slack', 'pagerduty', 'webhook'],
      pagerdutyUrl: DEFAULT_PAGERDUTY_URL,
      webhookHost: 'receiver.example',
      repeat: '1h',
    });
    expect(JSON.stringify(described)).not.toMatch(/slacksecrettoken|R0UT1NGKEY|whsec_/);
  });

  it.each([
    [
      'SWEEPER_SLACK_WEBHOOK_URL',
      { SWEEPER_SLACK_WEBHOOK_URL: 'https://ops:pa55word-secret@hooks.slack.com/services/T/B/x' },
    ],
    [
      'SWEEPER_WEBHOOK_URL',
      { SWEEPER_WEBHOOK_URL: 'https://ops:pa55word-secret@receiver.example/hook', SWEEPER_WEBHOOK_SECRET: SECRET },
    ],
    [
      'SWEEPER_PAGERDUTY_URL',
      { SWEEPER_PAGERDUTY_ROUTING_KEY: KEY, SWEEPER_PAGERDUTY_URL: 'https://ops:pa55word-secret@events.example/v2' },
    ],
  ])('refuses %s with credentials in it (they could never be sent), without echoing them', (name, env) => {
    const error = configError(env);
    expect(error.exitCode).toBe(64);
    expect(error.message).toMatch(new RegExp(`^${name} must not contain credentials`));
    expect(error.message).not.toContain('pa55word');
  });

  it('refuses a port outside 1..65535 and an unparseable URL', () => {
    expect(
      configError({ SWEEPER_WEBHOOK_URL: 'https://receiver.example:0/hook', SWEEPER_WEBHOOK_SECRET: SECRET }).message,
    ).toMatch(/^SWEEPER_WEBHOOK_URL has a port outside 1\.\.65535/);
    expect(configError({ SWEEPER_SLACK_WEBHOOK_URL: 'https://hooks.slack.com:99999/x' }).message).toMatch(
      /^SWEEPER_SLACK_WEBHOOK_URL is not a URL that can be parsed/,
    );
  });

  it('bounds SWEEPER_ALERT_REPEAT between 1m and 7d', () => {
    expect(configError({ SWEEPER_ALERT_REPEAT: '10s' }).message).toMatch(
      /^SWEEPER_ALERT_REPEAT must be between 1m and 7d \(got 10s\)/,
    );
    expect(configError({ SWEEPER_ALERT_REPEAT: '30d' }).message).toMatch(
      /^SWEEPER_ALERT_REPEAT must be between 1m and 7d/,
    );
  });
});
