import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { e2eEnvironment } from '../support/e2e.js';

/**
 * A Connect platform through the CLI (docs/platforms.md): `SWEEPER_ACCOUNTS=platform,connected`
 * discovers the connected accounts, sweeps each, says which one refused (403) without
 * failing the run, and `status` and the metrics say which accounts are inactive and why.
 * `--shard I/N` splits the discovered accounts.
 */
const HOUR = 3_600_000;
const e2e = e2eEnvironment({
  key: 'sk_test_platform',
  settings: { SWEEPER_ACCOUNTS: 'platform,connected', SWEEPER_LOG_LEVEL: 'warn' },
  partitionDaysBack: 2,
});

const jsonOf = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('SWEEPER_ACCOUNTS=platform,connected', () => {
  it('sweeps every listed account; a revoked one is skipped and inactive, an unlisted one too; status and metrics say so', async () => {
    const [busy, revoked, leaving, ...quiet] = e2e.double.seedAccounts(6);
    e2e.double.createCharge(busy!, { amount: 1200, created: new Date(Date.now() - 2 * HOUR) });
    const metrics = path.join(tmpdir(), `sweeper-platform-${process.pid}.prom`);
    const env = e2e.env({ SWEEPER_METRICS_FILE: metrics });

    const first = await runCli(['run', '--json', '--findings-exit', '0'], env);
    expect(first.code, first.stderr).toBe(0);
    const swept = jsonOf(first.stdout).map((r) => r.account);
    expect(swept.sort()).toEqual(['platform', busy, revoked, leaving, ...quiet].sort());

    e2e.double.removeAccount(leaving!);
    // A revoked account answers 403 from now on and is no longer listed, as Stripe does once access is gone.
    e2e.double.revokeAccount(revoked!);
    const second = await runCli(['run', '--json', '--findings-exit', '0'], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(new RegExp(`"account":"${leaving}".*no longer listed by Stripe`));
    const accounts = jsonOf(second.stdout).map((r) => r.account);
    expect(accounts).not.toContain(leaving);

    const status = await runCli(['status', '--json'], env);
    const s = JSON.parse(status.stdout) as {
      accounts: { active: number; inactive: number; recently_inactive: Array<{ account: string; reason: string }> };
    };
    expect(s.accounts.active).toBe(4);
    expect(s.accounts.recently_inactive.map((r) => r.account).sort()).toEqual([leaving, revoked].sort());
    const text = await runCli(['status'], env);
    expect(text.stdout).toMatch(/connected accounts: 4 active, 2 inactive/);
    const prom = readFileSync(metrics, 'utf8');
    expect(prom).toMatch(new RegExp(`sweeper_account_inactive\\{account="${leaving}",reason="unlisted"\\} 1`));
    expect(prom).toMatch(/sweeper_connected_accounts\{state="inactive"\} 2/);

    // Listed again: active again.
    e2e.double.restoreAccount(leaving!);
    e2e.double.restoreAccount(revoked!);
    const third = await runCli(['run', '--json', '--findings-exit', '0'], env);
    expect(third.code, third.stderr).toBe(0);
    expect(jsonOf(third.stdout).map((r) => r.account)).toEqual(expect.arrayContaining([leaving, revoked]));
  });

  it('a connected account that refuses (403) between the listing and its sweep is skipped, the run succeeds', async () => {
    const [refusing] = e2e.double.seedAccounts(1);
    // An account named in SWEEPER_ACCOUNTS that the double refuses (403 account_invalid) stands in for
    // one revoked between the listing and its sweep.
    e2e.double.setUnknownAccounts('forbid');
    const env = e2e.env({ SWEEPER_ACCOUNTS: `platform,connected,acct_gone1` });
    const run = await runCli(['run', '--json', '--findings-exit', '0'], env);
    expect(run.code, run.stderr).toBe(0);
    const lines = jsonOf(run.stdout);
    expect(lines).toContainEqual({ mode: 'run', account: 'acct_gone1', status: 'skipped', reason: 'account_revoked' });
    expect(lines.map((l) => l.account)).toContain(refusing);
    expect(run.stderr).toMatch(/"account":"acct_gone1".*connected account refused \(403/);
    e2e.double.setUnknownAccounts('serve');
  });

  it('--shard I/N: the shards together sweep each discovered account once', async () => {
    const env = e2e.env();
    const seen: unknown[] = [];
    for (const shard of ['0/3', '1/3', '2/3']) {
      const run = await runCli(['run', '--json', '--findings-exit', '0', '--shard', shard], env);
      expect(run.code, run.stderr).toBe(0);
      seen.push(...jsonOf(run.stdout).map((r) => r.account));
    }
    const listed = e2e.double.connectedAccounts().map((a) => a.id);
    expect(seen.filter((a) => a !== 'platform').sort()).toEqual(listed.sort());
    expect(seen.filter((a) => a === 'platform')).toHaveLength(1);
  });
});
