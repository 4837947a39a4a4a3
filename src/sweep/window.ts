import { createHash } from 'node:crypto';

/** A half-open time range `[from, to)`. */
export interface TimeWindow {
  from: Date;
  to: Date;
}

export interface ScheduledWindowInput {
  watermark: Date | null;
  now: Date;
  overlapMs: number;
  settleMs: number;
  /** Where a first run (no watermark yet) starts, back from now. */
  firstRunLookbackMs: number;
}

/**
 * `[watermark − overlap, now − settle)`. The overlap re-reads charges that Stripe
 * may have listed late; settle keeps work still in flight out of judgement.
 * Returns null when there is nothing settled to look at yet.
 */
export function scheduledWindow(input: ScheduledWindowInput): TimeWindow | null {
  // Whole seconds: Stripe's `created` filters are in seconds.
  const to = new Date(floorSecond(input.now.getTime() - input.settleMs));
  const start = input.watermark
    ? input.watermark.getTime() - input.overlapMs
    : input.now.getTime() - input.firstRunLookbackMs;
  const from = new Date(floorSecond(start));
  return from < to ? { from, to } : null;
}

const floorSecond = (ms: number) => Math.floor(ms / 1000) * 1000;

/**
 * Splits a window into slices aligned to multiples of `sliceMs` since the epoch, so
 * a resumed or repeated run cuts the same slices as the first one did.
 */
export function slicesOf(window: TimeWindow, sliceMs: number): TimeWindow[] {
  const slices: TimeWindow[] = [];
  let from = window.from.getTime();
  const end = window.to.getTime();
  while (from < end) {
    const boundary = (Math.floor(from / sliceMs) + 1) * sliceMs;
    const to = Math.min(boundary, end);
    slices.push({ from: new Date(from), to: new Date(to) });
    from = to;
  }
  return slices;
}

/** Widens a window by `marginMs` on each side (the charge read horizon of a slice). */
export function widen(window: TimeWindow, marginMs: number, notAfter?: Date): TimeWindow {
  const to = window.to.getTime() + marginMs;
  return {
    from: new Date(window.from.getTime() - marginMs),
    to: new Date(notAfter ? Math.min(to, notAfter.getTime()) : to),
  };
}

export interface Shard {
  index: number;
  count: number;
}

/** `I/N` with 0 ≤ I < N, e.g. `0/4` … `3/4` (Kubernetes JOB_COMPLETION_INDEX is zero-based). */
export function parseShard(text: string): Shard | undefined {
  const match = /^(\d+)\/(\d+)$/.exec(text.trim());
  if (!match) return undefined;
  const index = Number(match[1]);
  const count = Number(match[2]);
  if (count < 1 || index >= count) return undefined;
  return { index, count };
}

/** The shard an account belongs to: a stable hash, the same on every machine and version. */
export function shardOf(account: string, count: number): number {
  return createHash('sha256').update(account).digest().readUInt32BE(0) % count;
}

export function formatShard(shard: Shard | undefined): string {
  return shard ? `${shard.index}/${shard.count}` : '';
}
