/**
 * timestamptz values as PostgreSQL prints them with `DateStyle = ISO` (its default, and
 * what node-postgres expects): `2026-11-26 03:14:15.123456+00`, the offset `±HH`,
 * `±HH:MM` or `±HH:MM:SS` in the session's time zone. The sweep's gather reads five or
 * six per charge (five million or more in a backfill of a million), and the generic parser
 * (postgres-date) runs three regular expressions and builds a dozen substrings for
 * each; this reads the characters in place. Anything else (`infinity`, a year before
 * 1000 or after 9999, `BC`, another DateStyle) returns null: the caller falls back to
 * the generic parser, so the fast path never changes what a value means.
 *
 * Milliseconds are truncated, as JavaScript's Date truncates a fraction of them.
 */
export function isoTimestamptzMs(text: string): number | null {
  const n = text.length;
  // `YYYY-MM-DD HH:MM:SS+HH` is the shortest form.
  if (n < 22 || n > 35) return null;
  if (
    text.charCodeAt(4) !== DASH ||
    text.charCodeAt(7) !== DASH ||
    text.charCodeAt(10) !== SPACE ||
    text.charCodeAt(13) !== COLON ||
    text.charCodeAt(16) !== COLON
  ) {
    return null;
  }
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  // Date.UTC reads years 0–99 as 1900–1999: leave those (and the rest of the oddities) to the generic parser.
  if (year < 1000 || month < 1 || day < 1 || hour < 0 || minute < 0 || second < 0) return null;

  let i = 19;
  let ms = 0;
  if (text.charCodeAt(i) === DOT) {
    i += 1;
    let count = 0;
    while (i < n && isDigit(text.charCodeAt(i))) {
      if (count < 3) ms = ms * 10 + (text.charCodeAt(i) - ZERO);
      count += 1;
      i += 1;
    }
    if (count === 0 || count > 6) return null;
    if (count === 1) ms *= 100;
    else if (count === 2) ms *= 10;
  }

  const sign = text.charCodeAt(i);
  if (sign !== PLUS && sign !== DASH) return null;
  const offsetHours = digits(text, i + 1, 2);
  if (offsetHours < 0) return null;
  i += 3;
  let offsetMinutes = 0;
  let offsetSeconds = 0;
  if (i < n) {
    if (text.charCodeAt(i) !== COLON) return null;
    offsetMinutes = digits(text, i + 1, 2);
    if (offsetMinutes < 0) return null;
    i += 3;
    if (i < n) {
      if (text.charCodeAt(i) !== COLON) return null;
      offsetSeconds = digits(text, i + 1, 2);
      if (offsetSeconds < 0) return null;
      i += 3;
    }
  }
  if (i !== n) return null;
  const offsetMs = ((offsetHours * 60 + offsetMinutes) * 60 + offsetSeconds) * 1000;
  return Date.UTC(year, month - 1, day, hour, minute, second, ms) - (sign === PLUS ? offsetMs : -offsetMs);
}

const ZERO = 48;
const DASH = 45;
const PLUS = 43;
const SPACE = 32;
const COLON = 58;
const DOT = 46;

function isDigit(code: number): boolean {
  return code >= ZERO && code <= ZERO + 9;
}

/** The decimal number in `text[at, at + count)`, or -1 if any of it is not a digit (or it runs past the end). */
function digits(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i += 1) {
    const code = text.charCodeAt(i); // NaN past the end: not a digit
    if (!isDigit(code)) return -1;
    value = value * 10 + (code - ZERO);
  }
  return value;
}
