import { listCharges, retrieveCharge } from './charges.js';
import type { Handler } from './handler.js';
import { createPaymentIntent, retrievePaymentIntent } from './payment-intents.js';
import { createRefund } from './refunds.js';

export interface Route {
  method: 'GET' | 'POST';
  /** Name used by counters, rate limits, latency and faults, e.g. 'GET /v1/charges/:id'. */
  endpoint: string;
  /** The restricted-key permission Stripe requires for it. */
  permission: string;
  pattern: RegExp;
  handler: Handler;
}

export const ENDPOINTS = {
  listCharges: 'GET /v1/charges',
  retrieveCharge: 'GET /v1/charges/:id',
  createPaymentIntent: 'POST /v1/payment_intents',
  retrievePaymentIntent: 'GET /v1/payment_intents/:id',
  createRefund: 'POST /v1/refunds',
} as const;

export type Endpoint = (typeof ENDPOINTS)[keyof typeof ENDPOINTS];

const ROUTES: Route[] = [
  { method: 'GET', endpoint: ENDPOINTS.listCharges, permission: 'rak_charge_read', pattern: /^\/v1\/charges\/?$/, handler: listCharges },
  { method: 'GET', endpoint: ENDPOINTS.retrieveCharge, permission: 'rak_charge_read', pattern: /^\/v1\/charges\/(?<id>[^/]+)$/, handler: retrieveCharge },
  {
    method: 'POST',
    endpoint: ENDPOINTS.createPaymentIntent,
    permission: 'rak_payment_intent_write',
    pattern: /^\/v1\/payment_intents\/?$/,
    handler: createPaymentIntent,
  },
  {
    method: 'GET',
    endpoint: ENDPOINTS.retrievePaymentIntent,
    permission: 'rak_payment_intent_read',
    pattern: /^\/v1\/payment_intents\/(?<id>[^/]+)$/,
    handler: retrievePaymentIntent,
  },
  { method: 'POST', endpoint: ENDPOINTS.createRefund, permission: 'rak_refund_write', pattern: /^\/v1\/refunds\/?$/, handler: createRefund },
];

export function matchRoute(method: string, path: string): { route: Route; pathParams: Record<string, string> } | undefined {
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    const match = route.pattern.exec(path);
    if (match) return { route, pathParams: Object.fromEntries(Object.entries(match.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)])) };
  }
  return undefined;
}
