import { STRIPE_ID } from './normalize.js';

/**
 * What the sweep needs from one Stripe event: which charge (and payment intent) it
 * is about, and when it happened. Provider-neutral on purpose: an event is only a
 * pointer, the charge itself is re-read before anything is judged.
 */
export interface ChangeEvent {
  id: string;
  type: string;
  /** Unix seconds. */
  created: number;
  /** The account it was listed under (null: the platform). */
  account: string | null;
  /** The charge it is about: a charge's own id, a dispute's or refund's `charge`, an intent's `latest_charge`. */
  chargeId: string | null;
  paymentIntentId: string | null;
  /** A refund event's refund: re-read by id, as the charge is (src/sweep/refund-step.ts). */
  refundId?: string | null;
  /** A dispute event's dispute as the event carries it (src/sweep/disputes.ts says why this one is read from the event). */
  dispute?: DisputeSnapshot | null;
}

export interface DisputeSnapshot {
  id: string;
  status: string;
}

/** What an event must satisfy to be read: the listing's own request, to check the answer against. */
export interface EventExpectation {
  account: string | null;
  types: ReadonlySet<string>;
  /** `gte <= created < lt` (`lt` null: no upper bound). */
  gte: number;
  lt: number | null;
}

export type ReadEventResult =
  | { ok: true; event: ChangeEvent }
  /** `pointerMissing`: a well-formed event whose object names no usable charge (one lost pointer, not a broken listing). */
  | { ok: false; id: string | null; problem: string; pointerMissing?: boolean };

/**
 * Reads one listed event into a ChangeEvent, or says what is wrong with it. Wrong
 * means the listing cannot be trusted: no usable id, type or `created`; a type or
 * time the request excluded (the filter was not applied); an event naming another account; or
 * a `charge.*` event that names no charge.
 */
export function readChangeEvent(raw: unknown, expected: EventExpectation): ReadEventResult {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return { ok: false, id: null, problem: 'an item is not an event object' };
  const event = raw as Record<string, unknown>;
  const id = typeof event.id === 'string' && STRIPE_ID.test(event.id) ? event.id : null;
  const fail = (problem: string, pointerMissing = false): ReadEventResult => ({
    ok: false,
    id,
    problem: `event ${id ?? '(no id)'}: ${problem}`,
    ...(pointerMissing ? { pointerMissing } : {}),
  });
  if (id === null) return fail('missing or unusable id');
  const envelope = readEnvelope(event, expected);
  if (typeof envelope === 'string') return fail(envelope);
  const data = event.data as { object?: unknown } | null | undefined;
  const object = typeof data === 'object' && data !== null ? data.object : undefined;
  if (typeof object !== 'object' || object === null || Array.isArray(object))
    return fail('data.object is not an object');
  const { type, created } = envelope;
  const { chargeId, paymentIntentId } = pointersOf(object as Record<string, unknown>);
  const refundId = refundIdOf(object as Record<string, unknown>);
  const dispute = disputeOf(object as Record<string, unknown>);
  if (chargeId === null && type.startsWith('charge.')) return fail(`a ${type} event that names no charge`, true);
  return {
    ok: true,
    event: { id, type, created, account: expected.account, chargeId, paymentIntentId, refundId, dispute },
  };
}

/** The event's type and time, checked against what the listing asked for; or what is wrong with them. */
function readEnvelope(
  event: Record<string, unknown>,
  expected: EventExpectation,
): { type: string; created: number } | string {
  const { type, created } = event;
  if (typeof type !== 'string' || type === '') return 'missing type';
  if (!expected.types.has(type)) return `type ${type} was not asked for`;
  if (typeof created !== 'number' || !Number.isSafeInteger(created)) return 'missing created';
  if (created < expected.gte || (expected.lt !== null && created >= expected.lt))
    return `created ${created} is outside the range asked for`;
  // A connected account's events name it; the platform's name none. Absent is taken as the account asked for.
  const account = event.account ?? null;
  if (account !== null && account !== expected.account)
    return `belongs to ${String(account)}, not ${expected.account ?? 'the platform'}`;
  return { type, created };
}

/** A refund event's own refund id; null for every other object. */
function refundIdOf(object: Record<string, unknown>): string | null {
  return object.object === 'refund' ? idOf(object.id) : null;
}

/** A dispute event's dispute: its id and status (a lower-case word, as Stripe's are); null otherwise. */
function disputeOf(object: Record<string, unknown>): DisputeSnapshot | null {
  if (object.object !== 'dispute') return null;
  const id = idOf(object.id);
  const status = object.status;
  if (id === null || typeof status !== 'string' || !/^[a-z_]{1,40}$/.test(status)) return null;
  return { id, status };
}

/** The charge and intent an event's object points at, whatever its kind. */
export function pointersOf(object: Record<string, unknown>): {
  chargeId: string | null;
  paymentIntentId: string | null;
} {
  switch (object.object) {
    case 'charge':
      return { chargeId: idOf(object.id), paymentIntentId: idOf(object.payment_intent) };
    case 'dispute':
    case 'refund':
      return { chargeId: idOf(object.charge), paymentIntentId: idOf(object.payment_intent) };
    case 'payment_intent':
      return { chargeId: idOf(object.latest_charge), paymentIntentId: idOf(object.id) };
    default:
      return { chargeId: null, paymentIntentId: null };
  }
}

/** An id, or an expanded object's id. */
function idOf(value: unknown): string | null {
  const id = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).id : value;
  return typeof id === 'string' && STRIPE_ID.test(id) ? id : null;
}
