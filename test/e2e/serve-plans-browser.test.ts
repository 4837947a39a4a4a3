import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../scripts/chromium.js';
import { runCli, startCli, type RunningCli } from '../support/cli.js';
import { e2eEnvironment } from '../support/e2e.js';
import { TOKEN } from '../support/review.js';
import { seedClaim, seedEffect } from '../support/scenario.js';

/**
 * A saved plan on the review page in headless Chromium: made by `sweeper backfill --plan`
 * (the built CLI, as alice), reviewed step by step, applied by its author up to the refund,
 * refused to her as approver, approved by bob (a second resolver) and applied: the refund
 * made at the Stripe double, every step applied, the plan's audit naming each person.
 */
const HOUR = 3_600_000;
const T0 = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
const at = (minutes: number) => new Date(T0 + minutes * 60_000);
const env = e2eEnvironment({ key: 'sk_test_planpages', partitionDaysBack: 1 });
let dir: string;
let planId: string;
let extra: string;
let serve: RunningCli | undefined;
let base: string;
let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
let page: Page;

beforeAll(async () => {
  const { db, double } = env;
  const meta = (key: string) => ({ tenant_id: 'shop', idempotency_key: key });
  await seedClaim(db.pool, { tenantId: 'shop', key: 'k-died', status: 'in_flight', createdAt: at(10) });
  double.createCharge(null, { created: at(10), metadata: meta('k-died'), events: false });
  await seedClaim(db.pool, { tenantId: 'shop', key: 'k-twice', status: 'completed', createdAt: at(20) });
  const kept = double.createCharge(null, { created: at(20), metadata: meta('k-twice'), events: false }).id;
  extra = double.createCharge(null, { created: at(21), metadata: meta('k-twice'), events: false }).id;
  await seedEffect(db.pool, { chargeId: kept, tenantId: 'shop', key: 'k-twice', createdAt: at(20) });
  dir = await mkdtemp(path.join(tmpdir(), 'sweeper-plan-page-'));
  const made = await runCli(
    ['backfill', '--from', at(0).toISOString(), '--to', at(60).toISOString(), '--refund-duplicates'].concat([
      '--plan',
      path.join(dir, 'plan.json'),
      '--json',
    ]),
    env.env({ SWEEPER_ACTOR: 'alice', SWEEPER_LOG_LEVEL: 'warn' }),
  );
  expect(made.code, made.stderr).toBe(3);
  planId = (JSON.parse(made.stdout) as { plan: { id: string } }).plan.id;
  serve = startCli(
    ['serve', '--port', '0'],
    env.env({ SWEEPER_UI_TOKEN: TOKEN, SWEEPER_UI_RESOLVERS: 'alice,bob', SWEEPER_LOG_FORMAT: 'json' }),
  );
  base = /(http:\/\/\S+)/.exec(await serve.stdoutLine(/^Review page: /))![1]!;
  browser = await launchChromium();
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
});

afterAll(async () => {
  await browser?.close();
  serve?.child.kill('SIGTERM');
  const result = await serve?.done;
  await rm(dir, { recursive: true, force: true });
  expect(result?.code, result?.stderr).toBe(0);
});

async function signIn(name: string) {
  await page.goto(`${base}signin`);
  await page.fill('input[name="token"]', TOKEN);
  await page.fill('input[name="name"]', name);
  await Promise.all([page.waitForURL(base), page.click('button:has-text("Sign in")')]);
}
const stateOf = (step: number) => page.locator(`tr[data-step="${step}"]`).getAttribute('data-state');

describe('a plan on the review page, in a browser', () => {
  it('lists the plan and shows its steps, the refund with its idempotency key', async () => {
    await signIn('alice');
    await Promise.all([page.waitForURL(`${base}plans`), page.click('nav a:has-text("Plans")')]);
    await Promise.all([page.waitForURL(`${base}plans/${planId}`), page.click(`a[href="/plans/${planId}"]`)]);
    await expect(page.locator('tr[data-step]').count()).resolves.toBe(2);
    await expect(page.locator('tr[data-step="2"]').textContent()).resolves.toContain(`sweeper_refund_v1_${extra}`);
    await expect(stateOf(1)).resolves.toBe('planned');
  });

  it('lets the author apply, but not approve: the refund waits for a second person', async () => {
    await expect(page.locator('.own-plan').textContent()).resolves.toMatch(/You made this plan/);
    await expect(page.locator('button[value="approve"]').count()).resolves.toBe(0);
    await Promise.all([page.waitForURL(/done=applied/), page.click('button[value="apply"]')]);
    await expect(stateOf(1)).resolves.toBe('applied');
    await expect(stateOf(2)).resolves.toBe('planned');
    await expect(page.locator('tr[data-step="2"] .reason').textContent()).resolves.toMatch(
      /awaits approval by someone other than alice/,
    );
    expect(env.double.refunds()).toEqual([]);
  });

  it('a second person approves and applies: the refund is made, every step applied', async () => {
    await Promise.all([page.waitForURL(/signin/), page.click('button:has-text("Sign out")')]);
    await signIn('bob');
    await page.goto(`${base}plans/${planId}`);
    await Promise.all([page.waitForURL(/done=approved/), page.click('button[value="approve"]')]);
    await expect(page.locator('.approval').textContent()).resolves.toMatch(/by bob/);
    await Promise.all([page.waitForURL(/done=applied/), page.click('button[value="apply"]')]);
    await expect(stateOf(2)).resolves.toBe('applied');
    expect(env.double.refunds().map((r) => r.charge)).toEqual([extra]);
    const audit = await page
      .locator('table.plan-audit tr[data-action]')
      .evaluateAll((rows) => rows.map((r) => `${r.getAttribute('data-action')}:${r.children[1]?.textContent?.trim()}`));
    expect(audit).toEqual([
      'planned:person alice',
      'applied:person alice',
      'approved:person bob',
      'applied:person bob',
    ]);
    await expect(page.locator('button[value="apply"]').count()).resolves.toBe(0);
  });
});
