/**
 * A `[from, to)` window over Stripe's `created` (unix seconds). Stripe filters on whole
 * seconds, so both ends are rounded up: `created >= 10.5` and `created < 10.5` mean the
 * same as `>= 11` and `< 11` for an integer `created`.
 */
export type Instant = Date | number;

export interface ChargeWindow {
  /** Inclusive. A Date, or unix seconds. */
  from: Instant;
  /** Exclusive. A Date, or unix seconds. */
  to: Instant;
}

/** A window in whole unix seconds: `gte <= created < lt`. */
export interface UnixRange {
  gte: number;
  lt: number;
}

export function toUnixSeconds(instant: Instant): number {
  const seconds = instant instanceof Date ? instant.getTime() / 1000 : instant;
  if (!Number.isFinite(seconds)) throw new RangeError(`not a valid instant: ${String(instant)}`);
  return Math.ceil(seconds);
}

export function toUnixRange(window: ChargeWindow): UnixRange {
  const range = { gte: toUnixSeconds(window.from), lt: toUnixSeconds(window.to) };
  if (range.lt < range.gte) {
    throw new RangeError(`window ends before it starts: ${describeRange(range)}`);
  }
  return range;
}

export function isoSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}

export function describeRange(range: UnixRange): string {
  return `[${isoSeconds(range.gte)}, ${isoSeconds(range.lt)})`;
}

export function describeAccount(account: string | null): string {
  return account === null ? 'the platform account' : `account ${account}`;
}
