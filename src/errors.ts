import { ExitCode } from './exit-codes.js';

/**
 * Errors that carry the exit code the CLI should end with. Library code throws
 * these where a caller (or the CLI) branches on the kind of failure.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly exitCode = ExitCode.usage;
}

/** The database is unreachable or refused us: the run failed, nothing was written. */
export class DatabaseUnavailableError extends Error {
  override readonly name = 'DatabaseUnavailableError';
  readonly exitCode = ExitCode.failed;
}

/** What was thrown, as text: an Error's (or error-like object's) message, else the value itself (`throw undefined` too). */
export function errorMessage(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'message' in error && typeof error.message === 'string')
    return error.message;
  return String(error);
}

/** A property of what was thrown, when it is an object (`code`, `statusCode`, `headers`…); undefined otherwise. */
export function errorField(error: unknown, field: string): unknown {
  return typeof error === 'object' && error !== null ? (error as Record<string, unknown>)[field] : undefined;
}
