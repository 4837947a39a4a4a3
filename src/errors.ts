/**
 * Errors that carry the exit code the CLI should end with. Library code throws
 * these where a caller (or the CLI) branches on the kind of failure.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly exitCode = 64;
}

/** The database is unreachable or refused us: the run failed, nothing was written. */
export class DatabaseUnavailableError extends Error {
  override readonly name = 'DatabaseUnavailableError';
  readonly exitCode = 1;
}
