import { describeAccount, isoSeconds } from './window.js';
import { ExitCode } from '../../exit-codes.js';

/** The created range an events listing asked for, unix seconds: `gte <= created < lt` (`lt` null: open). */
export interface EventRange {
  gte: number;
  lt: number | null;
}

export function describeEventRange(range: EventRange): string {
  return `[${isoSeconds(range.gte)}, ${range.lt === null ? '…' : isoSeconds(range.lt)})`;
}

/**
 * An events listing could not be read to its end: a request failed for good, a page
 * was not a well-formed list, the cursor did not advance, an event id came twice, or
 * an event contradicted the request. Thrown instead of returning what was read, since
 * a partial listing looks exactly like "nothing else changed": the caller keeps its
 * cursor and reads the range again. Exit code 1: the run failed.
 */
export class IncompleteEventsError extends Error {
  override readonly name = 'IncompleteEventsError';
  readonly exitCode = ExitCode.failed;

  constructor(
    readonly account: string | null,
    readonly range: EventRange,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `events of ${describeAccount(account)} created in ${describeEventRange(range)} could not be listed completely: ${reason}`,
      options,
    );
  }
}

/** The key may not read events (HTTP 403): a restricted key needs `Events: Read` (rak_event_read). Exit code 64. */
export class MissingEventsPermissionError extends Error {
  override readonly name = 'MissingEventsPermissionError';
  readonly exitCode = ExitCode.usage;
  readonly permission = 'rak_event_read';

  constructor(
    readonly account: string | null,
    stripeMessage: string,
  ) {
    super(
      `the Stripe key may not read events of ${describeAccount(account)} (403): it is missing the Events read permission ` +
        `(rak_event_read). Grant 'Events: Read' to the restricted key${account === null ? '' : ' on this connected account'}. ` +
        `Stripe said: ${stripeMessage}`,
    );
  }
}

/** A charge could not be re-read (a request failed for good, or the answer is not that charge). Exit code 1. */
export class ChargeRetrievalError extends Error {
  override readonly name = 'ChargeRetrievalError';
  readonly exitCode = ExitCode.failed;

  constructor(
    readonly account: string | null,
    readonly chargeId: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`charge ${chargeId} of ${describeAccount(account)} could not be re-read: ${reason}`, options);
  }
}
