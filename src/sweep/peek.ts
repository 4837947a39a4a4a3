import type { ChargePeek, ChargeSource } from './provider.js';
import type { SweepDeps, SweepOptions } from './types.js';
import { slicesOf, widen, type TimeWindow } from './window.js';

/**
 * A scheduled run's window in one request (docs/platforms.md "Idle accounts"): the whole
 * window with its lease margins, one page. When every charge fits in it (most accounts of
 * a platform, most runs), the window is judged as one slice, from that page: one request
 * and one transaction instead of one of each per slice. Otherwise the slices are listed
 * as always, and the page is only the price of asking. A backfill lists its slices.
 */
export async function listingPlan(
  deps: Pick<SweepDeps, 'listCharges' | 'peekCharges'>,
  options: Pick<SweepOptions, 'mode' | 'sliceMs' | 'leaseMs' | 'signal'>,
  account: string,
  window: { from: Date; to: Date },
  readUntil: Date,
  /** The page already read for this window (the runner's group read it). */
  peeked?: ChargePeek,
): Promise<{ slices: TimeWindow[]; listCharges: ChargeSource }> {
  const sliced = { slices: slicesOf(window, options.sliceMs), listCharges: deps.listCharges };
  if (options.mode !== 'run' || (!peeked && !deps.peekCharges)) return sliced;
  const peek = peeked ?? (await deps.peekCharges?.(account, widen(window, options.leaseMs, readUntil), options.signal));
  if (!peek?.complete) return sliced;
  return { slices: [{ from: window.from, to: window.to }], listCharges: servedFrom(peek) };
}

/** A listing of what one page already holds: the charges (and unreadable ones) created in the window asked for. */
function servedFrom(peek: ChargePeek): ChargeSource {
  return (_account, window) =>
    (async function* () {
      const from = window.from.getTime();
      const to = window.to.getTime();
      const inside = (created: number | undefined) =>
        created === undefined || (created * 1000 >= from && created * 1000 < to);
      yield {
        charges: peek.charges.filter((c) => inside(c.created)),
        malformed: peek.malformed.filter((m) => inside(m.created)),
      };
    })();
}
