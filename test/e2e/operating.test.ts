import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import {
  cliEnv,
  runCli,
  startCli,
  sweeperLines,
  SWEEPER_BIN,
  type CliResult,
  type RunningCli,
} from '../support/cli.js';
import { partitionedDatabase, type TestDatabase } from '../support/db.js';
import { listedFrom, startValveProxy } from '../support/valve-proxy.js';

/**
 * What an operator sees of a run: progress while it goes (a log line per interval
 * when piped, a redrawn line on a terminal), `status` during it, the wording of an
 * interrupted and a resumed run, the open findings and next commands, and one
 * `sweeper: …` line saying why on every non-zero exit. The CLI runs as a subprocess
 * against the Stripe double; a run is held at a chosen slice by a proxy, never by time.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HOUR = 3_600_000;
const MIN = 60_000;
// Five 30-minute slices, ending well before now − settle.
const base = Math.floor(Date.now() / HOUR) * HOUR - 4 * HOUR;
const from = new Date(base).toISOString();
const to = new Date(base + 150 * MIN).toISOString();
const backfill = ['backfill', '--from', from, '--to', to];

let double: StripeDouble;
const databases: TestDatabase[] = [];

async function database(): Promise<TestDatabase> {
  const db = await partitionedDatabase(new Date(base - 2 * 86_400_000));
  databases.push(db);
  return db;
}
const env = (db: TestDatabase, extra: Record<string, string> = {}): Record<string, string> =>
  cliEnv({ db, stripe: double.url, key: 'sk_test_operating' }, { SWEEPER_SLICE: '30m', ...extra });
const lastSweeperLine = (r: CliResult) => sweeperLines(r.stderr).at(-1) ?? '';
const jsonLines = (stderr: string) =>
  stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** Resolves once `n` stderr JSON log lines satisfy `match`. */
function logLines(
  running: RunningCli,
  n: number,
  match: (line: Record<string, unknown>) => boolean,
): Promise<Array<Record<string, unknown>>> {
  let text = '';
  return new Promise((resolve, reject) => {
    const check = () => {
      const found = jsonLines(text).filter(match);
      if (found.length >= n) {
        running.child.stderr?.off('data', onData);
        resolve(found);
      }
    };
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      check();
    };
    running.child.stderr?.on('data', onData);
    void running.done.then((r) =>
      reject(new Error(`the run ended before ${n} matching log lines:\n${r.stderr.slice(-2000)}`)),
    );
  });
}

beforeAll(async () => {
  double = await startStripeDouble();
  // Money nobody can attribute, two charges per slice: each becomes an open finding.
  for (let i = 0; i < 10; i += 1)
    double.createCharge(null, { amount: 1000 + i, created: new Date(base + i * 15 * MIN + 60_000) });
});
afterAll(async () => {
  for (const db of databases) await db.drop();
  await double.close();
});

describe('a long backfill, piped', () => {
  it('logs progress on a timer while a slice hangs; status shows the run; SIGTERM says interrupted; the rerun says it resumed and lists what is open', async () => {
    const db = await database();
    // Slices 0 and 1 pass; the listing of slice 3 (and later) is held, so slice 2, whose
    // trailing lease margin comes from slice 3's listing (docs/performance.md), waits too.
    const valve = await startValveProxy(double.url, (path) => (listedFrom(path) ?? 0) >= (base + 75 * MIN) / 1000);
    let interrupted = '';
    try {
      const running = startCli(backfill, env(db, { STRIPE_API_BASE: valve.url, SWEEPER_PROGRESS_INTERVAL: '1s' }));
      await valve.held;
      // No slice can finish while its listing is held: lines keep coming anyway, from the timer.
      const stuck = await logLines(running, 2, (l) => l.event === 'progress' && l.slices_done === 2);
      for (const line of stuck) {
        expect(line).toMatchObject({
          msg: expect.stringMatching(/^progress: backfill platform 40% {2}2\/5 slices {2}4 charges/),
          mode: 'backfill',
          account: 'platform',
          slices_total: 5,
          percent: 40,
          charges_scanned: 4,
        });
        expect(line).toHaveProperty('rate_per_second');
        expect(line).toHaveProperty('eta_seconds');
        expect(line).toHaveProperty('elapsed_seconds');
      }

      const status = await runCli(['status', '--json'], env(db));
      expect(status.code, status.stderr).toBe(0);
      const live = JSON.parse(status.stdout).live_runs;
      expect(live).toEqual([
        expect.objectContaining({
          mode: 'backfill',
          account: 'platform',
          window: { from: new Date(base).toISOString(), to: new Date(base + 150 * MIN).toISOString() },
          checkpoint: new Date(base + 60 * MIN).toISOString(),
          slices_done: 2,
          slices_total: 5,
          percent: 40,
          charges_scanned: 4,
          lock_held: true,
        }),
      ]);
      expect(live[0].age_seconds).toBeGreaterThanOrEqual(0);
      const text = await runCli(['status'], env(db));
      expect(text.stdout).toMatch(
        /running now:\n {2}platform {2}backfill {2}run_\S+ {2}window .+\n {4}slice 2\/5, checkpoint \S+ \(40% of the window\), 4 charges so far, started \S+ \(\d+s ago\)\n/,
      );

      running.child.kill('SIGTERM');
      const stopped = await running.done;
      expect(stopped.code).toBe(1);
      interrupted = stopped.stdout.split(' ')[1] ?? '';
      expect(stopped.stdout.split('\n')[0]).toMatch(
        /^backfill run_\S+ {2}account platform {2}INTERRUPTED \(SIGTERM received\): 2 of 5 slices committed; run the same backfill again to resume$/,
      );
      expect(stopped.stdout).not.toMatch(/charges scanned \d/);
      expect(lastSweeperLine(stopped)).toBe(
        'sweeper: interrupted (SIGTERM received): account platform after 2 of 5 slices; committed slices stand, run the same backfill again: it resumes from its last committed slice',
      );
    } finally {
      valve.release();
      await valve.close();
    }

    const resumed = await runCli(backfill, env(db));
    expect(resumed.code, resumed.stderr).toBe(3);
    expect(interrupted).toMatch(/^run_/);
    expect(resumed.stdout.split('\n')[1]).toBe(
      `resumed backfill ${interrupted}: its committed slices were kept; this run continued from ${new Date(base + 60 * MIN).toISOString()}`,
    );
    const { rows } = await db.pool.query<{ id: string; charge_id: string }>(
      `SELECT id, charge_id FROM recon_findings WHERE state = 'open' ORDER BY id`,
    );
    expect(rows).toHaveLength(10);
    expect(resumed.stdout).toContain('open findings (10):\n');
    for (const r of rows)
      expect(resumed.stdout).toMatch(new RegExp(`\\n {2}#${r.id} +unattributed_charge {2}${r.charge_id}\\n`));
    expect(resumed.stdout).toMatch(
      /\nnext:\n {2}sweeper report --status open --account platform +every open finding.*\n {2}sweeper resolve ID --note "what was done" +closes a finding/,
    );
    expect(lastSweeperLine(resumed)).toBe(
      'sweeper: 10 unreconciled finding(s) open (platform: 10): a person decides them. List them with `sweeper report --status open`, close each handled one with `sweeper resolve ID --note "…"`',
    );
    expect(JSON.parse((await runCli(['status', '--json'], env(db))).stdout).live_runs).toEqual([]);
  });
});

describe('Ctrl-C', () => {
  /** A command in a process group of its own, as a shell runs a job: Ctrl-C is SIGINT to the whole group. */
  function startJob(argv: string[], jobEnv: Record<string, string>) {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...jobEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const done = new Promise<CliResult>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    });
    /** Resolves once stderr holds `text` (a log line the job wrote). */
    const said = (text: string) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!stderr.includes(text)) return;
          child.stderr.off('data', check);
          resolve();
        };
        child.stderr.on('data', check);
        child.on('close', () => reject(new Error(`the job ended without saying ${text}`)));
        check();
      });
    return { ctrlC: () => process.kill(-child.pid!, 'SIGINT'), done, said };
  }
  const node = (args: string[]) => [process.execPath, SWEEPER_BIN, ...args];
  // npx and npm run start the command through `sh -c`, and the shell gets the Ctrl-C too.
  const throughShell = (args: string[]) => [
    'sh',
    '-c',
    node(args)
      .map((a) => `'${a}'`)
      .join(' '),
  ];

  it.each([
    ['sweeper itself', node],
    ['through a shell, as npx and npm run start it', throughShell],
  ])('stops a backfill the way SIGTERM does: %s', async (how, command) => {
    const db = await database();
    const valve = await startValveProxy(double.url, (path) => (listedFrom(path) ?? 0) >= (base + 75 * MIN) / 1000);
    try {
      const job = startJob(command(backfill), env(db, { STRIPE_API_BASE: valve.url, SWEEPER_PROGRESS_INTERVAL: '1s' }));
      await valve.held;
      // Slice 1 committed too, however slowly the machine judges it: then the job waits on the valve alone.
      await job.said('"slices_done":2');
      job.ctrlC();
      const stopped = await job.done;
      // The slice in progress rolled back, the committed ones stand, the run says so.
      expect(sweeperLines(stopped.stderr)).toEqual([
        'sweeper: SIGINT received; finishing the current slice (at most 20s)',
        'sweeper: interrupted (SIGINT received): account platform after 2 of 5 slices; committed slices stand, run the same backfill again: it resumes from its last committed slice',
      ]);
      expect(stopped.stdout.split('\n')[0]).toMatch(/INTERRUPTED \(SIGINT received\): 2 of 5 slices committed/);
      const { rows } = await db.pool.query<{ status: string }>('SELECT status FROM recon_runs');
      expect(rows).toEqual([{ status: 'interrupted' }]);
      if (how === 'sweeper itself') expect(stopped.code).toBe(1);
      // The shell itself ends on the Ctrl-C it received (dash, /bin/sh on Debian: a shell
      // reports 130) or with the command's 1 (bash): docs/cli.md "Exit codes" says both.
      else expect(stopped.code === 1 || stopped.signal === 'SIGINT').toBe(true);
    } finally {
      valve.release();
      await valve.close();
    }
  });
});

describe('on a terminal', () => {
  /* eslint-disable no-control-regex -- what a terminal receives is matched escape by escape */
  it('draws one progress line, redrawn in place, wiped before every log line; logs are pretty, not JSON, and few', async () => {
    const db = await database();
    const command = [process.execPath, SWEEPER_BIN, ...backfill].map((a) => `'${a}'`).join(' ');
    // script(1) runs the command on a pseudo-terminal: stderr is a TTY, as for a person.
    const tty = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
      const child = spawn('script', ['-qfec', command, '/dev/null'], {
        cwd: ROOT,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, TERM: 'xterm', ...env(db) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, out }));
    });
    expect(tty.code, tty.out.slice(-2000)).toBe(3);
    const out = tty.out;
    // The progress line: wiped and drawn again in place, never with a newline of its own.
    const draws =
      out.match(/\r\x1b\[Kbackfill platform \[[█░]{20}\] +\d+% {2}\d\/5 slices {2}\d+ charges[^\r\n]*/g) ?? [];
    expect(draws.length).toBeGreaterThanOrEqual(6); // at the start and after each of the five slices
    expect(draws.at(-1)).toMatch(/\[█{20}\] 100% {2}5\/5 slices {2}10 charges/);
    // Pretty log lines, each starting a line of its own: after a newline or a wipe, never glued to the progress line.
    expect(out).toMatch(/\[\d{2}:\d{2}:\d{2}\.\d{3}\] \x1b\[32mINFO\x1b\[39m: \x1b\[36msweep started/);
    const stamps = [...out.matchAll(/\[\d{2}:\d{2}:\d{2}\.\d{3}\] /g)];
    expect(stamps.length).toBeGreaterThanOrEqual(1);
    for (const stamp of stamps) expect(out.slice(0, stamp.index)).toMatch(/(?:^|\n|\r\x1b\[K)$/);
    expect(out).not.toMatch(/^\{"level"/m);
    // The summary is said once, on stdout: no "sweep finished" log repeating it, and none of
    // the run's own bookkeeping at info (SWEEPER_LOG_LEVEL unset).
    expect(out).not.toMatch(/sweep finished|listing slices ahead/);
    expect(out.match(/\n {2}category +found +repaired/g)).toHaveLength(1);
    // The summary starts on a clean line once the progress line is wiped.
    expect(out).toMatch(/\r\x1b\[Kbackfill run_\S+ {2}account platform\r?\n/);
    expect(out).toMatch(/sweeper: 10 unreconciled finding\(s\) open/);
  });
  /* eslint-enable no-control-regex */
});

describe('a stalled account pages, and every failure says why', () => {
  /** Stripe refusing the key: every run of the account fails. */
  async function refusingStripe(): Promise<{ url: string; server: Server }> {
    const server = createServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: { type: 'invalid_request_error', message: 'Invalid API Key provided: sk_test_****ting' },
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
  }

  it('a failing account whose watermark is past SWEEPER_MAX_LAG raises reconciliation_lag; an undelivered alert exits 1 saying so; the catch-up resolves it', async () => {
    const db = await database();
    const received: Array<Record<string, unknown>> = [];
    let answer = 200;
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (answer === 200) received.push(JSON.parse(body) as Record<string, unknown>);
        res.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hook = {
      SWEEPER_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`,
      SWEEPER_WEBHOOK_SECRET: 'whsec_operating_0123456789',
    };
    // The last scheduled run judged up to 3 hours ago.
    const watermark = new Date(Date.now() - 3 * HOUR);
    await db.pool.query(
      `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at, finished_at)
       VALUES ('run_old', 'run', 'platform', $1, $2, 'succeeded', $2, $2, $2)`,
      [new Date(watermark.getTime() - HOUR), watermark],
    );
    await db.pool.query(
      `INSERT INTO recon_watermarks (account, shard, watermark, run_id, updated_at) VALUES ('platform', '', $1, 'run_old', $1)`,
      [watermark],
    );
    const refusing = await refusingStripe();
    try {
      const failed = await runCli(['run', '--json'], env(db, { ...hook, STRIPE_API_BASE: refusing.url }));
      expect(failed.code).toBe(1);
      const report = JSON.parse(failed.stdout.trim().split('\n')[0]!);
      expect(report).toMatchObject({
        status: 'failed',
        completeness: { account: 'platform', lagging: true, max_lag_seconds: 7200 },
      });
      expect(report.completeness.watermark_lag_seconds).toBeGreaterThanOrEqual(3 * 3600);
      expect(lastSweeperLine(failed)).toMatch(
        /^sweeper: Stripe rejected the API key \(401\).*; fix the cause; the next run retries from the watermark$/,
      );
      expect(received).toEqual([
        expect.objectContaining({
          event: 'reconciliation.lagging',
          account: 'platform',
          unreconciled: 0,
          lag: expect.objectContaining({ lagging: true }),
        }),
      ]);

      answer = 500; // the receiver is down when the account catches up
      const caughtUp = await runCli(['run', '--json'], env(db, hook));
      expect(caughtUp.code).toBe(1);
      expect(JSON.parse(caughtUp.stdout.trim().split('\n')[0]!)).toMatchObject({
        status: 'succeeded',
        completeness: { lagging: false },
      });
      expect(lastSweeperLine(caughtUp)).toMatch(
        /^sweeper: 1 alert delivery failed \(webhook post for platform: .*500.*\); the run's results are saved and printed, and the next run sends the alert again: check the sink's URL and that it answers 2xx$/,
      );

      answer = 200;
      const delivered = await runCli(['run', '--json'], env(db, hook));
      expect(delivered.code).toBe(3);
      expect(received.at(-1)).toMatchObject({ event: 'findings.open', lag: { lagging: false } });
      // The run's --json carries the account's completeness: the days, each with its settled share.
      const days = JSON.parse(delivered.stdout.trim().split('\n')[0]!).completeness.days as Array<{
        charges: number;
        settled: number;
        fraction: number;
      }>;
      expect(days).toHaveLength(3);
      for (const d of days)
        expect(d.fraction).toBe(d.charges === 0 ? 1 : Math.floor((d.settled / d.charges) * 10_000) / 10_000);
    } finally {
      refusing.server.close();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  it('a run locked out by another run exits 75 saying what to do; usage errors are one sweeper: line', async () => {
    const db = await database();
    const valve = await startValveProxy(double.url, () => true);
    try {
      const first = startCli(['run'], env(db, { STRIPE_API_BASE: valve.url }));
      await valve.held;
      const second = await runCli(['run'], env(db));
      expect(second.code).toBe(75);
      expect(lastSweeperLine(second)).toMatch(
        /^sweeper: another sweep is running for account platform; this one stops \(it does not wait\): nothing to do if it is a one-off.*`sweeper status` shows the running run\)$/,
      );
      first.child.kill('SIGTERM');
      expect((await first.done).code).toBe(1);
    } finally {
      valve.release();
      await valve.close();
    }
    const usage = await runCli(['backfill', '--from', '2026-11-01'], env(db));
    expect(usage.code).toBe(64);
    expect(usage.stderr.trim()).toBe(
      "sweeper: required option '--to <time>' not specified (usage: sweeper backfill --help)",
    );
    const none = await runCli([], env(db));
    expect(none.code).toBe(64);
    expect(lastSweeperLine(none)).toBe(
      'sweeper: no command given: pick one of the commands above (sweeper <command> --help)',
    );
  });
});
