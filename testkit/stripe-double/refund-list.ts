import { resourceMissing } from './errors.js';
import { omitParams, read } from './form.js';
import type { Handler } from './handler.js';
import { parseListQuery } from './list-query.js';
import { listBody, pageOf } from './list-page.js';
import type { RefundRecord } from './records.js';
import { renderRefund } from './render.js';
import type { DoubleState } from './state.js';

/**
 * `GET /v1/refunds`, optionally only one charge's (`charge=`) or one intent's
 * (`payment_intent=`): newest first, `created` range, cursors, `limit`. Refunds are few
 * next to charges, so a listing filters and sorts them all.
 */
export const listRefunds: Handler = ({ state, account, params }) => {
  const query = parseListQuery(omitParams(params, ['charge', 'payment_intent']));
  const chargeId = read.string(params, 'charge');
  const intentId = read.string(params, 'payment_intent');
  const wanted = (r: RefundRecord) =>
    r.created >= query.gte &&
    r.created < query.lt &&
    (chargeId === undefined || r.charge === chargeId) &&
    (intentId === undefined || r.paymentIntent === intentId);
  const page = pageOf(refundsOf(state, account), (r) => r.id, wanted, query, 'refund');
  return { status: 200, body: listBody(page, '/v1/refunds', renderRefund) };
};

/** `GET /v1/refunds/:id`, within the account asked for. */
export const retrieveRefund: Handler = ({ state, account, pathParams }) => {
  const id = pathParams.id as string;
  const refund = state.refunds.get(id);
  if (!refund || refund.account !== account) throw resourceMissing('refund', id);
  return { status: 200, body: renderRefund(refund) };
};

/** An account's refunds, newest first; made in one second, the later made first. */
export function refundsOf(state: DoubleState, account: string | null): RefundRecord[] {
  return [...state.refunds.values()]
    .map((refund, order) => ({ refund, order }))
    .filter(({ refund }) => refund.account === account)
    .sort((a, b) => b.refund.created - a.refund.created || b.order - a.order)
    .map(({ refund }) => refund);
}
