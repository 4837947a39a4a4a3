import { cardOutcome } from './cards.js';
import { emitChargeCreated, emitIntentCreated, emitIntentOutcome } from './changes.js';
import { invalidInteger, invalidRequest, missingParameter, resourceMissing, unknownParameter } from './errors.js';
import { read, type FormParams } from './form.js';
import type { Handler } from './handler.js';
import type { PaymentIntentRecord } from './records.js';
import { renderPaymentIntent } from './render.js';

const CREATE_PARAMS = new Set([
  'amount',
  'currency',
  'payment_method',
  'confirm',
  'metadata',
  'automatic_payment_methods',
  'customer',
  'description',
  'expand',
  'capture_method',
  'payment_method_types',
  'receipt_email',
  'statement_descriptor',
  'statement_descriptor_suffix',
  'off_session',
  'return_url',
  'setup_future_usage',
]);

/**
 * `POST /v1/payment_intents`. With `confirm=true` the test payment method decides:
 * success creates a succeeded Charge; a decline creates a failed Charge and answers
 * 402 card_error carrying `charge` and the `payment_intent`; both charges copy the
 * intent's metadata, as Stripe does.
 */
export const createPaymentIntent: Handler = ({ state, account, params, request }) => {
  for (const key of Object.keys(params)) if (!CREATE_PARAMS.has(key)) throw unknownParameter(key);
  const amount = positiveInteger(params, 'amount');
  const currency = read.string(params, 'currency');
  if (!currency) throw missingParameter('currency');
  if (!/^[a-zA-Z]{3}$/.test(currency))
    throw invalidRequest(`Invalid currency: ${currency}.`, { code: 'parameter_invalid', param: 'currency' });
  const paymentMethod = read.string(params, 'payment_method') ?? null;
  const confirm = bool(params, 'confirm') ?? false;
  const captureMethod = read.string(params, 'capture_method') ?? 'automatic_async';
  if (!['automatic', 'automatic_async', 'manual'].includes(captureMethod)) {
    throw invalidRequest(`Invalid capture_method: ${captureMethod}`, {
      code: 'parameter_invalid',
      param: 'capture_method',
    });
  }
  const outcome = paymentMethod === null ? undefined : cardOutcome(paymentMethod);
  if (paymentMethod !== null && !outcome) throw resourceMissing('PaymentMethod', paymentMethod, 'payment_method', 400);
  if (confirm && paymentMethod === null) {
    throw invalidRequest("You cannot confirm this PaymentIntent because it's missing a payment method.", {
      code: 'payment_intent_unexpected_state',
    });
  }
  const automatic = read.object(params, 'automatic_payment_methods');
  const intent: PaymentIntentRecord = {
    id: state.newId('pi'),
    account,
    created: state.clock.nowSeconds(),
    amount,
    currency: currency.toLowerCase(),
    status: paymentMethod === null ? 'requires_payment_method' : 'requires_confirmation',
    paymentMethod,
    customer: read.string(params, 'customer') ?? null,
    description: read.string(params, 'description') ?? null,
    metadata: stringMap(read.object(params, 'metadata')),
    captureMethod: captureMethod as PaymentIntentRecord['captureMethod'],
    automaticPaymentMethods: automatic
      ? {
          enabled: read.string(automatic, 'enabled') === 'true',
          ...optional('allow_redirects', read.string(automatic, 'allow_redirects')),
        }
      : null,
    latestCharge: null,
    lastPaymentError: null,
    clientSecret: '',
  };
  intent.clientSecret = `${intent.id}_secret_${state.newId('cs').slice(3)}`;
  state.intents.set(intent.id, intent);
  const events = { request: request ?? null };
  emitIntentCreated(state, intent, events);
  const expandCharge = read.strings(params, 'expand').includes('latest_charge');

  if (!confirm || !outcome) return { status: 200, body: renderPaymentIntent(intent) };
  if (outcome.kind === 'requires_action') {
    intent.status = 'requires_action';
    emitIntentOutcome(state, intent, events);
    return { status: 200, body: renderPaymentIntent(intent) };
  }
  const manual = intent.captureMethod === 'manual';
  const charge = state.addCharge({
    account,
    amount,
    currency: intent.currency,
    status: outcome.kind === 'succeeds' ? 'succeeded' : 'failed',
    captured: outcome.kind === 'succeeds' && !manual,
    paymentIntent: intent.id,
    paymentMethod,
    customer: intent.customer,
    description: intent.description,
    metadata: { ...intent.metadata },
    failureCode: outcome.kind === 'declined' ? outcome.code : null,
    failureMessage: outcome.kind === 'declined' ? outcome.message : null,
    declineCode: outcome.kind === 'declined' ? outcome.declineCode : null,
  });
  intent.latestCharge = charge.id;
  if (outcome.kind === 'succeeds') {
    intent.status = manual ? 'requires_capture' : 'succeeded';
    emitChargeCreated(state, charge, intent, events);
    return { status: 200, body: renderPaymentIntent(intent, expandCharge ? charge : undefined) };
  }
  const error = {
    type: 'card_error',
    code: outcome.code,
    decline_code: outcome.declineCode,
    message: outcome.message,
    charge: charge.id,
    doc_url: `https://stripe.com/docs/error-codes/${outcome.code.replace(/_/g, '-')}`,
    payment_method: { id: paymentMethod, object: 'payment_method', type: 'card' },
  };
  intent.status = 'requires_payment_method';
  intent.lastPaymentError = { ...error };
  emitChargeCreated(state, charge, intent, events);
  return { status: 402, body: { error: { ...error, payment_intent: renderPaymentIntent(intent) } } };
};

/** `GET /v1/payment_intents/:id`, `expand[]=latest_charge` supported. */
export const retrievePaymentIntent: Handler = ({ state, account, params, pathParams }) => {
  const id = pathParams.id as string;
  const intent = state.intentIn(account, id);
  if (!intent) throw resourceMissing('payment_intent', id);
  const charge = intent.latestCharge ? state.chargeIn(account, intent.latestCharge) : undefined;
  const expand = read.strings(params, 'expand').includes('latest_charge');
  return { status: 200, body: renderPaymentIntent(intent, expand ? charge : undefined) };
};

function positiveInteger(params: FormParams, param: string): number {
  const value = read.string(params, param);
  if (value === undefined) throw missingParameter(param);
  if (!/^\d+$/.test(value)) throw invalidInteger(param, value);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw invalidRequest('This value must be greater than or equal to 1.', {
      code: 'parameter_invalid_integer',
      param,
    });
  }
  return n;
}

function bool(params: FormParams, param: string): boolean | undefined {
  const value = read.string(params, param);
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false')
    throw invalidRequest(`Invalid boolean: ${value}`, { code: 'parameter_invalid_boolean', param });
  return value === 'true';
}

function stringMap(params: FormParams | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(params ?? {})) {
    // Stripe drops a metadata key set to the empty string.
    if (typeof value === 'string' && value !== '') out[key] = value;
  }
  return out;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
