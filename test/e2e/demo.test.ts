import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { CATEGORIES } from '../../src/sweep/categories.js';
import { RUNBOOK } from '../../src/sweep/runbook.js';
import { runCli, startCli } from '../support/cli.js';

describe('sweeper demo', () => {
  it('tells the whole story on its own PostgreSQL and Stripe double, exits 0 and cleans up', async () => {
    // No DATABASE_URL: the demo starts (and removes) its own server, as on a fresh clone.
    const result = await runCli(['demo', '--seed', '3']);
    expect(result.code, result.stderr).toBe(0);
    const out = result.stdout;
    for (const category of CATEGORIES) expect(out, category).toContain(category);
    expect(out).toMatch(/a worker killed after Stripe charged/);
    expect(out).toMatch(
      /a double click: two identical requests at once → charged \+ in_progress; its retry → replayed, one charge/,
    );
    // A payout that reconciles to the cent, and the fees it puts on the payment rows (seed 3).
    const [, payoutId, paid] =
      /Stripe pays the account's balance out automatically: payout (po_\w+), ([\d.]+) USD, 8 charges less their fees/.exec(
        out,
      ) ?? [];
    expect(payoutId).toBeDefined();
    expect(out).toContain(
      `payout ${payoutId}, ${paid} USD: 8 balance transactions net ${paid} USD, residual 0.00 USD; 8 of its charge, refund and dispute transactions linked to their payment rows`,
    );
    expect(out).toMatch(/fees recorded on 8 payment rows, e.g\. last-week 15\.30 USD: fee 0\.74 USD, net 14\.56 USD;/);
    expect(out).toMatch(/Left for a person, and why:/);
    // Each open finding: why, then what to do (the runbook's action, not the reason again).
    const unattributed = /#\d+ unattributed_charge: (.+)\.\n\s+→ to do: (.+)/.exec(out);
    expect(unattributed?.[2]).toBe(RUNBOOK.unattributed_charge.person);
    expect(unattributed?.[2]).not.toBe(unattributed?.[1]);
    expect(out).toMatch(/"event": "findings.open"/);
    expect(out).toMatch(/Exit code: 3 \(unreconciled findings are open/);
    expect(out).toMatch(/3\. The same sweep again:\n {3}repaired 0; matched \d+; still open 8/);
    // The rerun matches more than the first sweep did: exactly the charges it repaired, and it says so.
    const [, before, after, repaired] =
      /\n {3}matched (\d+) → (\d+): the (\d+) charges the first sweep repaired now agree/.exec(out) ?? [];
    expect(new RegExp(`\\n {3}matched +${before} +0 +nothing to do`).test(out)).toBe(true);
    expect(out).toMatch(new RegExp(`repaired 0; matched ${after};`));
    expect(Number(after) - Number(before)).toBe(Number(repaired));
    // docs/judgement.md "Late changes": a payment a week before the window, refunded at Stripe long
    // after any window listed it, found by a scheduled run through Stripe's events.
    const start = new Date(/starting (\S+):/.exec(out)?.[1] ?? '');
    const weekBefore = new Date(start.getTime() - 7 * 86_400_000).toISOString().slice(0, 10);
    expect(out).toContain(`- a week before that (${weekBefore}): an ordinary card payment, last-week, 15.30 USD`); // seed 3: 1,500 + 30
    expect(out).toMatch(
      /4\. A refund on last week's payment: last-week \(15\.30 USD\) is refunded in full at Stripe, fifteen minutes ago; no window lists its charge again\.\n {3}sweeper run reads Stripe's events since its cursor: 2 events, 1 charge re-read → status_drift repaired 1; the payment row now says refunded 15\.30 USD of 15\.30 USD\n/,
    );
    expect(out).toMatch(/id,category,state,charge_id,tenant_id,idempotency_key,charge_amount,effect_amount,currency/);
    expect(out).toMatch(/amount_mismatch,open,ch_\w+,acme,ok-4,4030,4031,usd/); // seed 3 moves every amount by 30

    const [, portText, dir] = /on 127\.0\.0\.1:(\d+) in (\S+), removed at the end/.exec(out) ?? [];
    const port = Number(portText);
    expect(port).toBeGreaterThan(0);
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('connect', () => (socket.destroy(), resolve(false)));
      socket.on('error', () => resolve(true));
    });
    expect(refused).toBe(true); // the throwaway server is gone
    expect(dir).toMatch(/sweeper-pg-/);
    expect(existsSync(dir as string)).toBe(false); // and so is its data directory
  });

  it('--keep on your server: one psql line, to the demo database, without the password you gave; Ctrl-C drops it', async () => {
    const server = new URL(inject('pgAdminUrl'));
    // A trust server takes any password: the one given here must still never be printed.
    if (server.password === '') server.password = 'demo-keep-secret';
    const running = startCli(['demo', '--seed', '3', '--keep'], { DATABASE_URL: server.toString() });
    let stdout = '';
    await new Promise<void>((resolve, reject) => {
      running.child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes('Press Ctrl-C')) resolve();
      });
      void running.done.then((r) => reject(new Error(`the demo ended before it kept the database:\n${r.stderr}`)));
    });
    const lines = stdout.split('\n').filter((l) => l.includes('psql'));
    expect(lines).toHaveLength(1);
    const url = /psql '([^']+)'/.exec(lines[0]!)?.[1] ?? '';
    expect(new URL(url).password).toBe('');
    expect(new URL(url).pathname).toMatch(/^\/sweeper_demo_\d+$/);
    // The password goes into the URL: node-postgres lets a connection string's (empty) password win over the option.
    const withPassword = new URL(url);
    withPassword.password = server.password;
    const client = new pg.Client({ connectionString: withPassword.toString() });
    await client.connect();
    const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM recon_findings`);
    await client.end();
    expect(rows[0]?.n).toBeGreaterThan(0);

    running.child.kill('SIGINT');
    const result = await running.done;
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).not.toContain(server.password);
    const admin = new pg.Client({ connectionString: server.toString() });
    await admin.connect();
    const left = await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [new URL(url).pathname.slice(1)]);
    await admin.end();
    expect(left.rowCount).toBe(0);
  });

  it('refuses a bad --seed with exit 64', async () => {
    const result = await runCli(['demo', '--seed', 'abc']);
    expect(result.code).toBe(64);
  });
});
