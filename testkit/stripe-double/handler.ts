import type { EventRequest } from './event-store.js';
import type { FormParams } from './form.js';
import type { DoubleState } from './state.js';

export interface HandlerContext {
  state: DoubleState;
  /** The Stripe-Account header; null for the platform. */
  account: string | null;
  params: FormParams;
  /** Path parameters, e.g. the id of `/v1/charges/:id`. */
  pathParams: Record<string, string>;
  /** The API key the request was made with (for error messages that name it, masked). */
  key?: string;
  /** The request id and idempotency key, for the `request` of the events a change emits. */
  request?: EventRequest;
}

/**
 * What a handler answers once it executed. A card decline is an executed request (its
 * 402 is stored under the idempotency key and replayed); a DoubleError thrown instead
 * is a rejection before execution and is not stored, as at Stripe.
 */
export interface HandlerResult {
  status: number;
  body: unknown;
}

export type Handler = (context: HandlerContext) => HandlerResult;
