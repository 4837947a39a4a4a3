import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The CLI as installed: bin/sweeper.js runs dist/, which the global setup builds when src/ changed (build.ts). */
export const SWEEPER_BIN = fileURLToPath(new URL('../../bin/sweeper.js', import.meta.url));
/** The standalone Stripe double, from dist-testkit/. */
export const STRIPE_DOUBLE_BIN = fileURLToPath(new URL('../../bin/sweeper-stripe-double.js', import.meta.url));

/**
 * The environment a test runs the CLI with: its database, a Stripe (the double, or a
 * proxy in front of it) and an API key for it, then the test's own settings.
 */
export function cliEnv<S extends Record<string, string | undefined>>(
  target: { db: { url: string }; stripe: string; key: string },
  settings: S = {} as S,
): { DATABASE_URL: string; STRIPE_API_KEY: string; STRIPE_API_BASE: string } & S {
  return { DATABASE_URL: target.db.url, STRIPE_API_KEY: target.key, STRIPE_API_BASE: target.stripe, ...settings };
}

/**
 * A scheduled run over little, on the real clock: the last hour on a first run, then from
 * its watermark minus a minute; settle as short as a 5 s lease allows.
 */
export const SHORT_RUN_SETTINGS = {
  SWEEPER_ACCOUNTS: 'platform',
  SWEEPER_CLAIM_LEASE: '5s',
  SWEEPER_SETTLE: '65s',
  SWEEPER_OVERLAP: '1m',
  SWEEPER_FIRST_RUN_LOOKBACK: '1h',
  SWEEPER_EVENTS_LAG: '1s',
} as const;

/** The `sweeper: …` lines of a run's stderr: what an operator reads (the rest is JSON logs). */
export function sweeperLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.startsWith('sweeper: '));
}

export interface CliResult {
  code: number | null;
  signal?: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the built CLI as a subprocess (what an operator runs), with exactly the
 * environment given: nothing leaks in from the test process.
 */
export function runCli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return startCli(args, env).done;
}

export interface RunningCli {
  child: ChildProcess;
  done: Promise<CliResult>;
  /** Resolves when a stderr line matches: how a test waits for "the lock is held" without sleeping. */
  stderrLine(pattern: RegExp): Promise<string>;
  /** The same for stdout: how a test waits for a server's address. */
  stdoutLine(pattern: RegExp): Promise<string>;
}

export function startCli(args: string[], env: Record<string, string | undefined> = {}): RunningCli {
  const child = spawn(process.execPath, [SWEEPER_BIN, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const text = { stdout: '', stderr: '' };
  const waiters: Array<{ stream: keyof typeof text; pattern: RegExp; resolve: (line: string) => void }> = [];
  const matching = (stream: keyof typeof text, pattern: RegExp) =>
    text[stream].split('\n').find((l) => pattern.test(l));
  const collect = (stream: keyof typeof text) => (chunk: Buffer) => {
    text[stream] += chunk.toString();
    for (const w of waiters.filter((w) => w.stream === stream)) {
      const line = matching(stream, w.pattern);
      if (line !== undefined) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  };
  child.stdout.on('data', collect('stdout'));
  child.stderr.on('data', collect('stderr'));
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout: text.stdout, stderr: text.stderr }));
  });
  const lineOf = (stream: keyof typeof text) => (pattern: RegExp) => {
    const existing = matching(stream, pattern);
    if (existing !== undefined) return Promise.resolve(existing);
    return new Promise<string>((resolve, reject) => {
      waiters.push({ stream, pattern, resolve });
      void done.then(() => reject(new Error(`process ended before ${stream} matched ${pattern}:\n${text.stderr}`)));
    });
  };
  return { child, done, stderrLine: lineOf('stderr'), stdoutLine: lineOf('stdout') };
}
