import { listAccounts, retrieveAccount, retrieveOwnAccount } from './account-endpoints.js';
import { listBalanceTransactions, retrieveBalance, retrieveBalanceTransaction } from './balance-endpoints.js';
import { searchCharges } from './charge-search.js';
import { listCharges, retrieveCharge } from './charges.js';
import { listEvents, retrieveEvent } from './events.js';
import type { Handler } from './handler.js';
import { createPaymentIntent, retrievePaymentIntent } from './payment-intents.js';
import { listPayouts, retrievePayout } from './payout-endpoints.js';
import { listRefunds, retrieveRefund } from './refund-list.js';
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
  searchCharges: 'GET /v1/charges/search',
  createPaymentIntent: 'POST /v1/payment_intents',
  retrievePaymentIntent: 'GET /v1/payment_intents/:id',
  createRefund: 'POST /v1/refunds',
  listRefunds: 'GET /v1/refunds',
  retrieveRefund: 'GET /v1/refunds/:id',
  listEvents: 'GET /v1/events',
  retrieveEvent: 'GET /v1/events/:id',
  retrieveBalance: 'GET /v1/balance',
  listBalanceTransactions: 'GET /v1/balance_transactions',
  retrieveBalanceTransaction: 'GET /v1/balance_transactions/:id',
  listPayouts: 'GET /v1/payouts',
  retrievePayout: 'GET /v1/payouts/:id',
  listAccounts: 'GET /v1/accounts',
  retrieveAccount: 'GET /v1/accounts/:id',
  retrieveOwnAccount: 'GET /v1/account',
} as const;

export type Endpoint = (typeof ENDPOINTS)[keyof typeof ENDPOINTS];

const ROUTES: Route[] = [
  {
    method: 'GET',
    endpoint: ENDPOINTS.listCharges,
    permission: 'rak_charge_read',
    pattern: /^\/v1\/charges\/?$/,
    handler: listCharges,
  },
  // Before `:id`, which would take "search" for an id.
  {
    method: 'GET',
    endpoint: ENDPOINTS.searchCharges,
    permission: 'rak_charge_read',
    pattern: /^\/v1\/charges\/search\/?$/,
    handler: searchCharges,
  },
  {
    method: 'GET',
    endpoint: ENDPOINTS.retrieveCharge,
    permission: 'rak_charge_read',
    pattern: /^\/v1\/charges\/(?<id>[^/]+)$/,
    handler: retrieveCharge,
  },
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
  {
    method: 'POST',
    endpoint: ENDPOINTS.createRefund,
    permission: 'rak_refund_write',
    pattern: /^\/v1\/refunds\/?$/,
    handler: createRefund,
  },
  {
    method: 'GET',
    endpoint: ENDPOINTS.listRefunds,
    permission: 'rak_refund_read',
    pattern: /^\/v1\/refunds\/?$/,
    handler: listRefunds,
  },
  {
    method: 'GET',
    endpoint: ENDPOINTS.retrieveRefund,
    permission: 'rak_refund_read',
    pattern: /^\/v1\/refunds\/(?<id>[^/]+)$/,
    handler: retrieveRefund,
  },
  {
    method: 'GET',
    endpoint: ENDPOINTS.listEvents,
    permission: 'rak_event_read',
    pattern: /^\/v1\/events\/?$/,
    handler: listEvents,
  },
  {
    method: 'GET',
    endpoint: ENDPOINTS.retrieveEvent,
    permission: 'rak_event_read',
    pattern: /^\/v1\/events\/(?<id>[^/]+)$/,
    handler: retrieveEvent,
  },
  ...readRoutes([
    [ENDPOINTS.retrieveBalance, 'rak_balance_read', /^\/v1\/balance\/?$/, retrieveBalance],
    [ENDPOINTS.listBalanceTransactions, 'rak_balance_read', /^\/v1\/balance_transactions\/?$/, listBalanceTransactions],
    [
      ENDPOINTS.retrieveBalanceTransaction,
      'rak_balance_read',
      /^\/v1\/balance_transactions\/(?<id>[^/]+)$/,
      retrieveBalanceTransaction,
    ],
    [ENDPOINTS.listPayouts, 'rak_payout_read', /^\/v1\/payouts\/?$/, listPayouts],
    [ENDPOINTS.retrievePayout, 'rak_payout_read', /^\/v1\/payouts\/(?<id>[^/]+)$/, retrievePayout],
    [ENDPOINTS.listAccounts, 'rak_account_read', /^\/v1\/accounts\/?$/, listAccounts],
    [ENDPOINTS.retrieveAccount, 'rak_account_read', /^\/v1\/accounts\/(?<id>[^/]+)$/, retrieveAccount],
    [ENDPOINTS.retrieveOwnAccount, 'rak_account_read', /^\/v1\/account\/?$/, retrieveOwnAccount],
  ]),
];

function readRoutes(rows: ReadonlyArray<[string, string, RegExp, Handler]>): Route[] {
  return rows.map(([endpoint, permission, pattern, handler]) => ({
    method: 'GET',
    endpoint,
    permission,
    pattern,
    handler,
  }));
}

export function matchRoute(
  method: string,
  path: string,
): { route: Route; pathParams: Record<string, string> } | undefined {
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    const match = route.pattern.exec(path);
    if (match)
      return {
        route,
        pathParams: Object.fromEntries(Object.entries(match.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)])),
      };
  }
  return undefined;
}
