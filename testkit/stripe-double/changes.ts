/**
 * Every change the double makes to a charge after (and at) its creation, each with the
 * events Stripe emits for it. HTTP handlers and control hooks both go through here, so
 * a refund made through the API and one made by a test leave the same trail.
 */
import type { ChargeRecord } from './charge-store.js';
import { isClosed, type DisputeOutcome, type DisputeRecord } from './disputes.js';
import { changedAttributes, emit, type EmitContext } from './emit.js';
import { recordDisputeReversal, recordDisputeWithdrawal, settlementOf } from './ledger.js';
import type { PaymentIntentRecord } from './records.js';
import { renderCharge, renderPaymentIntent } from './render.js';
import type { DoubleState } from './state.js';
import { disputeJson } from './views.js';

const chargeSnapshot = (charge: ChargeRecord) => ({ charge: { ...charge } });
const json = (object: object) => ({ json: structuredClone(object) as Record<string, unknown> });

/** `payment_intent.created`, dated like the intent unless told otherwise. */
export function emitIntentCreated(state: DoubleState, intent: PaymentIntentRecord, context: EmitContext = {}): void {
  emit(state, intent.account, 'payment_intent.created', json(renderPaymentIntent(intent)), undefined, {
    created: intent.created,
    ...context,
  });
}

/**
 * The events of a new charge: `charge.succeeded`, `charge.failed` or `charge.pending`,
 * then its intent's outcome (`payment_intent.succeeded`, `.amount_capturable_updated`,
 * `.payment_failed`). Dated at the charge's `created` unless told otherwise.
 */
export function emitChargeCreated(
  state: DoubleState,
  charge: ChargeRecord,
  intent: PaymentIntentRecord | undefined,
  context: EmitContext = {},
): void {
  const dated: EmitContext = { created: charge.created, ...context };
  emit(state, charge.account, `charge.${charge.status}`, chargeSnapshot(charge), undefined, dated);
  if (intent) emitIntentOutcome(state, intent, dated);
}

/** The event of an intent's new status, if Stripe has one for it. */
export function emitIntentOutcome(state: DoubleState, intent: PaymentIntentRecord, context: EmitContext): void {
  const type =
    intent.status === 'succeeded'
      ? 'payment_intent.succeeded'
      : intent.status === 'requires_capture'
        ? 'payment_intent.amount_capturable_updated'
        : intent.status === 'requires_payment_method'
          ? 'payment_intent.payment_failed'
          : intent.status === 'requires_action'
            ? 'payment_intent.requires_action'
            : undefined;
  if (type) emit(state, intent.account, type, json(renderPaymentIntent(intent)), undefined, context);
}

/**
 * Captures an authorised charge (all of it by default); an uncaptured remainder is
 * released, which Stripe reports as refunded. `charge.captured`, and
 * `payment_intent.succeeded` when an intent was waiting for the capture.
 */
export function captureCharge(
  state: DoubleState,
  charge: ChargeRecord,
  amount: number | undefined,
  context: EmitContext = {},
): void {
  if (charge.status !== 'succeeded' || charge.captured)
    throw new Error(`charge ${charge.id} is not an uncaptured, successful charge`);
  const captured = amount ?? charge.amount;
  if (!Number.isSafeInteger(captured) || captured < 1 || captured > charge.amount) {
    throw new Error(
      `capture amount ${captured} is not between 1 and the amount ${charge.amount} of charge ${charge.id}`,
    );
  }
  const before = renderCharge(charge);
  charge.captured = true;
  charge.amountCaptured = captured;
  charge.amountRefunded += charge.amount - captured;
  settlementOf(state, charge, state.clock.nowSeconds());
  emit(
    state,
    charge.account,
    'charge.captured',
    chargeSnapshot(charge),
    changedAttributes(before, renderCharge(charge)),
    context,
  );
  const intent = charge.paymentIntent ? state.intents.get(charge.paymentIntent) : undefined;
  if (intent && intent.status === 'requires_capture') {
    intent.status = 'succeeded';
    emitIntentOutcome(state, intent, context);
  }
}

/** The open dispute of a charge, if any. */
export function openDisputeOf(state: DoubleState, chargeId: string): DisputeRecord | undefined {
  for (const dispute of state.disputes.values()) if (dispute.charge === chargeId && !isClosed(dispute)) return dispute;
  return undefined;
}

/** The cardholder's bank disputes the charge: `charge.dispute.created` and `charge.dispute.funds_withdrawn`. */
export function openDispute(
  state: DoubleState,
  charge: ChargeRecord,
  options: { reason?: string; amount?: number },
  context: EmitContext = {},
): DisputeRecord {
  if (charge.status !== 'succeeded') throw new Error(`charge ${charge.id} did not succeed and cannot be disputed`);
  if (openDisputeOf(state, charge.id)) throw new Error(`charge ${charge.id} already has an open dispute`);
  const left = charge.amountCaptured - charge.amountRefunded;
  const dispute: DisputeRecord = {
    id: state.newEventId('dp'),
    account: charge.account,
    charge: charge.id,
    paymentIntent: charge.paymentIntent,
    created: state.clock.nowSeconds(),
    amount: options.amount ?? (left > 0 ? left : charge.amount),
    currency: charge.currency,
    reason: options.reason ?? 'fraudulent',
    status: 'needs_response',
    metadata: {},
    balanceTransactions: [],
  };
  state.disputes.set(dispute.id, dispute);
  charge.disputed = true;
  emit(state, charge.account, 'charge.dispute.created', json(disputeJson(state, dispute)), undefined, context);
  dispute.balanceTransactions.push(recordDisputeWithdrawal(state, dispute).id);
  emit(state, charge.account, 'charge.dispute.funds_withdrawn', json(disputeJson(state, dispute)), undefined, context);
  return dispute;
}

/**
 * Closes the charge's open dispute: `charge.dispute.closed`, and when won
 * `charge.dispute.funds_reinstated` with the reversal's balance transaction.
 */
export function closeDispute(
  state: DoubleState,
  charge: ChargeRecord,
  outcome: DisputeOutcome,
  context: EmitContext = {},
): DisputeRecord {
  const dispute = openDisputeOf(state, charge.id);
  if (!dispute) throw new Error(`charge ${charge.id} has no open dispute`);
  const before = disputeJson(state, dispute);
  dispute.status = outcome;
  const after = disputeJson(state, dispute);
  emit(state, charge.account, 'charge.dispute.closed', json(after), changedAttributes(before, after), context);
  if (outcome !== 'won') return dispute;
  const reversal = recordDisputeReversal(state, dispute);
  if (reversal) dispute.balanceTransactions.push(reversal.id);
  emit(state, charge.account, 'charge.dispute.funds_reinstated', json(disputeJson(state, dispute)), undefined, context);
  return dispute;
}

export interface ChargeUpdate {
  /** Merged into the charge's metadata; a key set to '' is removed, as at Stripe. */
  metadata?: Record<string, string>;
  description?: string | null;
}

/** Someone edits a charge (the dashboard, another service): `charge.updated` with `previous_attributes`. */
export function updateCharge(
  state: DoubleState,
  charge: ChargeRecord,
  update: ChargeUpdate,
  context: EmitContext = {},
): void {
  const before = renderCharge(charge);
  if (update.metadata) {
    const metadata: Record<string, string> = { ...charge.metadata };
    for (const [key, value] of Object.entries(update.metadata)) {
      if (value === '') delete metadata[key];
      else metadata[key] = value;
    }
    // A new object: seeded charges share one metadata object.
    charge.metadata = metadata;
  }
  if (update.description !== undefined) charge.description = update.description;
  const previous = changedAttributes(before, renderCharge(charge));
  if (previous) emit(state, charge.account, 'charge.updated', chargeSnapshot(charge), previous, context);
}
