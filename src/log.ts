import { pino, type DestinationStream, type Logger } from 'pino';
import { prettyFactory } from 'pino-pretty';
import { redact } from './secrets.js';
import { prettySafeJson } from './terminal-text.js';

export type { Logger } from 'pino';

/**
 * pino on stderr (stdout carries results): JSON lines, or pino-pretty's for a person
 * at a terminal (the CLI decides: src/cli/log-output.ts). Secrets are redacted by path
 * wherever they could be attached to a log line, and by value (src/secrets.ts) in the
 * final line, wherever they hide in text.
 */
export const REDACTED_PATHS = [
  'stripeApiKey',
  '*.stripeApiKey',
  'apiKey',
  '*.apiKey',
  'databaseUrl',
  '*.databaseUrl',
  'password',
  '*.password',
  'connectionString',
  '*.connectionString',
  'headers.authorization',
  '*.headers.authorization',
  'headers.Authorization',
  '*.headers.Authorization',
];

export interface LoggerOptions {
  level?: string;
  runId?: string;
  /** Where the lines go; stderr unless a test captures them. */
  destination?: DestinationStream;
  /** `json` (default): one JSON object per line. `pretty`: pino-pretty's readable lines, for a person at a terminal. */
  format?: 'json' | 'pretty';
  /** Pretty only: ANSI colours (a terminal). */
  colorize?: boolean;
  /**
   * Below `warn`, only the lines marked `forOperator`: what a person at a terminal acts
   * on, not the run's own bookkeeping (the CLI on a terminal, SWEEPER_LOG_LEVEL unset).
   */
  operatorOnly?: boolean;
}

/**
 * Marks a log line as one an operator at a terminal acts on (a wait for a lock, where a
 * sweep starts, money refunded, …). A symbol, so the JSON line is the same with or without it.
 */
const FOR_OPERATOR = Symbol('for the operator');

export function forOperator<T extends object>(fields: T): T {
  return { ...fields, [FOR_OPERATOR]: true };
}

const WARN = 40;

function markedForOperator(args: readonly unknown[]): boolean {
  const first = args[0];
  return typeof first === 'object' && first !== null && FOR_OPERATOR in first;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? 'json';
  const destination = options.destination ?? pino.destination({ fd: 2, sync: true });
  const base: Record<string, unknown> = { pid: process.pid };
  if (options.runId) base.run_id = options.runId;
  return pino(
    {
      level: options.level ?? 'info',
      base,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      hooks: {
        // Replacing text inside JSON strings with '[redacted]' keeps the line valid JSON.
        streamWrite: redact,
        ...(options.operatorOnly
          ? {
              logMethod(args, method, level) {
                if (level >= WARN || markedForOperator(args)) method.apply(this, args);
              },
            }
          : {}),
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    format === 'pretty' ? prettyDestination(destination, options.colorize ?? false) : destination,
  );
}

/**
 * pino-pretty's formatter, run in this process on each line pino writes (no worker
 * thread, nothing buffered: a line logged just before exit is on the terminal before
 * exit). The line it gets is already redacted (`streamWrite`); control characters in
 * its values are kept escaped, so hostile text cannot steer the terminal.
 */
function prettyDestination(out: DestinationStream, colorize: boolean): DestinationStream {
  const prettify = prettyFactory({ colorize, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
  return { write: (line: string) => out.write(prettify(prettySafeJson(line))) };
}

/** A logger that drops everything, for library callers that pass none. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
