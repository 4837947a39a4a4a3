import { expansions } from './balance-endpoints.js';
import { resourceMissing } from './errors.js';
import { omitParams, read } from './form.js';
import type { Handler } from './handler.js';
import { parseListQuery, rangeOf } from './list-query.js';
import { listBody, pageOf } from './list-page.js';
import type { PayoutRecord } from './payouts.js';
import { payoutJson } from './views.js';

const FILTERS = ['arrival_date', 'status', 'destination'];
const EXPANDABLE = ['balance_transaction', 'failure_balance_transaction'];

/**
 * `GET /v1/payouts`: newest first, `created` and `arrival_date` (a value or a range),
 * `status`, `destination`, cursors, `limit`; `expand[]=data.balance_transaction`.
 */
export const listPayouts: Handler = ({ state, account, params }) => {
  const query = parseListQuery(omitParams(params, FILTERS));
  const arrival = rangeOf(params, 'arrival_date');
  const status = read.string(params, 'status');
  const destination = read.string(params, 'destination');
  const expand = expansions(
    params,
    EXPANDABLE.map((f) => `data.${f}`),
  ).map((path) => path.slice('data.'.length));
  const wanted = (p: PayoutRecord) =>
    p.created >= query.gte &&
    p.created < query.lt &&
    (arrival === undefined || (p.arrivalDate >= arrival.gte && p.arrivalDate < arrival.lt)) &&
    (status === undefined || p.status === status) &&
    (destination === undefined || p.destination === destination);
  const page = pageOf(state.payouts.of(account), (p) => p.id, wanted, query, 'payout');
  return { status: 200, body: listBody(page, '/v1/payouts', (p) => payoutJson(state, p, expand)) };
};

/** `GET /v1/payouts/:id`, within the account asked for. */
export const retrievePayout: Handler = ({ state, account, params, pathParams }) => {
  const id = pathParams.id as string;
  const payout = state.payouts.get(id);
  if (!payout || payout.account !== account) throw resourceMissing('payout', id);
  return { status: 200, body: payoutJson(state, payout, expansions(params, EXPANDABLE)) };
};
