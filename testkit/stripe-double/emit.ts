import type { EventRecord, EventRequest, EventSnapshot } from './event-store.js';
import type { DoubleState } from './state.js';

/**
 * When and how the events of one change are emitted. Tests use it to model what Stripe
 * does to an events reader: no event at all (history seeded before the cursor), an event
 * dated earlier than the moment it becomes listable (eventual consistency, out of order),
 * and the same change reported more than once.
 */
export interface EventTiming {
  /** false: the change happens without any event. Default true. */
  emit?: boolean;
  /** The events' `created`, a Date or unix seconds; default now (a creation event: the charge's `created`). */
  created?: Date | number;
  /** When they become listable, a Date or unix seconds; default `created` + the double's event lag. */
  visibleAt?: Date | number;
  /** Each event is emitted this many times, with distinct ids and the same content. Default 1. */
  copies?: number;
}

/** Timing plus the API request that caused the change, for `request` (handlers set it). */
export interface EmitContext extends EventTiming {
  request?: EventRequest | null;
  /** Store under this id instead of a new one: a same-id duplicate. */
  id?: string;
}

const NO_REQUEST: EventRequest = { id: null, idempotency_key: null };

/** Emits one event type for a change (and its copies); returns what was stored. */
export function emit(
  state: DoubleState,
  account: string | null,
  type: string,
  snapshot: EventSnapshot,
  previousAttributes: Record<string, unknown> | undefined,
  context: EmitContext = {},
): EventRecord[] {
  if (context.emit === false) return [];
  const copies = context.copies ?? 1;
  if (!Number.isSafeInteger(copies) || copies < 1)
    throw new RangeError(`copies must be a positive integer (got ${copies})`);
  const createdMs = context.created === undefined ? state.clock.nowMs() : toMs(context.created);
  const visibleAtMs = context.visibleAt === undefined ? createdMs + state.eventLagMs : toMs(context.visibleAt);
  const stored: EventRecord[] = [];
  for (let i = 0; i < copies; i += 1) {
    stored.push(
      state.events.add({
        id: context.id ?? state.newEventId('evt'),
        account,
        type,
        created: Math.floor(createdMs / 1000),
        visibleAtMs,
        snapshot,
        ...(previousAttributes ? { previousAttributes } : {}),
        request: context.request ?? NO_REQUEST,
      }),
    );
  }
  return stored;
}

/**
 * `previous_attributes` as Stripe sends it: the earlier value of every top-level field
 * that changed; for a hash such as `metadata`, only its changed keys (null for a key
 * that did not exist).
 */
export function changedAttributes(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, unknown> | undefined {
  const previous: Record<string, unknown> = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const [was, now] = [before[key], after[key]];
    if (JSON.stringify(was) === JSON.stringify(now)) continue;
    if (isPlainObject(was) && isPlainObject(now)) {
      const inner: Record<string, unknown> = {};
      for (const k of new Set([...Object.keys(was), ...Object.keys(now)])) {
        if (JSON.stringify(was[k]) !== JSON.stringify(now[k])) inner[k] = was[k] ?? null;
      }
      previous[key] = inner;
    } else {
      previous[key] = was ?? null;
    }
  }
  return Object.keys(previous).length > 0 ? previous : undefined;
}

export function toMs(instant: Date | number): number {
  const ms = instant instanceof Date ? instant.getTime() : instant * 1000;
  if (!Number.isFinite(ms)) throw new RangeError(`not a valid instant: ${String(instant)}`);
  return ms;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
