import { pino, type Logger } from 'pino';
import { redact } from './secrets.js';

export type { Logger } from 'pino';

/**
 * pino JSON on stderr (stdout carries results). Secrets are redacted by path
 * wherever they could be attached to a log line, and by value (src/secrets.ts) in the
 * final line, wherever they hide in text; the config is logged through
 * `describeConfig`, which never includes them in the first place.
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
  /** Where the JSON lines go; stderr unless a test captures them. */
  destination?: NodeJS.WritableStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const base: Record<string, unknown> = { pid: process.pid };
  if (options.runId) base.run_id = options.runId;
  return pino(
    {
      level: options.level ?? 'info',
      base,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      // Replacing text inside JSON strings with '[redacted]' keeps the line valid JSON.
      hooks: { streamWrite: redact },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? pino.destination({ fd: 2, sync: true }),
  );
}

/** A logger that drops everything, for library callers that pass none. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
