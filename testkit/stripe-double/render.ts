import { hasBalanceTransaction, txnIdOfCharge } from './ledger.js';
import type { ChargeRecord, PaymentIntentRecord, RefundRecord } from './records.js';

/**
 * JSON as Stripe's API returns it (the fields the project's code and tests use, with
 * Stripe's names and nulls). Rendered from records on the way out so that a million
 * seeded charges cost a small record each, not a full object.
 */
export interface ChargeJson {
  id: string;
  object: 'charge';
  amount: number;
  amount_captured: number;
  amount_refunded: number;
  balance_transaction: string | null;
  captured: boolean;
  created: number;
  currency: string;
  customer: string | null;
  description: string | null;
  disputed: boolean;
  failure_code: string | null;
  failure_message: string | null;
  livemode: boolean;
  metadata: Record<string, string>;
  outcome: Record<string, unknown> | null;
  paid: boolean;
  payment_intent: string | null;
  payment_method: string | null;
  refunded: boolean;
  status: string;
  [key: string]: unknown;
}

export interface PaymentIntentJson {
  id: string;
  object: 'payment_intent';
  amount: number;
  amount_received: number;
  currency: string;
  status: string;
  metadata: Record<string, string>;
  latest_charge: string | ChargeJson | null;
  payment_method: string | null;
  last_payment_error: Record<string, unknown> | null;
  [key: string]: unknown;
}

export interface RefundJson {
  id: string;
  object: 'refund';
  amount: number;
  charge: string;
  currency: string;
  payment_intent: string | null;
  status: string;
  [key: string]: unknown;
}

export function renderCharge(charge: ChargeRecord): ChargeJson {
  const json: ChargeJson = {
    id: charge.id,
    object: 'charge',
    amount: charge.amount,
    amount_captured: charge.amountCaptured,
    amount_refunded: charge.amountRefunded,
    application_fee_amount: null,
    balance_transaction: hasBalanceTransaction(charge) ? txnIdOfCharge(charge.id) : null,
    billing_details: { address: null, email: null, name: null, phone: null },
    calculated_statement_descriptor: 'SWEEPER',
    captured: charge.captured,
    created: charge.created,
    currency: charge.currency,
    customer: charge.customer,
    description: charge.description,
    disputed: charge.disputed,
    failure_balance_transaction: null,
    failure_code: charge.failureCode,
    failure_message: charge.failureMessage,
    livemode: false,
    metadata: { ...charge.metadata },
    outcome: outcomeOf(charge),
    paid: charge.status === 'succeeded',
    payment_intent: charge.paymentIntent,
    payment_method: charge.paymentMethod,
    receipt_url: null,
    refunded: charge.amount > 0 && charge.amountRefunded >= charge.amount,
    status: charge.status,
  };
  if (charge.realistic) Object.assign(json, realisticFields(charge));
  for (const field of charge.omitFields ?? []) delete json[field];
  return json;
}

/**
 * The rest of a card charge as the API returns it, for benchmarks that must move what
 * Stripe moves (about 2 KB of JSON per charge): values derived from the record, so a
 * million seeded charges still cost a small record each.
 */
function realisticFields(charge: ChargeRecord): Record<string, unknown> {
  const tail = charge.id.slice(-8);
  const succeeded = charge.status === 'succeeded';
  return {
    application: null,
    application_fee: null,
    billing_details: {
      address: {
        city: 'Berlin',
        country: 'DE',
        line1: `Friedrichstraße ${(charge.amount % 200) + 1}`,
        line2: null,
        postal_code: '10117',
        state: null,
      },
      email: `customer-${tail}@example.com`,
      name: 'Jenny Rosen',
      phone: '+49 30 901820',
      tax_id: null,
    },
    destination: null,
    dispute: null,
    fraud_details: {},
    invoice: null,
    on_behalf_of: null,
    order: null,
    payment_method_details: {
      card: {
        amount_authorized: succeeded ? charge.amount : null,
        authorization_code: succeeded ? tail.slice(0, 6).toUpperCase() : null,
        brand: 'visa',
        checks: { address_line1_check: 'pass', address_postal_code_check: 'pass', cvc_check: 'pass' },
        country: 'US',
        exp_month: 12,
        exp_year: 2031,
        fingerprint: `Xt5EWLLDS7FJ${tail.slice(0, 4)}`,
        funding: 'credit',
        installments: null,
        last4: '4242',
        mandate: null,
        network: 'visa',
        network_token: { used: false },
        three_d_secure: null,
        wallet: null,
      },
      type: 'card',
    },
    radar_options: {},
    receipt_email: `customer-${tail}@example.com`,
    receipt_number: null,
    receipt_url: `https://pay.stripe.com/receipts/payment/CAcaFwoVYWNjdF8xTnYwRkdROVJLSGdDVmRLKO${tail}MGBjBhYWJhYWJh`,
    refunds: { object: 'list', data: [], has_more: false, total_count: 0, url: `/v1/charges/${charge.id}/refunds` },
    review: null,
    shipping: null,
    source: null,
    source_transfer: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    transfer_data: null,
    transfer_group: null,
  };
}

function outcomeOf(charge: ChargeRecord): Record<string, unknown> | null {
  if (charge.status === 'succeeded') {
    return {
      network_status: 'approved_by_network',
      reason: null,
      risk_level: 'normal',
      seller_message: 'Payment complete.',
      type: 'authorized',
    };
  }
  if (charge.status === 'failed') {
    return {
      network_status: 'declined_by_network',
      reason: charge.declineCode,
      risk_level: 'normal',
      seller_message: 'The bank did not return any further details with this decline.',
      type: 'issuer_declined',
    };
  }
  return null;
}

export function renderPaymentIntent(intent: PaymentIntentRecord, latestCharge?: ChargeRecord): PaymentIntentJson {
  return {
    id: intent.id,
    object: 'payment_intent',
    amount: intent.amount,
    amount_capturable: intent.status === 'requires_capture' ? intent.amount : 0,
    amount_received: intent.status === 'succeeded' ? intent.amount : 0,
    automatic_payment_methods: intent.automaticPaymentMethods,
    capture_method: intent.captureMethod,
    client_secret: intent.clientSecret,
    confirmation_method: 'automatic',
    created: intent.created,
    currency: intent.currency,
    customer: intent.customer,
    description: intent.description,
    last_payment_error: intent.lastPaymentError,
    latest_charge: latestCharge ? renderCharge(latestCharge) : intent.latestCharge,
    livemode: false,
    metadata: { ...intent.metadata },
    next_action: intent.status === 'requires_action' ? { type: 'use_stripe_sdk', use_stripe_sdk: {} } : null,
    payment_method: intent.paymentMethod,
    payment_method_types: ['card'],
    status: intent.status,
  };
}

/** `failure_reason` and `failure_balance_transaction` appear once a refund failed (or was canceled), as at Stripe. */
export function renderRefund(refund: RefundRecord): RefundJson {
  return {
    id: refund.id,
    object: 'refund',
    amount: refund.amount,
    balance_transaction: refund.balanceTransaction,
    charge: refund.charge,
    created: refund.created,
    currency: refund.currency,
    ...(refund.failureBalanceTransaction === null
      ? {}
      : { failure_balance_transaction: refund.failureBalanceTransaction }),
    ...(refund.failureReason === null ? {} : { failure_reason: refund.failureReason }),
    metadata: { ...refund.metadata },
    payment_intent: refund.paymentIntent,
    ...(refund.status === 'pending' ? { pending_reason: 'processing' } : {}),
    reason: refund.reason,
    receipt_number: null,
    source_transfer_reversal: null,
    status: refund.status,
    transfer_reversal: null,
  };
}
