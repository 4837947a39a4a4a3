import type { MalformedCharge, NormalizedCharge } from './types.js';

/** Metadata names under which the claim library records the claim a charge belongs to. */
export interface MetadataKeys {
  tenantId: string;
  idempotencyKey: string;
}

export const DEFAULT_METADATA_KEYS: Readonly<MetadataKeys> = Object.freeze({
  tenantId: 'tenant_id',
  idempotencyKey: 'idempotency_key',
});

export type NormalizeResult = { ok: true; charge: NormalizedCharge } | { ok: false; malformed: MalformedCharge };

const STATUSES = ['succeeded', 'failed', 'pending'] as const;
type Status = (typeof STATUSES)[number];

/**
 * Flattens a charge as Stripe returns it. A charge lacking a field reconciliation
 * cannot do without comes back as a `MalformedCharge` so the caller reports it: a
 * silently dropped charge would look exactly like a charge Stripe never made.
 * `account` is the account the charge was listed under (charges do not name it).
 */
export function normalizeCharge(raw: unknown, account: string | null, keys: MetadataKeys = DEFAULT_METADATA_KEYS): NormalizeResult {
  if (typeof raw !== 'object' || raw === null) {
    return { ok: false, malformed: { id: null, account, problem: `not an object (${raw === null ? 'null' : typeof raw})` } };
  }
  const charge = raw as Record<string, unknown>;
  const id = nonEmptyString(charge.id);
  const problems: string[] = [];
  if (id === null) problems.push('missing id');
  if (!isWholeNumber(charge.created)) problems.push('missing created');
  if (!isWholeNumber(charge.amount)) problems.push('missing amount');
  const currency = nonEmptyString(charge.currency);
  if (currency === null) problems.push('missing currency');
  if (charge.status === undefined || charge.status === null) problems.push('missing status');
  else if (!STATUSES.includes(charge.status as Status)) problems.push(`unknown status ${JSON.stringify(charge.status)}`);
  if (problems.length > 0) return { ok: false, malformed: { id, account, problem: problems.join(', ') } };

  const amount = charge.amount as number;
  const captured = charge.captured === true;
  const metadata = typeof charge.metadata === 'object' && charge.metadata !== null ? (charge.metadata as Record<string, unknown>) : {};
  return {
    ok: true,
    charge: {
      id: id as string,
      account,
      created: charge.created as number,
      amount,
      // Older API versions lack amount_captured; a captured charge captured all of it.
      amountCaptured: isWholeNumber(charge.amount_captured) ? charge.amount_captured : captured ? amount : 0,
      amountRefunded: isWholeNumber(charge.amount_refunded) ? charge.amount_refunded : 0,
      currency: (currency as string).toLowerCase(),
      status: charge.status as Status,
      captured,
      refunded: charge.refunded === true,
      disputed: charge.disputed === true,
      paymentIntent: referenceId(charge.payment_intent),
      tenantId: nonEmptyString(metadata[keys.tenantId]),
      idempotencyKey: nonEmptyString(metadata[keys.idempotencyKey]),
      livemode: charge.livemode === true,
    },
  };
}

/** The last item of a page, read defensively: the lister pages from it even when it is malformed. */
export function pageCursorOf(raw: unknown): { id: string | null; created: number | null } {
  if (typeof raw !== 'object' || raw === null) return { id: null, created: null };
  const charge = raw as Record<string, unknown>;
  return { id: nonEmptyString(charge.id), created: isWholeNumber(charge.created) ? charge.created : null };
}

/** An id field that may be expanded into the object it names. */
function referenceId(value: unknown): string | null {
  if (typeof value === 'string') return value || null;
  if (typeof value === 'object' && value !== null) return nonEmptyString((value as Record<string, unknown>).id);
  return null;
}

function nonEmptyString(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

function isWholeNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}
