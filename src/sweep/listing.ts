import type { MalformedCharge } from './provider.js';
import type { TimeWindow } from './window.js';
import { ExitCode } from '../exit-codes.js';

/** What a slice's listing must satisfy, whichever path lists it (prefetch.ts, slice.ts). */

/** The same charge id twice with different content in one listing. Exit 1: the run failed, nothing of the slice was judged. */
export class BrokenListingError extends Error {
  override readonly name = 'BrokenListingError';
  readonly exitCode = ExitCode.failed;
}

/** Whether an unreadable charge is this slice's own (its `created` in the slice, or unknown). */
export function ownedBy(slice: TimeWindow, bad: MalformedCharge): boolean {
  if (bad.created === undefined) return true;
  const at = bad.created * 1000;
  return at >= slice.from.getTime() && at < slice.to.getTime();
}
