import type { MalformedCharge, NormalizedCharge } from '../../sweep/provider.js';
import { DAY_SECONDS } from '../../time/units.js';

/** Metadata names under which the claim library records the claim a charge belongs to. */
export interface MetadataKeys {
  tenantId: string;
  idempotencyKey: string;
  /** The business reference (an order, invoice, booking): SWEEPER_METADATA_REFERENCE_KEY. */
  reference?: string;
}

export const DEFAULT_METADATA_KEYS: Readonly<Required<MetadataKeys>> = Object.freeze({
  tenantId: 'tenant_id',
  idempotencyKey: 'idempotency_key',
  reference: 'order_id',
});

export type NormalizeResult = { ok: true; charge: NormalizedCharge } | { ok: false; malformed: MalformedCharge };

const STATUSES = ['succeeded', 'failed', 'pending'] as const;
type Status = (typeof STATUSES)[number];

/**
 * What a stored value may look like. Ids are printable ASCII, so no NUL, control
 * character or lone surrogate (which PostgreSQL's text and jsonb refuse) can reach SQL.
 * Tenant and key are read as Stripe holds them (docs/judgement.md "Keys as Stripe holds
 * them"): other systems write order references with accents or CJK there, and the claims
 * table holds such keys byte for byte. So any 1-500 characters (Stripe's limit for a
 * metadata value) are a key, except control characters, lone surrogates and U+241F, the
 * character that joins tenant and key in a finding's subject (src/domain/identity.ts).
 */
export const STRIPE_ID = /^[\x21-\x7E]{1,255}$/;
export const TENANT_ID = /^(?:[^\p{Cc}\p{Cs}\u241F]){1,500}$/u;
export const IDEMPOTENCY_KEY = TENANT_ID;
export const CURRENCY = /^[A-Za-z]{3}$/;
/** 2010-01-01T00:00:00Z: Stripe has no charge older than this. */
export const EARLIEST_CREATED = 1_262_304_000;
/** 3000-01-01T00:00:00Z in seconds: a `created` above this is in milliseconds. */
export const MILLISECONDS_THRESHOLD = 32_503_680_000;
/** A charge may be dated this far ahead of our clock (skew), no further. */
export const MAX_CREATED_AHEAD_SECONDS = DAY_SECONDS;

/**
 * Validates and flattens a charge as Stripe returns it. Anything reconciliation
 * cannot do without, and anything the mirror's schema would refuse (a NUL in a
 * metadata value, a negative amount, `usdt`, a `created` in milliseconds…), comes back
 * as a `MalformedCharge` naming every problem, so the caller reports it: a silently
 * dropped charge would look exactly like a charge Stripe never made, and a charge that
 * reached SQL would roll its whole slice back. `account` is the account the charge was
 * listed under (charges do not name it); `nowSeconds` is the caller's clock (unix
 * seconds), the only time this reads.
 */
export function normalizeCharge(
  raw: unknown,
  account: string | null,
  keys: MetadataKeys,
  nowSeconds: number,
): NormalizeResult {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, malformed: { id: null, account, problem: `not an object (${describeType(raw)})` } };
  }
  const fields = raw as Record<string, unknown>;
  // Every field is read, in this order, so the problem names them all at once.
  const problems: string[] = [];
  const core = readCore(fields, nowSeconds, problems);
  const state = readState(fields, core.amount, problems);
  const links = readLinks(fields, keys, problems);
  const { id, created, amount, currency, status } = core;
  if (
    problems.length > 0 ||
    id === null ||
    created === null ||
    amount === null ||
    currency === null ||
    status === null
  ) {
    return {
      ok: false,
      malformed: { id, account, problem: problems.join(', '), ...(created !== null ? { created } : {}) },
    };
  }
  const charge: NormalizedCharge = {
    id,
    account,
    created,
    amount,
    amountCaptured: state.amountCaptured,
    amountRefunded: state.amountRefunded,
    currency,
    status,
    captured: state.captured,
    refunded: state.refunded,
    disputed: state.disputed,
    ...links,
    livemode: state.livemode,
  };
  return { ok: true, charge };
}

/** What a charge is: its id, when, how much, in what, and how it ended. */
function readCore(charge: Record<string, unknown>, nowSeconds: number, problems: string[]) {
  return {
    id: readId(charge, problems),
    created: readCreated(charge.created, nowSeconds, problems),
    amount: readAmount(charge.amount, problems),
    currency: readCurrency(charge.currency, problems),
    status: readStatus(charge.status, problems),
  };
}

/** What happened to it since: capture, refunds, a dispute. */
function readState(
  charge: Record<string, unknown>,
  amount: number | null,
  problems: string[],
): Pick<NormalizedCharge, 'captured' | 'refunded' | 'disputed' | 'livemode' | 'amountCaptured' | 'amountRefunded'> {
  const captured = readBoolean(charge, 'captured', problems);
  const refunded = readBoolean(charge, 'refunded', problems);
  const disputed = readBoolean(charge, 'disputed', problems);
  const livemode = readBoolean(charge, 'livemode', problems);
  // Older API versions lack amount_captured; a captured charge captured all of it.
  const amountCaptured = readPart(
    charge,
    'amount_captured',
    amount,
    captured && amount !== null ? amount : 0,
    problems,
  );
  const amountRefunded = readPart(charge, 'amount_refunded', amount, 0, problems);
  return { captured, refunded, disputed, livemode, amountCaptured, amountRefunded };
}

/** What it points at: its payment intent, customer and card, and the claim and order its metadata names. */
function readLinks(
  charge: Record<string, unknown>,
  keys: MetadataKeys,
  problems: string[],
): Pick<
  NormalizedCharge,
  'paymentIntent' | 'customer' | 'paymentMethod' | 'tenantId' | 'idempotencyKey' | 'reference' | 'cardFingerprint'
> {
  const paymentIntent = readReference(charge, 'payment_intent', problems);
  const customer = readReference(charge, 'customer', problems);
  const paymentMethod = readReference(charge, 'payment_method', problems);
  const metadata = readMetadata(charge.metadata, problems);
  const tenantId = readAttribution(metadata, keys.tenantId, TENANT_ID, problems);
  const idempotencyKey = readAttribution(metadata, keys.idempotencyKey, IDEMPOTENCY_KEY, problems);
  const reference = readAttribution(metadata, keys.reference ?? DEFAULT_METADATA_KEYS.reference, TENANT_ID, problems);
  const cardFingerprint = readCardFingerprint(charge.payment_method_details, problems);
  return { paymentIntent, customer, paymentMethod, tenantId, idempotencyKey, reference, cardFingerprint };
}

/** The last item of a page, read defensively: the lister pages from it even when it is malformed. */
export function pageCursorOf(raw: unknown): { id: string | null; created: number | null } {
  if (typeof raw !== 'object' || raw === null) return { id: null, created: null };
  const charge = raw as Record<string, unknown>;
  return {
    id: typeof charge.id === 'string' && STRIPE_ID.test(charge.id) ? charge.id : null,
    created: isWholeNumber(charge.created) ? charge.created : null,
  };
}

/** The id only when it can be stored and named: a finding about a charge is keyed by it. */
function readId(charge: Record<string, unknown>, problems: string[]): string | null {
  const value = charge.id;
  if (value === undefined || value === null || value === '') problems.push('missing id');
  else if (typeof value !== 'string') problems.push(`id is not a string (${describeType(value)})`);
  else if (!STRIPE_ID.test(value)) problems.push('id is not 1-255 printable ASCII characters without spaces');
  else return value;
  return null;
}

function readCreated(value: unknown, nowSeconds: number, problems: string[]): number | null {
  if (value === undefined || value === null) problems.push('missing created');
  else if (!isWholeNumber(value)) problems.push(`created is not a whole number of seconds (${show(value)})`);
  else if (value <= 0) problems.push(`created ${value} is not after 1970`);
  else if (value >= MILLISECONDS_THRESHOLD)
    problems.push(`created ${value} is beyond the year 3000: milliseconds, not seconds`);
  else if (value < EARLIEST_CREATED) problems.push(`created ${value} (${iso(value)}) is before Stripe existed (2010)`);
  else if (value > nowSeconds + MAX_CREATED_AHEAD_SECONDS) {
    problems.push(`created ${value} (${iso(value)}) is more than a day ahead of now (${iso(nowSeconds)})`);
  } else return value;
  return null;
}

function readAmount(value: unknown, problems: string[]): number | null {
  if (value === undefined || value === null) problems.push('missing amount');
  else if (!isWholeNumber(value)) problems.push(`amount is not a whole number of minor units (${show(value)})`);
  else if (value < 0) problems.push(`amount ${value} is negative`);
  else return value;
  return null;
}

/** amount_captured and amount_refunded: absent → `fallback`; otherwise a whole number in 0..amount. */
function readPart(
  charge: Record<string, unknown>,
  field: string,
  amount: number | null,
  fallback: number,
  problems: string[],
): number {
  const value = charge[field];
  if (value === undefined || value === null) return fallback;
  if (!isWholeNumber(value)) problems.push(`${field} is not a whole number (${show(value)})`);
  else if (value < 0) problems.push(`${field} ${value} is negative`);
  else if (amount !== null && value > amount) problems.push(`${field} ${value} is above the amount ${amount}`);
  else return value;
  return 0;
}

function readCurrency(value: unknown, problems: string[]): string | null {
  if (value === undefined || value === null || value === '') problems.push('missing currency');
  else if (typeof value !== 'string' || !CURRENCY.test(value))
    problems.push(`currency ${show(value)} is not three letters (ISO 4217)`);
  else return value.toLowerCase();
  return null;
}

function readStatus(value: unknown, problems: string[]): Status | null {
  if (value === undefined || value === null) problems.push('missing status');
  else if (!STATUSES.includes(value as Status)) problems.push(`unknown status ${show(value)}`);
  else return value as Status;
  return null;
}

function readBoolean(charge: Record<string, unknown>, field: string, problems: string[]): boolean {
  const value = charge[field];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') problems.push(`${field} is not a boolean (${show(value)})`);
  return value === true;
}

/** An id field that may be expanded into the object it names. */
function readReference(charge: Record<string, unknown>, field: string, problems: string[]): string | null {
  const value = charge[field];
  if (value === undefined || value === null || value === '') return null;
  const id = typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>).id : value;
  if (typeof id === 'string' && STRIPE_ID.test(id)) return id;
  problems.push(`${field} is not an id of 1-255 printable ASCII characters`);
  return null;
}

/** `payment_method_details.card.fingerprint`, when the charge was made with a card that has one. */
function readCardFingerprint(details: unknown, problems: string[]): string | null {
  if (typeof details !== 'object' || details === null) return null;
  const card = (details as Record<string, unknown>).card;
  if (typeof card !== 'object' || card === null) return null;
  const value = (card as Record<string, unknown>).fingerprint;
  if (value === undefined || value === null || value === '') return null;
  if (typeof value === 'string' && STRIPE_ID.test(value)) return value;
  problems.push('payment_method_details.card.fingerprint is not 1-255 printable ASCII characters');
  return null;
}

function readMetadata(value: unknown, problems: string[]): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`metadata is not an object (${describeType(value)})`);
    return {};
  }
  return value as Record<string, unknown>;
}

/** Absent or empty: no attribution. Present: a key as Stripe holds it, compared byte for byte. */
function readAttribution(
  metadata: Record<string, unknown>,
  name: string,
  shape: RegExp,
  problems: string[],
): string | null {
  if (!Object.hasOwn(metadata, name)) return null;
  const value = metadata[name];
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') problems.push(`metadata[${name}] is not a string (${describeType(value)})`);
  else if (!shape.test(value))
    problems.push(`metadata[${name}] is not 1-500 characters without control characters, lone surrogates or U+241F`);
  else return value;
  return null;
}

function isWholeNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

/**
 * A value for a problem text, which ends up in a finding: short printable strings and
 * numbers are quoted; anything else (possibly long, binary, or a secret an upstream
 * echoed back) is only described.
 */
function show(value: unknown): string {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : describeType(value);
  if (typeof value === 'string' && value.length <= 12 && /^[\x20-\x7E]*$/.test(value)) return JSON.stringify(value);
  return describeType(value);
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `a string of ${value.length} characters`;
  return typeof value;
}

function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}
