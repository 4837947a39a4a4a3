import { describe, expect, it } from 'vitest';
import { logFormatFor, operatorOnly } from '../../src/cli/log-output.js';
import { loadConfig } from '../../src/config.js';
import { fitWidth } from '../../src/cli/stderr.js';
import { createLogger, forOperator } from '../../src/log.js';
import { registerSecret } from '../../src/secrets.js';
import { prettySafeJson } from '../../src/terminal-text.js';

function capture(format: 'json' | 'pretty') {
  const chunks: string[] = [];
  const logger = createLogger({ format, destination: { write: (s: string) => void chunks.push(s) } });
  return { logger, text: () => chunks.join('') };
}

describe('log format', () => {
  it('pretty on a terminal, JSON otherwise; SWEEPER_LOG_FORMAT wins either way', () => {
    expect(logFormatFor(undefined, true)).toBe('pretty');
    expect(logFormatFor(undefined, false)).toBe('json');
    expect(logFormatFor('json', true)).toBe('json');
    expect(logFormatFor('pretty', false)).toBe('pretty');
  });

  it('pretty lines are readable text, not JSON, with the level, message and fields', () => {
    const out = capture('pretty');
    out.logger.info({ account: 'platform', slices: 3 }, 'sweep started');
    const text = out.text();
    expect(() => JSON.parse(text)).toThrow();
    expect(text).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: sweep started\n/);
    expect(text).toMatch(/account: "platform"/);
    expect(text).toMatch(/slices: 3/);
  });

  it('secrets are redacted in pretty output, by field and by value inside text', () => {
    registerSecret('sk_test_prettysecret42');
    const out = capture('pretty');
    out.logger.warn(
      { stripeApiKey: 'sk_test_prettysecret42', error: 'Stripe said: invalid key sk_test_prettysecret42' },
      'Stripe refused sk_test_prettysecret42',
    );
    const text = out.text();
    expect(text).not.toContain('prettysecret42');
    expect(text.match(/\[redacted\]/g)).toHaveLength(3);
  });

  it('control characters in logged values are shown, never sent to the terminal', () => {
    const out = capture('pretty');
    out.logger.info({ reason: 'evil\x1b[2J\x1b]0;title\x07\u202eabc\rX' }, 'charge \x1b[31mred\x9b');
    const text = out.text();
    // eslint-disable-next-line no-control-regex
    expect(text).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]/);
    expect(text).toContain('\\u001b[2J');
    expect(text).toContain('\\u202e');
    expect(text).toContain('\\r');
  });

  it('prettySafeJson keeps the meaning of text that merely looks like an escape', () => {
    const json = JSON.stringify({ a: 'a backslash-u: \\u001b, a tab\tand a newline\n' });
    expect(JSON.parse(prettySafeJson(json))).toEqual(JSON.parse(json));
  });

  it('JSON stays JSON, one object per line', () => {
    const out = capture('json');
    out.logger.info({ account: 'platform' }, 'hello');
    expect(JSON.parse(out.text())).toMatchObject({ msg: 'hello', account: 'platform', level: 30 });
  });

  it('a status line wider than the terminal is cut so that it never wraps', () => {
    expect(fitWidth('abcdef', 10)).toBe('abcdef');
    expect(fitWidth('abcdefghijkl', 10)).toBe('abcdefgh…');
    expect([...fitWidth('█'.repeat(50), 20)]).toHaveLength(19);
    expect(fitWidth('abc', undefined)).toBe('abc');
  });
});

describe('logs on a terminal', () => {
  function operatorView() {
    const chunks: string[] = [];
    const logger = createLogger({
      format: 'pretty',
      operatorOnly: true,
      destination: { write: (s: string) => void chunks.push(s) },
    });
    return { logger, text: () => chunks.join('') };
  }

  it('keep to warnings and the info lines marked for the operator, in children too', () => {
    const out = operatorView();
    const run = out.logger.child({ run_id: 'run_1', account: 'platform' });
    run.info({ depth: 15 }, 'listing slices ahead of the judgement');
    run.info(forOperator({ slices: 5 }), 'sweep started');
    run.info({ findings: { matched: 3 } }, 'sweep finished');
    run.warn({ keys: 2 }, 'keys held by a live writer were not judged');
    run.error('sweep failed');
    const text = out.text();
    expect(text).toMatch(/INFO: sweep started/);
    expect(text).toMatch(/WARN: keys held by a live writer/);
    expect(text).toMatch(/ERROR: sweep failed/);
    expect(text).not.toMatch(/listing slices ahead|sweep finished/);
  });

  it('the mark is not part of the line: JSON logs are the same with or without it', () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ destination: { write: (s: string) => void lines.push(JSON.parse(s)) } });
    logger.info(forOperator({ slices: 5 }), 'sweep started');
    logger.info({ slices: 5 }, 'sweep started');
    const [marked, plain] = lines.map(({ time: _time, ...rest }) => rest);
    expect(marked).toEqual(plain);
  });

  it('apply to pretty logs on a terminal while SWEEPER_LOG_LEVEL is unset; JSON and a level set are left alone', () => {
    expect(operatorOnly(true, 'pretty', false)).toBe(true);
    expect(operatorOnly(true, 'pretty', true)).toBe(false);
    expect(operatorOnly(true, 'json', false)).toBe(false);
    expect(operatorOnly(false, 'pretty', false)).toBe(false);
    expect(loadConfig({}).logLevelSet).toBe(false);
    expect(loadConfig({ SWEEPER_LOG_LEVEL: '' }).logLevelSet).toBe(false);
    expect(loadConfig({ SWEEPER_LOG_LEVEL: 'info' }).logLevelSet).toBe(true);
  });
});
