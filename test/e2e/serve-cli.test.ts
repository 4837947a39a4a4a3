import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { runCli, startCli, sweeperLines } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * `sweeper serve` as an operator starts it: refused without authentication or with a bad
 * setting (exit 64, one line saying what to set, nothing served), and `sweeper demo
 * --keep` serving the review page of its database.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe('sweeper serve refuses to start', () => {
  it.each([
    [
      [],
      {},
      /^sweeper: sweeper serve needs authentication: set SWEEPER_UI_TOKEN \(a shared sign-in token\), or SWEEPER_UI_TRUSTED_HEADER/,
    ],
    [
      ['--insecure-local', '--host', '0.0.0.0'],
      {},
      /^sweeper: --insecure-local serves only a loopback address \(127\.0\.0\.1, ::1, localhost\), not --host 0\.0\.0\.0/,
    ],
    [[], { SWEEPER_UI_TOKEN: 'too-short' }, /^sweeper: SWEEPER_UI_TOKEN must be at least 16 characters/],
    [
      [],
      { SWEEPER_UI_TRUSTED_HEADER: 'X-Forwarded-User' },
      /^sweeper: SWEEPER_UI_TRUSTED_HEADER is set but SWEEPER_UI_TRUSTED_PROXIES is not/,
    ],
    [
      ['--port', '70000'],
      { SWEEPER_UI_TOKEN: 'a-review-token-long-enough-0123' },
      /^sweeper: --port 70000: expected a port number/,
    ],
  ])('serve %j with %j: exit 64, one line', async (args, env, line) => {
    const result = await runCli(['serve', ...args], { DATABASE_URL: db.url, ...env });
    expect(result.code, result.stderr).toBe(64);
    expect(result.stdout).toBe('');
    const lines = sweeperLines(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(line);
    expect(result.stderr).not.toContain('too-short');
  });
});

describe('sweeper demo --keep', () => {
  it('also serves the review page of its database, unauthenticated and on a loopback address, until Ctrl-C', async () => {
    const demo = startCli(['demo', '--keep'], { DATABASE_URL: inject('pgAdminUrl'), SWEEPER_ACTOR: 'demo-user' });
    const line = await demo.stdoutLine(/^Review page/);
    const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(line)?.[1];
    expect(url, line).toBeDefined();
    const page = await fetch(url!);
    expect(page.status).toBe(200);
    const body = await page.text();
    expect(body).toContain('Unauthenticated');
    expect(body).toContain('demo-user');
    expect(body).toMatch(/<tr data-finding="\d+">/);
    demo.child.kill('SIGINT');
    const result = await demo.done;
    expect(result.code, result.stderr).toBe(0);
    await expect(fetch(url!)).rejects.toThrow();
  });
});
