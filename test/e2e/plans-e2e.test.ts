import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, sweeperLines } from '../support/cli.js';
import { e2eEnvironment } from '../support/e2e.js';
import { seedClaim, seedEffect } from '../support/scenario.js';

/**
 * A saved plan through the built CLI against the Stripe double (docs/plans.md): the plan
 * written by a backfill, an apply that stops at the refund (3), its author refused as
 * approver (77), a second person's approval, the apply that makes the refund (0), a
 * second apply that applies nothing, and files that are not this database's plan (65).
 */
const HOUR = 3_600_000;
const T0 = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
const at = (minutes: number) => new Date(T0 + minutes * 60_000);
const env = e2eEnvironment({ key: 'sk_test_plans', partitionDaysBack: 1 });
let dir: string;
let file: string;
const charges: Record<string, string> = {};

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sweeper-plans-'));
  file = path.join(dir, 'plan.json');
  const { db, double } = env;
  const meta = (key: string) => ({ tenant_id: 'shop', idempotency_key: key });
  // A payment whose caller died after Stripe charged: the claim is completed from the charge.
  await seedClaim(db.pool, { tenantId: 'shop', key: 'k-died', status: 'in_flight', createdAt: at(10) });
  charges.died = double.createCharge(null, { created: at(10), metadata: meta('k-died'), events: false }).id;
  // An order charged twice under one key: the second charge is refunded.
  await seedClaim(db.pool, { tenantId: 'shop', key: 'k-twice', status: 'completed', createdAt: at(20) });
  charges.kept = double.createCharge(null, { created: at(20), metadata: meta('k-twice'), events: false }).id;
  charges.extra = double.createCharge(null, { created: at(21), metadata: meta('k-twice'), events: false }).id;
  await seedEffect(db.pool, { chargeId: charges.kept, tenantId: 'shop', key: 'k-twice', createdAt: at(20) });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const cli = (args: string[], extra: Record<string, string> = {}) =>
  runCli(args, env.env({ SWEEPER_LOG_LEVEL: 'warn', ...extra }));
const window = () => ['--from', at(0).toISOString(), '--to', at(60).toISOString()];

describe('sweeper backfill --plan, approve and apply', () => {
  let planId: string;

  it('writes the plan to the file and the database, and changes nothing else', async () => {
    const result = await cli(['backfill', ...window(), '--refund-duplicates', '--plan', file, '--json'], {
      SWEEPER_ACTOR: 'alice',
    });
    expect(result.code, result.stderr).toBe(3);
    const report = JSON.parse(result.stdout.trim()) as { dry_run: boolean; plan: { id: string; steps: number } };
    expect(report).toMatchObject({ dry_run: true, plan: { steps: 2, money_steps: 1, author: 'alice', file } });
    planId = report.plan.id;
    const saved = JSON.parse(await readFile(file, 'utf8')) as { digest: string; plan: { id: string } };
    expect(saved.plan.id).toBe(planId);
    expect(saved.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const claim = await env.db.pool.query(`SELECT status FROM idempotency_keys WHERE key = 'k-died'`);
    expect(claim.rows).toEqual([{ status: 'in_flight' }]);
  });

  it('applies the repair, and leaves the refund for a second person (exit 3)', async () => {
    const result = await cli(['apply', file, '--by', 'bob']);
    expect(result.code, result.stderr).toBe(3);
    expect(result.stdout).toMatch(/applied now: 1/);
    expect(sweeperLines(result.stderr)).toEqual([
      expect.stringMatching(new RegExp(`await approval .*sweeper approve ${planId} --by NAME`)),
    ]);
    const claim = await env.db.pool.query(`SELECT status FROM idempotency_keys WHERE key = 'k-died'`);
    expect(claim.rows).toEqual([{ status: 'completed' }]);
    expect(env.double.refunds()).toEqual([]);
  });

  it("refuses the author's own approval (77), takes a second person's (0)", async () => {
    const own = await cli(['approve', planId, '--by', 'Alice']);
    expect(own.code).toBe(77);
    expect(sweeperLines(own.stderr)).toEqual([expect.stringMatching(/Alice made plan .* cannot approve it/)]);
    const other = await cli(['approve', planId], { SWEEPER_ACTOR: 'carol' });
    expect(other.code, other.stderr).toBe(0);
    expect(other.stdout).toMatch(new RegExp(`plan ${planId} approved by carol`));
  });

  it('then makes the refund, every step applied (0); a second apply applies nothing (0)', async () => {
    const result = await cli(['apply', file, '--by', 'bob', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      applied: [{ step: 2, moves_money: true }],
      refused: [],
      pending: [],
      refunds: { made: 1, cancelled: 0, left: 0 },
      open_findings: 0,
    });
    expect(env.double.refunds().map((r) => r.charge)).toEqual([charges.extra]);
    const again = await cli(['apply', file, '--by', 'bob', '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ applied: [], refused: [], earlier: { applied: 2 } });
    expect(env.double.refunds()).toHaveLength(1);
    const audit = await env.db.pool.query(
      `SELECT action, actor FROM recon_plan_events WHERE plan_id = $1 ORDER BY id`,
      [planId],
    );
    expect(audit.rows.map((r: { action: string; actor: string }) => `${r.action}:${r.actor}`)).toEqual([
      'planned:alice',
      'applied:bob',
      'approved:carol',
      'applied:bob',
      'applied:bob',
    ]);
  });

  it('refuses a file that was altered, or is not a plan, as a whole (65); a missing one is bad usage (64)', async () => {
    const text = await readFile(file, 'utf8');
    const altered = path.join(dir, 'altered.json');
    await writeFile(altered, text.replace('"author": "alice"', '"author": "mallory"'));
    const result = await cli(['apply', altered, '--by', 'bob']);
    expect(result.code).toBe(65);
    expect(sweeperLines(result.stderr)).toEqual([expect.stringMatching(/was altered after sweeper wrote it/)]);
    const junk = path.join(dir, 'junk.json');
    await writeFile(junk, '{"hello": "world"}');
    expect((await cli(['apply', junk])).code).toBe(65);
    expect((await cli(['approve', 'plan_20200101T000000Z_00000000', '--by', 'carol'])).code).toBe(65);
    expect((await cli(['apply', path.join(dir, 'missing.json')])).code).toBe(64);
    expect((await cli(['run', '--by', 'bob'])).code).toBe(64);
  });
});
