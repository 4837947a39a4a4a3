import { AccountUnavailableError } from '../../sweep/provider.js';
import { describeAccount, describeRange, type UnixRange } from './window.js';
import { ExitCode } from '../../exit-codes.js';

/**
 * Stripe refused the API key (HTTP 401). Retrying cannot help and nothing about the
 * window is known: an operator must fix the configuration, hence exit code 64.
 */
export class InvalidStripeKeyError extends Error {
  override readonly name = 'InvalidStripeKeyError';
  readonly exitCode = ExitCode.usage;

  constructor(
    readonly account: string | null,
    stripeMessage: string,
  ) {
    super(
      `Stripe rejected the API key (401) while listing charges of ${describeAccount(account)}: ${stripeMessage} ` +
        'STRIPE_API_KEY must be a valid secret key (sk_…) or a restricted key (rk_…) with read access to Charges.',
    );
  }
}

/** The key is valid but may not read charges (HTTP 403), e.g. a restricted key without `Charges: Read`. */
export class MissingStripePermissionError extends Error {
  override readonly name = 'MissingStripePermissionError';
  readonly exitCode = ExitCode.usage;
  readonly permission = 'rak_charge_read';

  constructor(
    readonly account: string | null,
    stripeMessage: string,
  ) {
    super(
      `the Stripe key may not read charges of ${describeAccount(account)} (403): it is missing the Charges read ` +
        "permission (rak_charge_read). Grant 'Charges: Read' to the restricted key, or use a key that has it" +
        (account === null ? '' : ' on this connected account') +
        `. Stripe said: ${stripeMessage}`,
    );
  }
}

/** A read permission of a restricted key, as Stripe's dashboard names it. */
export interface ReadPermission {
  /** What it reads, in a sentence: `refunds`. */
  noun: string;
  /** Stripe's permission id: `rak_refund_read`. */
  permission: string;
  /** The dashboard's words: `Refunds: Read`. */
  grant: string;
}

export const REFUNDS_READ: ReadPermission = { noun: 'refunds', permission: 'rak_refund_read', grant: 'Refunds: Read' };
export const PAYOUTS_READ: ReadPermission = { noun: 'payouts', permission: 'rak_payout_read', grant: 'Payouts: Read' };
export const BALANCE_READ: ReadPermission = {
  noun: 'balance transactions',
  permission: 'rak_balance_read',
  grant: 'Balance: Read',
};

/**
 * The key may not read what one step of a run needs (HTTP 403): that step fails with
 * this one line, and the rest of the run stands (docs/operations.md "The Stripe key").
 */
export class MissingReadPermissionError extends Error {
  override readonly name = 'MissingReadPermissionError';
  readonly exitCode = ExitCode.failed;
  readonly permission: string;

  constructor(
    readonly account: string | null,
    what: ReadPermission,
    stripeMessage: string,
  ) {
    super(
      `the Stripe key may not read ${what.noun} of ${describeAccount(account)} (403): it is missing the ` +
        `${what.grant.replace(/: Read$/, ' read')} permission (${what.permission}). Grant '${what.grant}' to the restricted key` +
        (account === null ? '' : ' on this connected account') +
        `. Stripe said: ${stripeMessage}`,
    );
    this.permission = what.permission;
  }
}

/**
 * A connected account answered 403 `account_invalid`: the platform's access to it was
 * revoked (it disconnected the platform), or it no longer exists. Nothing to retry, and
 * nothing wrong with this sweeper: the sweep marks the account inactive and goes on
 * with the others (docs/platforms.md "Revoked accounts").
 */
export class AccountAccessRevokedError extends AccountUnavailableError {
  override readonly name = 'AccountAccessRevokedError';
  readonly exitCode = ExitCode.failed;

  constructor(account: string, stripeMessage: string) {
    super(
      account,
      `Stripe refused access to connected account ${account} (403 account_invalid): the platform's access was revoked ` +
        `or the account is gone; it is marked inactive until Stripe lists it again. Stripe said: ${stripeMessage}`,
    );
  }
}

/**
 * Nothing answers at the Stripe API's address: the connection was refused, or the host
 * name does not resolve. A wrong or dead STRIPE_API_BASE (a double not started, a typo)
 * is not worth minutes of retries: the run fails at once, saying where it tried, as
 * PostgreSQL's connection errors do (src/db/pool.ts). Exit 1: worth a retry later.
 */
export class StripeUnreachableError extends Error {
  override readonly name = 'StripeUnreachableError';
  readonly exitCode = ExitCode.failed;

  constructor(
    readonly where: string,
    readonly code: 'ECONNREFUSED' | 'ENOTFOUND',
    options?: { cause?: unknown },
  ) {
    super(
      code === 'ECONNREFUSED'
        ? `cannot connect to Stripe at ${where} (connection refused): check STRIPE_API_BASE (unset: api.stripe.com) and that a server is running there`
        : `cannot resolve the Stripe host ${where} (not found): check STRIPE_API_BASE (unset: api.stripe.com) and the DNS`,
      options,
    );
  }
}

/**
 * A failure of every request the account would make, not of one window: the key, a
 * permission, the address. Passed on as it is, never wrapped in a window's error.
 */
export function failsEveryRequest(
  error: unknown,
): error is InvalidStripeKeyError | MissingStripePermissionError | StripeUnreachableError | AccountAccessRevokedError {
  return (
    error instanceof InvalidStripeKeyError ||
    error instanceof MissingStripePermissionError ||
    error instanceof AccountAccessRevokedError ||
    error instanceof StripeUnreachableError
  );
}

/**
 * Some part of a window could not be listed. Thrown instead of ending the listing,
 * because a partial result is indistinguishable from "Stripe has no more charges"
 * and would be reconciled as missing charges. Exit code 1: the run failed.
 */
export class IncompleteWindowError extends Error {
  override readonly name = 'IncompleteWindowError';
  readonly exitCode = ExitCode.failed;

  constructor(
    readonly account: string | null,
    readonly window: UnixRange,
    readonly failedSubWindow: UnixRange,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `charges of ${describeAccount(account)} in ${describeRange(window)} could not be listed completely: ` +
        `sub-window ${describeRange(failedSubWindow)} failed: ${reason}`,
      options,
    );
  }
}

/** One request failed for good (retries exhausted or not retryable); the lister turns it into an IncompleteWindowError. */
export class PageFetchError extends Error {
  override readonly name = 'PageFetchError';

  constructor(
    message: string,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A listing answer that is not a well-formed list page (`data` not an array, `has_more`
 * not a boolean, a body that is not an object, more charges than asked for) or a
 * listing that contradicts itself (a cursor that does not advance, a charge listed
 * twice, more pages than the window can hold). Never retried: the window fails with
 * an IncompleteWindowError naming it, and the next run reads the window again.
 */
export class MalformedPageError extends Error {
  override readonly name = 'MalformedPageError';
}

/**
 * One line about anything thrown, never throwing itself: an upstream (or a fuzzer) can
 * make an error out of any value, including objects without a prototype, whose
 * `String()` throws.
 */
export function describeError(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  if (typeof message === 'string') return message;
  try {
    return typeof error === 'string' ? error : ((JSON.stringify(error) as string | undefined) ?? String(error));
  } catch {
    return `an error of type ${typeof error}`;
  }
}
