import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from './units.js';

/** Durations as operators write them: `90s`, `15m`, `1h`, `7d` (also `500ms`). */

const UNIT_MS = { ms: 1, s: SECOND_MS, m: MINUTE_MS, h: HOUR_MS, d: DAY_MS } as const;
const DURATION = /^(\d+)(ms|s|m|h|d)$/;

/** Parses a duration into milliseconds; returns `undefined` for anything else. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  if (!match) return undefined;
  const value = Number(match[1]);
  const unit = match[2] as keyof typeof UNIT_MS;
  const ms = value * UNIT_MS[unit];
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** The shortest exact spelling of a duration, for messages and logs. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit];
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
