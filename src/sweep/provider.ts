import type { TimeWindow } from './window.js';

/**
 * The payment provider as the sweep sees it: a provider-neutral model of charges,
 * refunds and change events, and the one interface a provider implements
 * (`PaymentProvider`). Stripe's lives in src/providers/stripe/; adding a provider is
 * adding a folder beside it that implements this interface.
 */

/**
 * A charge as the sweeper sees it: the fields reconciliation needs, flattened,
 * with the claim attribution read from metadata (names configurable).
 */
export interface NormalizedCharge {
  id: string;
  /** Connected account id (`acct_…`), or null for the platform account. */
  account: string | null;
  /** Unix seconds, as the provider reports `created`. */
  created: number;
  amount: number;
  amountCaptured: number;
  amountRefunded: number;
  /** Lower-case ISO 4217. */
  currency: string;
  status: 'succeeded' | 'failed' | 'pending';
  captured: boolean;
  refunded: boolean;
  disputed: boolean;
  paymentIntent: string | null;
  /** What tells two charges of one key apart (--refund-duplicates refunds only identical extras). */
  customer: string | null;
  paymentMethod: string | null;
  /** From metadata[tenant key name]; null when absent. */
  tenantId: string | null;
  /** From metadata[idempotency key name]; null when absent. */
  idempotencyKey: string | null;
  /** From metadata[reference name] (SWEEPER_METADATA_REFERENCE_KEY): the order it pays for; null or absent when none. */
  reference?: string | null;
  /** The card's fingerprint (`payment_method_details.card.fingerprint`): the same card across charges. */
  cardFingerprint?: string | null;
  livemode: boolean;
}

/** A charge the provider returned that lacks a field reconciliation needs: reported, never dropped silently. */
export interface MalformedCharge {
  id: string | null;
  account: string | null;
  problem: string;
  /** Unix seconds, when `created` itself could be read: which slice the charge belongs to. */
  created?: number;
}

/** One page of a listing: the charges read, and those that could not be. */
export interface ChargePage {
  charges: NormalizedCharge[];
  malformed: MalformedCharge[];
}

/** Pages of one account's charges created in `[from, to)`; throws if the window cannot be read completely. */
export type ChargeSource = (account: string, window: TimeWindow, signal?: AbortSignal) => AsyncIterable<ChargePage>;

/** What one request for a whole window said (docs/platforms.md "Idle accounts"). */
export interface ChargePeek extends ChargePage {
  /** The page held the whole window: `charges` and `malformed` are all of it. False: there are more. */
  complete: boolean;
}

/** One request for an account's charges created in `[from, to)`: all of them when they fit in one page. */
export type ChargePeekSource = (account: string, window: TimeWindow, signal?: AbortSignal) => Promise<ChargePeek>;

/** One event the provider sent about a change: only a pointer to the charge to re-read. */
export interface ChangePointer {
  id: string;
  type: string;
  /** Unix seconds. */
  created: number;
  chargeId: string | null;
  /** A refund event's refund (its status may have changed: failed, canceled). */
  refundId?: string;
  /** A dispute event's dispute, with its status at the event (docs/judgement.md "Disputes"). */
  dispute?: { id: string; status: string };
  /** Set when the event could not be read as a pointer (its object names no usable charge). */
  problem?: string;
}

/** A refund as the sweeper sees it (GET /v1/refunds), with the claim attribution its metadata names. */
export interface NormalizedRefund {
  id: string;
  /** Connected account id, or null for the platform. */
  account: string | null;
  chargeId: string;
  /** Unix seconds. */
  created: number;
  amount: number;
  currency: string;
  status: 'pending' | 'requires_action' | 'succeeded' | 'failed' | 'canceled';
  failureReason: string | null;
  tenantId: string | null;
  idempotencyKey: string | null;
}

/** One page of a refunds listing: the refunds read, and those that could not be. */
export interface RefundPage {
  refunds: NormalizedRefund[];
  malformed: MalformedCharge[];
}

/** Pages of one account's refunds created in `[from, to)`; throws if the window cannot be read completely. */
export type RefundSource = (account: string, window: TimeWindow, signal?: AbortSignal) => AsyncIterable<RefundPage>;

/** A payout as the sweeper sees it (GET /v1/payouts): money leaving the account's balance for its bank. */
export interface NormalizedPayout {
  id: string;
  /** Connected account id, or null for the platform. */
  account: string | null;
  /** Unix seconds. */
  created: number;
  /** Unix seconds: when the payout is expected at the bank. */
  arrivalDate: number;
  /** Positive, in `currency`'s smallest unit. */
  amount: number;
  currency: string;
  /** Made by the account's payout schedule: only these can be itemised (`?payout=`). */
  automatic: boolean;
  status: 'pending' | 'in_transit' | 'paid' | 'failed' | 'canceled';
  /** `completed`: its balance transactions can be listed. */
  reconciliationStatus: 'not_applicable' | 'in_progress' | 'completed';
  failureCode: string | null;
}

/** A balance transaction of a payout (GET /v1/balance_transactions?payout=), in the payout's currency. */
export interface NormalizedBalanceTransaction {
  id: string;
  /** Stripe's `type`: charge, payment, refund, refund_failure, adjustment, payout, stripe_fee, transfer, … */
  type: string;
  /** Stripe's `reporting_category`: charge, refund, refund_failure, dispute, dispute_reversal, fee, payout, … */
  reportingCategory: string;
  /** Settlement currency, smallest unit; negative for money out. */
  amount: number;
  fee: number;
  net: number;
  currency: string;
  /** Presentment to settlement currency, when the money was converted; null otherwise. */
  exchangeRate: number | null;
  /** Unix seconds. */
  created: number;
  /** What moved the money (ch_, re_, dp_, po_, py_ …), or null. */
  sourceId: string | null;
  /** The charge a refund's or a dispute's source names (read from the expanded source); null otherwise. */
  sourceChargeId: string | null;
}

/** Payouts and their balance transactions (Stripe: `GET /v1/payouts`, `GET /v1/balance_transactions?payout=`). */
export interface PayoutSource {
  /** Pages of one account's payouts created in `[from, to)`; throws if they cannot all be read. */
  listPayouts(account: string, window: TimeWindow, signal?: AbortSignal): AsyncIterable<NormalizedPayout[]>;
  /** Pages of the balance transactions an automatic payout paid out (its own `payout` transaction among them). */
  payoutTransactions(
    account: string,
    payoutId: string,
    signal?: AbortSignal,
  ): AsyncIterable<NormalizedBalanceTransaction[]>;
}

/**
 * One account's change events created in `(after − overlap, before)` (unix seconds),
 * every one of them, or a thrown error: never a partial answer.
 */
export type ChangeSource = (
  account: string,
  window: { after: number; overlapSeconds: number; before: number },
  signal?: AbortSignal,
) => Promise<ChangePointer[]>;

/**
 * The provider refuses every request for a connected account: the platform's access was
 * revoked, or the account is gone. Not a failure of the run: the sweep marks the account
 * inactive and goes on with the others (docs/platforms.md "Accounts that leave").
 */
export class AccountUnavailableError extends Error {
  override readonly name: string = 'AccountUnavailableError';

  constructor(
    /** The provider's account id (`acct_…`). */
    readonly account: string,
    message: string,
  ) {
    super(message);
  }
}

/** What the sweep's rules take from the provider rather than assume. */
export interface ProviderFacts {
  /** How long the provider remembers an idempotency key (a retry within it gets the first charge back). */
  idempotencyWindowMs: number;
  /** The most charges one listing request returns. */
  pageSize: number;
  /** The request rate this process allows itself (its rate budget). */
  ratePerSecond: number;
}

/**
 * Everything the sweep needs from a payment provider. Accounts are the sweep's
 * (`platform` for the platform account); the provider maps them to its own.
 */
export interface PaymentProvider {
  readonly name: string;
  readonly facts: ProviderFacts;
  /** Charges created in a window, page by page. */
  listCharges: ChargeSource;
  /** Change events since a cursor; without it a scheduled run skips the late-changes step. */
  listChanges?: ChangeSource;
  /** Refunds created in a window; without it the sweep does not judge refunds. */
  listRefunds?: RefundSource;
  /** One request for a window; without it every slice is listed on its own. */
  peekCharges?: ChargePeekSource;
  /** The platform's connected accounts (`acct_…`), every one or a thrown error; without it `connected` finds none. */
  listAccounts?: (signal?: AbortSignal) => Promise<string[]>;
  /** Payouts and their balance transactions; without it the sweep does not reconcile payouts. */
  payouts?: PayoutSource;
  /** Charges by id, charges by key metadata, refunds: read directly before money moves. */
  evidence: ProviderEvidence;
  /** The request rate and the mean latency measured so far. */
  pace(): { ratePerSecond: number; meanLatencyMs: number | null };
}

/** The latency assumed before the first answer has been measured. */
export const ASSUMED_LATENCY_MS = 300;

/**
 * Requests the rate allows during one mean latency: how many must be in flight to keep
 * the budget busy. The prefetch depth, a listing's sub-windows and the listing gate are
 * each a multiple of it.
 */
export function requestsPerLatency(pace: { ratePerSecond: number; meanLatencyMs: number | null }): number {
  return pace.ratePerSecond * ((pace.meanLatencyMs ?? ASSUMED_LATENCY_MS) / 1000);
}

/**
 * The part of the sweep's dependencies a provider supplies: how the CLI, the demo and the
 * benchmarks wire one. `pace` (how many slices a run lists ahead) only when asked for.
 */
export function providerSweepDeps(
  provider: PaymentProvider,
  options: { pace?: boolean } = {},
): {
  listCharges: ChargeSource;
  listChanges?: ChangeSource;
  listRefunds?: RefundSource;
  peekCharges?: ChargePeekSource;
  payouts?: PayoutSource;
  evidence: ProviderEvidence;
  idempotencyWindowMs: number;
  pace?: PaymentProvider['pace'];
} {
  return {
    listCharges: provider.listCharges,
    ...(provider.peekCharges ? { peekCharges: provider.peekCharges } : {}),
    idempotencyWindowMs: provider.facts.idempotencyWindowMs,
    ...(provider.listChanges ? { listChanges: provider.listChanges } : {}),
    ...(provider.listRefunds ? { listRefunds: provider.listRefunds } : {}),
    ...(provider.payouts ? { payouts: provider.payouts } : {}),
    evidence: provider.evidence,
    ...(options.pace ? { pace: () => provider.pace() } : {}),
  };
}

/**
 * The provider's own word, read directly (never from the mirror) before a step that can
 * move money or page someone: releasing a claim, raising `lost_effect` or
 * `effect_without_charge`, refunding a duplicate. A handful of calls per run, under
 * the same rate budget as the listing. The CLI wires the real SDK
 * (src/providers/stripe/evidence.ts); tests pass an in-memory one.
 */
export interface ProviderEvidence {
  /**
   * Charges looked up by id (Stripe: `GET /v1/charges/:id`); ids the provider does not have are absent.
   * A charge that answers but cannot be read goes to `onMalformed` when given (the caller
   * records it as a finding), and otherwise fails the call (nothing is decided on it).
   */
  chargesById(
    account: string,
    ids: readonly string[],
    signal?: AbortSignal,
    onMalformed?: (bad: MalformedCharge) => void,
  ): Promise<NormalizedCharge[]>;
  /**
   * Every charge of the account whose metadata names the tenant and key (Stripe: its charge
   * search). One that cannot be read goes to `onMalformed` when given, as for `chargesById`.
   */
  chargesNaming(
    account: string,
    tenantId: string,
    key: string,
    signal?: AbortSignal,
    onMalformed?: (bad: MalformedCharge) => void,
  ): Promise<NormalizedCharge[]>;
  /** The refunds the provider has for one charge (Stripe: `GET /v1/refunds?charge=`). */
  refundsOf(account: string, chargeId: string, signal?: AbortSignal): Promise<RefundFact[]>;
  /**
   * Refunds by id (Stripe: `GET /v1/refunds/:id`), read as a listing reads them; ids the
   * provider does not have are absent; one that cannot be read goes to `onMalformed`.
   */
  refundsById?(
    account: string,
    ids: readonly string[],
    signal?: AbortSignal,
    onMalformed?: (bad: MalformedCharge) => void,
  ): Promise<NormalizedRefund[]>;
  /** A refund, idempotent by `request.idempotencyKey` (Stripe: `POST /v1/refunds` with that Idempotency-Key). */
  refund(account: string, request: RefundRequest, signal?: AbortSignal): Promise<RefundFact>;
}

export interface RefundRequest {
  chargeId: string;
  amount: number;
  idempotencyKey: string;
  metadata: Record<string, string>;
}

export interface RefundFact {
  id: string;
  chargeId: string;
  amount: number;
  /** `succeeded`, `pending`, `requires_action`, `failed` or `canceled`. */
  status: string;
  metadata: Record<string, string>;
}

/** The metadata name under which a refund carries the sweeper's idempotency key: how a rerun finds it. */
export const REFUND_KEY_METADATA = 'sweeper_refund_key';

/** A Stripe refund that did not fail: it counts as made. */
export function isRefundMade(refund: RefundFact): boolean {
  return refund.status !== 'failed' && refund.status !== 'canceled';
}
