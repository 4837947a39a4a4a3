import type { ChargeRecord } from './charge-store.js';
import { captureCharge, closeDispute, openDispute, updateCharge, type ChargeUpdate } from './changes.js';
import type { DisputeJson, DisputeOutcome } from './disputes.js';
import { emit, type EventTiming } from './emit.js';
import { renderEvent, type EventJson } from './event-render.js';
import { renderCharge, type ChargeJson } from './render.js';
import type { DoubleState } from './state.js';
import { disputeJson } from './views.js';

/**
 * Control hooks for what happens to charges after they are made, and for the events
 * that report it: the raw material of tests of an events reader. Every change emits
 * Stripe's events for it at once unless `EventTiming` says otherwise.
 */
export interface EventControls {
  /** Captures an uncaptured charge (all of it by default): `charge.captured`. */
  capture(chargeId: string, amount?: number, events?: EventTiming): ChargeJson;
  /** Opens a dispute on a charge without an open one: `charge.dispute.created`, `.funds_withdrawn`. */
  openDispute(chargeId: string, options?: { reason?: string; amount?: number; events?: EventTiming }): DisputeJson;
  /** Closes the charge's open dispute: `charge.dispute.closed` (and `.funds_reinstated` when won). */
  closeDispute(chargeId: string, outcome: DisputeOutcome, events?: EventTiming): DisputeJson;
  /** Edits metadata (a key set to '' is removed) or the description: `charge.updated` with `previous_attributes`. */
  updateCharge(chargeId: string, update: ChargeUpdate, events?: EventTiming): ChargeJson;
  disputes(chargeId?: string): DisputeJson[];

  /** Every stored event of an account, newest first, listable or not (hidden, expired), as the API renders them. */
  events(account: string | null, type?: string): EventJson[];
  /** Stored events (listable or not), of one account or of all. */
  eventCount(account?: string | null): number;
  /** Events emitted from now on become listable `ms` after their `created` (eventual consistency). 0 = at once, the default. */
  setEventLag(ms: number): void;
  /** Charges younger than `ms` are not found by `GET /v1/charges/search` yet. 0 = at once, the default. */
  setSearchLag(ms: number): void;
  /** Emits any event with any `data.object` (a type the double never emits, a malformed object). */
  emitEvent(
    account: string | null,
    type: string,
    object: Record<string, unknown>,
    options?: EventTiming & { previousAttributes?: Record<string, unknown> },
  ): EventJson[];
  /**
   * Reports an event's change again: by default under a new id (Stripe may emit one
   * change twice); with `sameId`, under the same id, which a listing then shows twice
   * (a broken upstream). Timing as for any event (default: dated and visible now).
   */
  duplicateEvent(eventId: string, options?: EventTiming & { sameId?: boolean }): EventJson[];
  /** Charges that exist (retrievable by id) but are not in `GET /v1/charges` yet, and when they will be. */
  unlistedCharges(): Array<{ id: string; account: string | null; listedAt: Date }>;
}

export function createEventControls(state: DoubleState): EventControls {
  const chargeOrThrow = (id: string): ChargeRecord => {
    const charge = state.charges.get(id);
    if (!charge) throw new Error(`the double has no charge ${id}`);
    return charge;
  };
  const lag = (ms: number) => {
    if (!Number.isFinite(ms) || ms < 0)
      throw new RangeError(`a lag must be a non-negative number of milliseconds (got ${ms})`);
    return ms;
  };

  return {
    capture(chargeId, amount, events = {}) {
      const charge = chargeOrThrow(chargeId);
      captureCharge(state, charge, amount, events);
      return renderCharge(charge);
    },
    openDispute(chargeId, options = {}) {
      return disputeJson(state, openDispute(state, chargeOrThrow(chargeId), options, options.events ?? {}));
    },
    closeDispute(chargeId, outcome, events = {}) {
      return disputeJson(state, closeDispute(state, chargeOrThrow(chargeId), outcome, events));
    },
    updateCharge(chargeId, update, events = {}) {
      const charge = chargeOrThrow(chargeId);
      updateCharge(state, charge, update, events);
      return renderCharge(charge);
    },
    disputes(chargeId) {
      return [...state.disputes.values()]
        .filter((d) => chargeId === undefined || d.charge === chargeId)
        .map((d) => disputeJson(state, d));
    },
    events(account, type) {
      const all = state.events.all(account);
      const out: EventJson[] = [];
      for (let i = all.length - 1; i >= 0; i -= 1) {
        const event = all[i];
        if (event && (type === undefined || event.type === type)) out.push(renderEvent(event));
      }
      return out;
    },
    eventCount(account) {
      return account === undefined ? state.events.size : state.events.all(account).length;
    },
    setEventLag(ms) {
      state.eventLagMs = lag(ms);
    },
    setSearchLag(ms) {
      state.searchLagMs = lag(ms);
    },
    emitEvent(account, type, object, options = {}) {
      const { previousAttributes, ...timing } = options;
      return emit(state, account, type, { json: structuredClone(object) }, previousAttributes, timing).map(renderEvent);
    },
    duplicateEvent(eventId, options = {}) {
      const original = state.events.get(eventId);
      if (!original) throw new Error(`the double has no event ${eventId}`);
      const { sameId, ...timing } = options;
      const context = { request: original.request, ...timing, ...(sameId ? { id: original.id } : {}) };
      return emit(state, original.account, original.type, original.snapshot, original.previousAttributes, context).map(
        renderEvent,
      );
    },
    unlistedCharges() {
      return state.charges
        .unlisted()
        .map(({ record, listedAtMs }) => ({ id: record.id, account: record.account, listedAt: new Date(listedAtMs) }));
    },
  };
}
