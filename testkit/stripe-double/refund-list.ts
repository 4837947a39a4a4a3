import { invalidRequest, resourceMissing } from './errors.js';
import { omitParams, read } from './form.js';
import type { Handler } from './handler.js';
import { parseListQuery } from './list-query.js';
import type { RefundRecord } from './records.js';
import { renderRefund } from './render.js';

/**
 * `GET /v1/refunds`, optionally only one charge's (`charge=`) or one intent's
 * (`payment_intent=`): newest first, `created` range, cursors, `limit`. Refunds are few
 * next to charges, so a listing filters and sorts them all.
 */
export const listRefunds: Handler = ({ state, account, params }) => {
  const query = parseListQuery(omitParams(params, ['charge', 'payment_intent']));
  const chargeId = read.string(params, 'charge');
  const intentId = read.string(params, 'payment_intent');
  // Newest first; refunds made in one second keep their order of creation (Map order), newest first too.
  const all = [...state.refunds.values()]
    .map((refund, order) => ({ refund, order }))
    .filter(({ refund }) => refund.account === account)
    .sort((a, b) => b.refund.created - a.refund.created || b.order - a.order)
    .map(({ refund }) => refund);
  const index = (param: string, id: string) => {
    const at = all.findIndex((r) => r.id === id);
    if (at < 0) throw invalidRequest(`No such refund: '${id}'`, { code: 'resource_missing', param });
    return at;
  };
  const wanted = (r: RefundRecord) =>
    r.created >= query.gte &&
    r.created < query.lt &&
    (chargeId === undefined || r.charge === chargeId) &&
    (intentId === undefined || r.paymentIntent === intentId);

  let data: RefundRecord[];
  let hasMore: boolean;
  if (query.endingBefore !== undefined) {
    const newer = all.slice(0, index('ending_before', query.endingBefore)).filter(wanted);
    data = newer.slice(Math.max(0, newer.length - query.limit));
    hasMore = newer.length > query.limit;
  } else {
    const from = query.startingAfter === undefined ? 0 : index('starting_after', query.startingAfter) + 1;
    const older = all.slice(from).filter(wanted);
    data = older.slice(0, query.limit);
    hasMore = older.length > query.limit;
  }
  return { status: 200, body: { object: 'list', data: data.map(renderRefund), has_more: hasMore, url: '/v1/refunds' } };
};

/** `GET /v1/refunds/:id`, within the account asked for. */
export const retrieveRefund: Handler = ({ state, account, pathParams }) => {
  const id = pathParams.id as string;
  const refund = state.refunds.get(id);
  if (!refund || refund.account !== account) throw resourceMissing('refund', id);
  return { status: 200, body: renderRefund(refund) };
};
