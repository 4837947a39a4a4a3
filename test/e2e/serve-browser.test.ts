import type { Dialog, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../scripts/chromium.js';
import { startCli, type RunningCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { HOSTILE, seedReviewScenario, TOKEN, type ReviewScenario } from '../support/review.js';

/**
 * `sweeper serve` (the built CLI, as an operator starts it) driven by headless Chromium
 * (Debian's, through playwright-core): sign in, filter, open a finding, resolve one and
 * then many, markup from Stripe's metadata staying inert, and a write without its CSRF
 * token refused. One browser and one page for the whole file, walked through in order.
 */
let db: TestDatabase;
let scenario: ReviewScenario;
let serve: RunningCli | undefined;
let base: string;
let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
let page: Page;
const dialogs: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  scenario = await seedReviewScenario(db.pool, new Date());
  serve = startCli(['serve', '--port', '0'], {
    DATABASE_URL: db.url,
    SWEEPER_UI_TOKEN: TOKEN,
    SWEEPER_UI_RESOLVERS: 'alice',
    SWEEPER_LOG_FORMAT: 'json',
  });
  base = /(http:\/\/\S+)/.exec(await serve.stdoutLine(/^Review page: /))![1]!;
  browser = await launchChromium();
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  // An alert() that ran would open a dialog: recorded, and dismissed so nothing hangs.
  page.on('dialog', (dialog: Dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
});

afterAll(async () => {
  await browser?.close();
  serve?.child.kill('SIGTERM');
  const result = await serve?.done;
  await db.drop();
  // Stopped by SIGTERM, it closes the server and the pool and exits 0.
  expect(result?.code, result?.stderr).toBe(0);
});

const state = async (id: number) =>
  (
    await db.pool.query<{ state: string; closed_by: string | null }>(
      'SELECT state, closed_by FROM recon_findings WHERE id = $1',
      [id],
    )
  ).rows[0];
const rows = () => page.locator('tr[data-finding]');

describe('the review page in a browser', () => {
  it('sends a visitor to sign in, and signs them in with the token and their name', async () => {
    await page.goto(base);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await page.fill('input[name="token"]', TOKEN);
    await page.fill('input[name="name"]', 'alice');
    await Promise.all([page.waitForURL(`${base}`), page.click('button:has-text("Sign in")')]);
    await expect(page.locator('.who .name').textContent()).resolves.toBe('alice');
    await expect(page.locator('.who .badge').textContent()).resolves.toBe('resolver');
    expect(await rows().count()).toBe(Object.values(scenario.open).flat().length);
  });

  it('filters the list', async () => {
    await page.selectOption('select[name="category"]', 'duplicate_effect');
    await Promise.all([page.waitForURL(/category=duplicate_effect/), page.click('button:has-text("Filter")')]);
    const shown = await rows().evaluateAll((trs) => trs.map((tr) => Number(tr.getAttribute('data-finding'))));
    expect(shown).toEqual(scenario.open.duplicate_effect);
  });

  it('opens a finding: its evidence side by side, with links to the Stripe dashboard', async () => {
    const id = scenario.open.duplicate_effect![0]!;
    await Promise.all([page.waitForURL(`${base}findings/${id}`), page.click(`a[href="/findings/${id}"]`)]);
    await expect(page.locator('h1').textContent()).resolves.toMatch(new RegExp(`#${id} duplicate_effect`));
    const links = await page.locator('a[data-dashboard]').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    expect(links).toEqual([
      'https://dashboard.stripe.com/test/payments/pi_order1_a',
      'https://dashboard.stripe.com/test/payments/pi_order1_b',
    ]);
  });

  it('resolves it with a note; the audit trail names the person', async () => {
    const id = scenario.open.duplicate_effect![0]!;
    await page.fill('textarea[name="note"]', 'refunded the second payment by hand, PAY-7');
    await Promise.all([page.waitForURL(/done=resolved/), page.click('button[value="resolve"]')]);
    await expect(page.locator('.notice').textContent()).resolves.toBe('Resolved.');
    await expect(page.locator('table.audit tr.person').textContent()).resolves.toMatch(/person\s+alice\s+resolved/);
    expect(await state(id)).toEqual({ state: 'resolved', closed_by: 'alice' });
  });

  it('shows markup from metadata as text: no element made of it, no script run', async () => {
    await page.goto(`${base}?category=unattributed_charge`);
    await expect(page.getByText(HOSTILE.tenant, { exact: true }).count()).resolves.toBe(1);
    await expect(page.getByText(HOSTILE.key, { exact: true }).count()).resolves.toBe(1);
    const hostile = (
      await db.pool.query<{ id: string }>(`SELECT id FROM recon_findings WHERE charge_id = 'ch_hostile'`)
    ).rows[0]!.id;
    for (const url of [`${base}?category=unattributed_charge`, `${base}findings/${hostile}`]) {
      await page.goto(url);
      await expect(page.getByText(HOSTILE.key).first().isVisible()).resolves.toBe(true);
      // The only elements are the page's own: no <img> at all, one script, the page's file.
      await expect(page.locator('img').count()).resolves.toBe(0);
      const scripts = await page.locator('script').evaluateAll((all) => all.map((s) => s.getAttribute('src')));
      expect(scripts).toEqual(['/static/review.js']);
    }
    expect(dialogs).toEqual([]);
  });

  it('closes many at once: every finding of the page selected by the header box, then ignored', async () => {
    await page.goto(`${base}?category=unattributed_charge`);
    const ids = scenario.open.unattributed_charge!;
    await page.check('input[data-select-all]');
    await expect(page.locator('input[name="id"]:checked').count()).resolves.toBe(ids.length);
    await page.fill('textarea[name="note"]', 'test charges from the dashboard');
    await Promise.all([page.waitForURL(`${base}findings/close`), page.click('button[value="ignore"]')]);
    await expect(page.locator('h1').textContent()).resolves.toBe(`Ignored ${ids.length} findings`);
    for (const id of ids) expect(await state(id)).toEqual({ state: 'ignored', closed_by: 'alice' });
    await Promise.all([page.waitForURL(/category=unattributed_charge/), page.click('a:has-text("Back to the list")')]);
    expect(await rows().count()).toBe(0);
  });

  it('refuses a write whose CSRF token was taken out of the form (403), and changes nothing', async () => {
    const id = scenario.open.amount_mismatch![0]!;
    await page.goto(`${base}findings/${id}`);
    await page.fill('textarea[name="note"]', 'a forged write');
    // Playwright's own script runs outside the page's CSP, as a page's could not.
    await page.locator('form.actions input[name="_csrf"]').evaluate((input) => input.remove());
    const [response] = await Promise.all([
      page.waitForResponse(`${base}findings/${id}/close`),
      page.click('button[value="resolve"]'),
    ]);
    expect(response.status()).toBe(403);
    await expect(page.locator('.problem').textContent()).resolves.toMatch(/CSRF token is missing or wrong/);
    expect(await state(id)).toEqual({ state: 'open', closed_by: null });
  });
});
