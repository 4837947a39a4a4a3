/**
 * Text from outside (a charge's metadata, an upstream's error message, a finding's
 * reason) shown on a terminal must not drive it: an ANSI escape can recolour, move
 * the cursor, retitle the window or hide what follows, and bidi overrides reorder
 * what a person reads. Control characters (C0 but tab and, where allowed, newline;
 * DEL; C1) and bidi controls are shown escaped, as `\x1b` or `\u202e`.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE_MULTILINE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex
const UNSAFE_LINE = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function escape(char: string): string {
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** Newlines kept (a table, a report); everything else that steers a terminal escaped. */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE_MULTILINE, escape);
}

/** For one line (an error message): newlines escaped too. */
export function terminalSafeLine(text: string): string {
  return text.replace(UNSAFE_LINE, escape);
}

const UNSAFE_IN_JSON = /[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/**
 * JSON text safe for a terminal with its meaning unchanged: JSON.stringify already
 * escapes C0 controls; DEL, C1 and bidi controls become `\u` escapes, which parse
 * back to the same string.
 */
export function terminalSafeJson(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A JSON escape of a character that steers a terminal, not preceded by an escaping backslash. */
const STEERING_ESCAPE =
  /(?<!\\)((?:\\\\)*)\\(u(?:00[01][0-9a-fA-F]|007[fF]|00[89][0-9a-fA-F]|061[cC]|200[eEfF]|202[89a-eA-E]|206[6-9])|[bfr])/g;

/**
 * A JSON line for a formatter that prints its string values raw (pino-pretty): every
 * control character in a value becomes the visible text `\u001b` (its escape, itself
 * escaped), so the formatted line shows it instead of obeying it. Newlines and tabs
 * stay (a stack trace), as in `terminalSafe`.
 */
export function prettySafeJson(json: string): string {
  return terminalSafeJson(json).replace(STEERING_ESCAPE, '$1\\\\$2');
}
