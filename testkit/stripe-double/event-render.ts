import Stripe from 'stripe';
import type { EventRecord, EventRequest, EventSnapshot } from './event-store.js';
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
  const object = renderSnapshot(event.snapshot);
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

function renderSnapshot(snapshot: EventSnapshot): Record<string, unknown> {
  if ('charge' in snapshot) return renderCharge(snapshot.charge);
  if ('json' in snapshot) return structuredClone(snapshot.json);
  // A seeded charge as it was created: whatever happened to it since is undone here.
  const charge = snapshot.seededCharge;
  const captured = charge.status === 'succeeded';
  return renderCharge({
    ...charge,
    captured,
    amountCaptured: captured ? charge.amount : 0,
    amountRefunded: 0,
    disputed: false,
    description: null,
    metadata: snapshot.metadata,
  });
}
