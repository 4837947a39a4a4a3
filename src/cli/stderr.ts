/**
 * stderr of the CLI. On a terminal it carries one status line that is redrawn in
 * place (the progress display) besides ordinary lines (logs, `sweeper:` lines). Every
 * ordinary line goes through `writeStderr`, which wipes the status line first and
 * draws it again after, so a log line never lands on the end of it.
 */

/** Carriage return, then erase to the end of the line. */
const WIPE = '\r\x1b[K';

let shown: string | null = null;

export function stderrIsTerminal(): boolean {
  return process.stderr.isTTY === true;
}

/** The terminal's width, when stderr is one and says it. */
export function terminalColumns(): number | undefined {
  return stderrIsTerminal() ? process.stderr.columns : undefined;
}

/** Writes ordinary text (whole lines) to stderr, around the status line if one is shown. */
export function writeStderr(text: string): void {
  process.stderr.write(shown === null ? text : `${WIPE}${text}${shown}`);
}

/** Shows `line` as the status line (a terminal only), replacing the one shown. */
export function showStatusLine(line: string): void {
  if (!stderrIsTerminal()) return;
  shown = fitWidth(line, process.stderr.columns);
  process.stderr.write(`${WIPE}${shown}`);
}

/** Removes the status line; the cursor is left at the start of an empty line. */
export function clearStatusLine(): void {
  if (shown === null) return;
  shown = null;
  process.stderr.write(WIPE);
}

/**
 * A line wider than the terminal wraps, and `\r` then only returns to the start of
 * its last row: the redraw would stack up. Cut it one column short of the width.
 */
export function fitWidth(line: string, columns: number | undefined): string {
  if (!columns || columns < 2) return line;
  const chars = [...line];
  return chars.length < columns ? line : `${chars.slice(0, columns - 2).join('')}…`;
}
