import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { clearSecrets, redact, redactDeep, registerSecret, registerSecretsFromEnv } from '../../src/secrets.js';
import { terminalSafe, terminalSafeJson, terminalSafeLine } from '../../src/terminal-text.js';

afterEach(() => clearSecrets());

const ENV = {
  STRIPE_API_KEY: 'sk_test_RECOGNISABLEkey0001',
  DATABASE_URL: 'postgres://sweeper:db%40pass-secret@db:5432/payments',
  SWEEPER_WEBHOOK_SECRET: 'whsec_RECOGNISABLE0002',
  SWEEPER_PAGERDUTY_ROUTING_KEY: 'ROUTINGKEYRECOGNISABLE0003',
  SWEEPER_SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T000/B000/SLACKRECOGNISABLE0004',
  SWEEPER_PUSHGATEWAY_URL: 'http://ops:gw-pass-secret@gw:9091',
};

describe('the secret registry', () => {
  it('redacts every secret the environment holds, in every form it may take', () => {
    registerSecretsFromEnv(ENV);
    const text = [
      'Invalid API Key provided: sk_test_RECOGNISABLEkey0001',
      'password db@pass-secret and encoded db%40pass-secret',
      'whsec_RECOGNISABLE0002 ROUTINGKEYRECOGNISABLE0003',
      'POST https://hooks.slack.com/services/T000/B000/SLACKRECOGNISABLE0004 failed',
      'path /services/T000/B000/SLACKRECOGNISABLE0004 only',
      `basic ${Buffer.from('ops:gw-pass-secret').toString('base64')} and gw-pass-secret`,
    ].join('\n');
    const out = redact(text);
    for (const secret of ['RECOGNISABLE', 'pass-secret', Buffer.from('ops:gw-pass-secret').toString('base64')])
      expect(out).not.toContain(secret);
    expect(out).toContain('Invalid API Key provided: [redacted]');
  });

  it('redacts inside JSON, keeping it JSON, and leaves other text alone', () => {
    registerSecret('se"cret\\value');
    const json = JSON.stringify({ message: 'got se"cret\\value back', ok: 1 });
    expect(JSON.parse(redact(json))).toEqual({ message: 'got [redacted] back', ok: 1 });
    expect(redactDeep({ a: ['se"cret\\value'], n: 3, d: null })).toEqual({ a: ['[redacted]'], n: 3, d: null });
    expect(redact('nothing to see')).toBe('nothing to see');
  });

  it('ignores values too short to redact without mangling every line', () => {
    registerSecret('abc');
    expect(redact('abc abc')).toBe('abc abc');
  });

  it('reaches the logger: a secret inside a message or any field is gone from the line', () => {
    registerSecretsFromEnv(ENV);
    const chunks: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ destination });
    logger.error(
      { err: { message: 'Invalid API Key provided: sk_test_RECOGNISABLEkey0001' }, url: ENV.SWEEPER_SLACK_WEBHOOK_URL },
      'failed: whsec_RECOGNISABLE0002',
    );
    const line = chunks.join('');
    expect(line).not.toMatch(/RECOGNISABLE/);
    expect(JSON.parse(line)).toMatchObject({ msg: 'failed: [redacted]' });
  });
});

describe('text for a terminal', () => {
  it('escapes ANSI escapes, other control characters and bidi overrides', () => {
    expect(terminalSafe('\u001b[31mred\u001b[0m\ttab\nnext\u0007\u202eevil')).toBe(
      '\\x1b[31mred\\x1b[0m\ttab\nnext\\x07\\u202eevil',
    );
    expect(terminalSafeLine('one\ntwo\r')).toBe('one\\x0atwo\\x0d');
    expect(terminalSafe('plain, ünïcode ✓')).toBe('plain, ünïcode ✓');
  });

  it('makes JSON terminal-safe without changing what it parses to', () => {
    const value = { note: '\u001b[31m\u009b2J\u202e\u2028x', n: -5 };
    const safe = terminalSafeJson(JSON.stringify(value));
    for (const char of ['\u001b', '\u009b', '\u202e', '\u2028']) expect(safe).not.toContain(char);
    expect(JSON.parse(safe)).toEqual(value);
  });
});
