import type { Config } from '../config.js';
import { createLogger, type Logger } from '../log.js';
import { stderrIsTerminal, writeStderr } from './stderr.js';

export type LogFormat = 'json' | 'pretty';

/** Pretty logs on a terminal with no SWEEPER_LOG_LEVEL keep to what an operator acts on; JSON logs never change. */
export function operatorOnly(terminal: boolean, format: LogFormat, levelSet: boolean): boolean {
  return terminal && format === 'pretty' && !levelSet;
}

/** SWEEPER_LOG_FORMAT when set; otherwise readable lines for a person at a terminal, JSON for machines. */
export function logFormatFor(forced: LogFormat | undefined, terminal: boolean): LogFormat {
  return forced ?? (terminal ? 'pretty' : 'json');
}

/**
 * The CLI's logger. On a terminal, lines go through `writeStderr` so they never
 * collide with the progress display, and pretty lines are coloured; piped (a job's
 * log collector) they are written to fd 2 synchronously, as pino writes them.
 * A person at a terminal reads the summary on stdout: unless SWEEPER_LOG_LEVEL says
 * otherwise, the pretty logs there keep to warnings and the lines marked `forOperator`.
 */
export function cliLogger(config: Pick<Config, 'logLevel' | 'logLevelSet' | 'logFormat'>): Logger {
  const terminal = stderrIsTerminal();
  const format = logFormatFor(config.logFormat, terminal);
  return createLogger({
    level: config.logLevel,
    format,
    colorize: terminal && format === 'pretty',
    operatorOnly: operatorOnly(terminal, format, config.logLevelSet),
    ...(terminal ? { destination: { write: (line: string) => writeStderr(line) } } : {}),
  });
}
