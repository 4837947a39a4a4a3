import { invalidRequest, resourceMissing, unknownParameter } from './errors.js';
import { read } from './form.js';
import type { Handler } from './handler.js';
import { refundCharge } from './refund-changes.js';
import { renderRefund } from './render.js';

const PARAMS = new Set(['charge', 'payment_intent', 'amount', 'reason', 'metadata', 'expand']);
const REASONS = new Set(['duplicate', 'fraudulent', 'requested_by_customer']);

/**
 * `POST /v1/refunds` by `charge` or `payment_intent`, all or part of what is left; the
 * refund starts `succeeded`, or `pending` after `setNewRefundStatus('pending')`.
 */
export const createRefund: Handler = ({ state, account, params, request }) => {
  for (const key of Object.keys(params)) if (!PARAMS.has(key)) throw unknownParameter(key);
  const chargeId = read.string(params, 'charge');
  const intentId = read.string(params, 'payment_intent');
  if (!chargeId && !intentId) {
    throw invalidRequest('One of the following params should be provided for this request: payment_intent or charge.', {
      code: 'parameter_missing',
    });
  }
  let charge = chargeId ? state.chargeIn(account, chargeId) : undefined;
  if (chargeId && !charge) throw resourceMissing('charge', chargeId, 'charge', 400);
  if (!charge && intentId) {
    const intent = state.intentIn(account, intentId);
    if (!intent) throw resourceMissing('payment_intent', intentId, 'payment_intent', 400);
    charge = intent.latestCharge ? state.chargeIn(account, intent.latestCharge) : undefined;
    if (!charge || charge.status !== 'succeeded') {
      throw invalidRequest(`This PaymentIntent (${intentId}) does not have a successful charge to refund.`, {
        code: 'charge_not_refundable',
        param: 'payment_intent',
      });
    }
  }
  if (!charge) throw resourceMissing('charge', chargeId ?? '', 'charge', 400);
  const reason = read.string(params, 'reason') ?? null;
  if (reason !== null && !REASONS.has(reason))
    throw invalidRequest(`Invalid reason: ${reason}`, { code: 'parameter_invalid', param: 'reason' });
  const left = charge.amountCaptured - charge.amountRefunded;
  if (charge.status !== 'succeeded' || !charge.captured) {
    throw invalidRequest(`Charge ${charge.id} has no captured funds to refund.`, {
      code: 'charge_not_refundable',
      param: 'charge',
    });
  }
  if (left <= 0)
    throw invalidRequest(`Charge ${charge.id} has already been refunded.`, { code: 'charge_already_refunded' });
  const amountText = read.string(params, 'amount');
  const amount = amountText === undefined ? left : Number(amountText);
  if (!Number.isSafeInteger(amount) || amount < 1) {
    throw invalidRequest('This value must be greater than or equal to 1.', {
      code: 'parameter_invalid_integer',
      param: 'amount',
    });
  }
  if (amount > left) {
    throw invalidRequest(`Refund amount (${amount}) is greater than unrefunded amount on charge (${left})`, {
      code: 'amount_too_large',
      param: 'amount',
    });
  }
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(read.object(params, 'metadata') ?? {}))
    if (typeof value === 'string' && value) metadata[key] = value;
  const status = state.newRefundStatus;
  const refund = refundCharge(state, charge, { amount, reason, metadata, status }, { request: request ?? null });
  return { status: 200, body: renderRefund(refund) };
};
