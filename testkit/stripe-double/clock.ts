/**
 * The double's notion of "now": `created` of new objects and the age of idempotency
 * keys. Follows real time until a test sets it; then it stands still until advanced,
 * so tests decide exactly which second things happen in. Rate limits and latency use
 * real time regardless: they model the network, not Stripe's records.
 */
export class DoubleClock {
  private frozenAt: number | undefined;
  private offsetMs = 0;

  now(): Date {
    return new Date(this.nowMs());
  }

  nowMs(): number {
    return this.frozenAt ?? Date.now() + this.offsetMs;
  }

  /** Unix seconds, as Stripe reports `created`. */
  nowSeconds(): number {
    return Math.floor(this.nowMs() / 1000);
  }

  /** Stops the clock at `instant` (a Date, an ISO string or epoch milliseconds). */
  set(instant: Date | string | number): void {
    const ms =
      instant instanceof Date ? instant.getTime() : typeof instant === 'string' ? Date.parse(instant) : instant;
    if (!Number.isFinite(ms)) throw new RangeError(`not a valid instant: ${String(instant)}`);
    this.frozenAt = ms;
  }

  advance(ms: number): void {
    if (this.frozenAt === undefined) this.offsetMs += ms;
    else this.frozenAt += ms;
  }

  /** Back to following real time (shifted by any earlier advance). */
  useRealTime(): void {
    this.frozenAt = undefined;
  }
}
