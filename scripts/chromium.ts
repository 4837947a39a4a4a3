/**
 * Debian's Chromium driven by playwright-core, headless, for the browser tests
 * (test/e2e/serve-browser.test.ts) and `npm run screenshots`. Playwright's own browser
 * download cannot work here, so the system's binary is launched (SWEEPER_CHROMIUM names
 * another), with a fresh profile directory that `close` removes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = process.env.SWEEPER_CHROMIUM ?? '/usr/bin/chromium';

/** No sandbox (root in a container), no GPU, and nothing that reaches the network on its own. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
] as const;

export async function launchChromium(
  options: { viewport?: { width: number; height: number } } = {},
): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(path.join(tmpdir(), 'sweeper-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: [...CHROMIUM_ARGS],
      ...(options.viewport ? { viewport: options.viewport, deviceScaleFactor: 1 } : {}),
    });
    return {
      context,
      async close() {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}
