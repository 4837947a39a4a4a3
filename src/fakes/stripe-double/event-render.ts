import Stripe from 'stripe';
import type { EventRecord, EventRequest } from './event-store.js';
import { renderCharge } from './render.js';

/** Events carry the API version their `data` was rendered with: the one the SDK pins. */
export const EVENT_API_VERSION: string = Stripe.API_VERSION;

/** An event as `GET /v1/events` returns it (Stripe's shape; `account` only for a connected account). */
export interface EventJson {
  id: string;
  object: 'event';
  account?: string;
  api_version: string;
  created: number;
  data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> };
  livemode: boolean;
  pending_webhooks: number;
  request: EventRequest;
  type: string;
}

export function renderEvent(event: EventRecord): EventJson {
  const object = 'charge' in event.snapshot ? renderCharge(event.snapshot.charge) : structuredClone(event.snapshot.json);
  const data: EventJson['data'] = { object };
  if (event.previousAttributes) data.previous_attributes = structuredClone(event.previousAttributes);
  return {
    id: event.id,
    object: 'event',
    ...(event.account === null ? {} : { account: event.account }),
    api_version: EVENT_API_VERSION,
    created: event.created,
    data,
    livemode: false,
    // The double delivers no webhooks.
    pending_webhooks: 0,
    request: { ...event.request },
    type: event.type,
  };
}
