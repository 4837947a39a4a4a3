import { invalidRequest, resourceMissing } from './errors.js';
import type { Handler } from './handler.js';
import { parseListQuery } from './list-query.js';
import { renderCharge } from './render.js';

/** `GET /v1/charges`: newest first, exact pagination within a second thanks to the id tie-break. */
export const listCharges: Handler = ({ state, account, params }) => {
  const query = parseListQuery(params);
  const answer = state.charges.list(account, query);
  if (!answer.ok)
    throw invalidRequest(`No such charge: '${answer.missingCursor}'`, {
      code: 'resource_missing',
      param: answer.param,
    });
  return {
    status: 200,
    body: { object: 'list', data: answer.data.map(renderCharge), has_more: answer.hasMore, url: '/v1/charges' },
  };
};

/** `GET /v1/charges/:id`, only within the account the request is made for. */
export const retrieveCharge: Handler = ({ state, account, pathParams }) => {
  const id = pathParams.id as string;
  const charge = state.chargeIn(account, id);
  if (!charge) throw resourceMissing('charge', id);
  return { status: 200, body: renderCharge(charge) };
};
