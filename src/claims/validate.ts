/**
 * Input checks for the claim library. Everything here runs before anything is
 * written or sent, and fails with a ClaimValidationError naming the field.
 */

export class ClaimValidationError extends Error {
  override readonly name = 'ClaimValidationError';
  /** The HTTP status a payment API should answer with. */
  readonly status = 400;
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

export interface ChargeRequest {
  /** Minor units (cents), a positive integer. */
  amount: number;
  /** ISO 4217, three letters; stored lower-case as Stripe does. */
  currency: string;
  /** A PaymentMethod id such as `pm_…` (or a Stripe test method like `pm_card_visa`). */
  paymentMethod: string;
  customer?: string;
  description?: string;
  /** Stripe Connect account to charge on (`acct_…`); omitted = the platform. */
  account?: string;
  /** Extra metadata for the PaymentIntent; the tenant/key/reference names are reserved. */
  metadata?: Record<string, string>;
  /**
   * The business reference the payment is for (the order, invoice or booking): part of
   * the request (its fingerprint), stored on the claim and the payment row, stamped in the
   * charge's metadata. Two payments for one reference under two keys are a duplicate.
   */
  reference?: string;
}

export interface ValidLimits {
  maxAmount: number;
  metadataKeys: { tenantId: string; idempotencyKey: string; reference?: string };
}

/** 1-500 characters (Stripe's limit for a metadata value), no control character, lone surrogate or U+241F. */
const REFERENCE = /^(?:[^\p{Cc}\p{Cs}\u241F]){1,500}$/u;

const PRINTABLE_ASCII = /^[\x20-\x7E]+$/;
const PRINTABLE_NO_SPACE = /^[\x21-\x7E]+$/;

export function validateKey(key: unknown): string {
  if (typeof key !== 'string' || key.length < 1 || key.length > 255 || !PRINTABLE_ASCII.test(key)) {
    throw new ClaimValidationError('key', 'an idempotency key is 1 to 255 printable ASCII characters');
  }
  return key;
}

export function validateTenantId(tenantId: unknown): string {
  if (
    typeof tenantId !== 'string' ||
    tenantId.length < 1 ||
    tenantId.length > 255 ||
    !PRINTABLE_NO_SPACE.test(tenantId)
  ) {
    throw new ClaimValidationError('tenantId', 'a tenant id is 1 to 255 printable ASCII characters without spaces');
  }
  return tenantId;
}

/** Returns the request in canonical form (currency lower-case, no undefined fields). */
export function validateChargeRequest(request: ChargeRequest, limits: ValidLimits): ChargeRequest {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller can pass anything
  if (typeof request !== 'object' || request === null) {
    throw new ClaimValidationError('request', 'a charge request object is required');
  }
  const { amount, currency, paymentMethod, customer, description, account, metadata, reference } = request;
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount <= 0) {
    throw new ClaimValidationError('amount', 'must be a positive integer number of minor units (e.g. 1999 for 19.99)');
  }
  if (amount > limits.maxAmount) {
    throw new ClaimValidationError(
      'amount',
      `${amount} is over the configured maximum of ${limits.maxAmount} (SWEEPER_MAX_AMOUNT)`,
    );
  }
  if (typeof currency !== 'string' || !/^[A-Za-z]{3}$/.test(currency)) {
    throw new ClaimValidationError('currency', 'must be a three-letter ISO 4217 code such as "usd"');
  }
  if (typeof paymentMethod !== 'string' || !/^[A-Za-z0-9_]{1,255}$/.test(paymentMethod)) {
    throw new ClaimValidationError('paymentMethod', 'must be a PaymentMethod id such as pm_…');
  }
  optionalId('customer', customer, /^cus_[A-Za-z0-9]+$/, 'a Customer id such as cus_…');
  optionalId('account', account, /^acct_[A-Za-z0-9]+$/, 'a Connect account id such as acct_…');
  if (description !== undefined && (typeof description !== 'string' || description.length > 1000)) {
    throw new ClaimValidationError('description', 'must be a string of at most 1000 characters');
  }
  const canonical: ChargeRequest = { amount, currency: currency.toLowerCase(), paymentMethod };
  if (customer !== undefined) canonical.customer = customer;
  if (description !== undefined) canonical.description = description;
  if (account !== undefined) canonical.account = account;
  if (metadata !== undefined) canonical.metadata = validateMetadata(metadata, limits);
  if (reference !== undefined) {
    if (typeof reference !== 'string' || !REFERENCE.test(reference)) {
      throw new ClaimValidationError(
        'reference',
        'must be 1 to 500 characters without control characters (an order, invoice or booking id)',
      );
    }
    canonical.reference = reference;
  }
  return canonical;
}

function optionalId(field: string, value: unknown, pattern: RegExp, what: string): void {
  if (value !== undefined && (typeof value !== 'string' || !pattern.test(value))) {
    throw new ClaimValidationError(field, `must be ${what}`);
  }
}

// Stripe's own limits: 50 keys, names up to 40 characters, values up to 500.
function validateMetadata(metadata: Record<string, string>, limits: ValidLimits): Record<string, string> {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller can pass anything
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    throw new ClaimValidationError('metadata', 'must be an object of string values');
  }
  const entries = Object.entries(metadata);
  if (entries.length > 47)
    throw new ClaimValidationError('metadata', 'at most 47 keys (Stripe allows 50; three are reserved)');
  const reserved = new Set([
    limits.metadataKeys.tenantId,
    limits.metadataKeys.idempotencyKey,
    limits.metadataKeys.reference ?? 'order_id',
  ]);
  for (const [name, value] of entries) {
    if (reserved.has(name))
      throw new ClaimValidationError(
        'metadata',
        `"${name}" is reserved for the claim's tenant, key and reference (pass the reference as request.reference)`,
      );
    if (name.length < 1 || name.length > 40)
      throw new ClaimValidationError('metadata', `key "${name}" must be 1 to 40 characters`);
    if (typeof value !== 'string' || value.length > 500) {
      throw new ClaimValidationError('metadata', `value of "${name}" must be a string of at most 500 characters`);
    }
  }
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export interface RefundRequest {
  /** The charge to refund (`ch_…`). */
  chargeId: string;
  /** Minor units; omitted = what is left of the charge. */
  amount?: number;
  reason?: 'duplicate' | 'fraudulent' | 'requested_by_customer';
  /** Stripe Connect account the charge is on; omitted = the platform. */
  account?: string;
  metadata?: Record<string, string>;
}

const REFUND_REASONS: ReadonlySet<string> = new Set(['duplicate', 'fraudulent', 'requested_by_customer']);

/** Returns the refund request in canonical form (no undefined fields). */
export function validateRefundRequest(request: RefundRequest, limits: ValidLimits): RefundRequest {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller can pass anything
  if (typeof request !== 'object' || request === null) {
    throw new ClaimValidationError('request', 'a refund request object is required');
  }
  const { chargeId, amount, reason, account, metadata } = request;
  // Required: a JavaScript caller may still leave it out.
  if (typeof chargeId !== 'string' || !/^[A-Za-z0-9_]{1,255}$/.test(chargeId))
    throw new ClaimValidationError('chargeId', 'must be a charge id such as ch_…');
  if (
    amount !== undefined &&
    (typeof amount !== 'number' || !Number.isInteger(amount) || amount <= 0 || amount > limits.maxAmount)
  ) {
    throw new ClaimValidationError(
      'amount',
      `must be a positive integer number of minor units, at most ${limits.maxAmount}`,
    );
  }
  if (reason !== undefined && !REFUND_REASONS.has(reason)) {
    throw new ClaimValidationError('reason', 'must be duplicate, fraudulent or requested_by_customer');
  }
  optionalId('account', account, /^acct_[A-Za-z0-9]+$/, 'a Connect account id such as acct_…');
  const canonical: RefundRequest = { chargeId };
  if (amount !== undefined) canonical.amount = amount;
  if (reason !== undefined) canonical.reason = reason;
  if (account !== undefined) canonical.account = account;
  if (metadata !== undefined) canonical.metadata = validateMetadata(metadata, limits);
  return canonical;
}
