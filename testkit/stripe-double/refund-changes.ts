/**
 * A refund's life, with the events Stripe emits for each step: made (`pending` or
 * `succeeded`), then a pending one succeeds, and any that has not ended may still fail
 * (the bank returned it) or be canceled. A failed or canceled refund's money is the
 * merchant's again: the charge's `amount_refunded` goes back down and a `refund_failure`
 * balance transaction puts the amount back in the balance.
 */
import type { ChargeRecord } from './charge-store.js';
import { changedAttributes, emit, type EmitContext } from './emit.js';
import { recordRefundReversal } from './ledger.js';
import type { RefundFailureReason, RefundRecord } from './records.js';
import { renderCharge, renderRefund } from './render.js';
import type { DoubleState } from './state.js';

const json = (object: object) => ({ json: structuredClone(object) as Record<string, unknown> });

export interface RefundOptions {
  amount?: number;
  reason?: string | null;
  metadata?: Record<string, string>;
  /** Default `succeeded`. */
  status?: 'pending' | 'succeeded';
}

/** Refunds all or part of what is left: `charge.refunded` (with the earlier amounts) and `refund.created`. */
export function refundCharge(
  state: DoubleState,
  charge: ChargeRecord,
  options: RefundOptions,
  context: EmitContext = {},
): RefundRecord {
  const before = renderCharge(charge);
  const refund = state.refund(charge, options);
  const previous = changedAttributes(before, renderCharge(charge));
  emit(state, charge.account, 'charge.refunded', { charge: { ...charge } }, previous, context);
  emit(state, charge.account, 'refund.created', json(renderRefund(refund)), undefined, context);
  return refund;
}

/** A pending refund goes through: `charge.refund.updated` and `refund.updated` (previous `status`). */
export function succeedRefund(state: DoubleState, refund: RefundRecord, context: EmitContext = {}): RefundRecord {
  if (refund.status !== 'pending') throw new Error(`refund ${refund.id} is ${refund.status}, not pending`);
  const before = renderRefund(refund);
  refund.status = 'succeeded';
  emitUpdated(state, refund, before, context);
  return refund;
}

/**
 * A refund that failed after it was accepted (the bank returned it):
 * `charge.refund.updated`, `refund.updated` and `refund.failed`.
 */
export function failRefund(
  state: DoubleState,
  refund: RefundRecord,
  reason: RefundFailureReason = 'unknown',
  context: EmitContext = {},
): RefundRecord {
  const before = unwind(state, refund, 'failed');
  refund.failureReason = reason;
  emitUpdated(state, refund, before, context);
  emit(state, refund.account, 'refund.failed', json(renderRefund(refund)), undefined, context);
  return refund;
}

/** A refund canceled after it was made: `charge.refund.updated` and `refund.updated`. */
export function cancelRefund(state: DoubleState, refund: RefundRecord, context: EmitContext = {}): RefundRecord {
  const before = unwind(state, refund, 'canceled');
  emitUpdated(state, refund, before, context);
  return refund;
}

/** Ends a live refund as failed or canceled and gives its money back; returns it as it was rendered before. */
function unwind(
  state: DoubleState,
  refund: RefundRecord,
  status: 'failed' | 'canceled',
): ReturnType<typeof renderRefund> {
  if (refund.status === 'failed' || refund.status === 'canceled')
    throw new Error(`refund ${refund.id} has already ${refund.status === 'failed' ? 'failed' : 'been canceled'}`);
  const before = renderRefund(refund);
  refund.status = status;
  const charge = state.charges.get(refund.charge);
  if (charge) charge.amountRefunded = Math.max(0, charge.amountRefunded - refund.amount);
  refund.failureBalanceTransaction = recordRefundReversal(state, refund)?.id ?? null;
  return before;
}

function emitUpdated(
  state: DoubleState,
  refund: RefundRecord,
  before: ReturnType<typeof renderRefund>,
  context: EmitContext,
): void {
  const previous = changedAttributes(before, renderRefund(refund));
  for (const type of ['charge.refund.updated', 'refund.updated'])
    emit(state, refund.account, type, json(renderRefund(refund)), previous, context);
}
