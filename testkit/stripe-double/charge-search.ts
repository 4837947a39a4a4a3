import type { ChargeRecord } from './charge-store.js';
import { invalidInteger, invalidRequest, missingParameter, unknownParameter } from './errors.js';
import { read } from './form.js';
import type { Handler } from './handler.js';
import { renderCharge } from './render.js';
import { matchesCharge, parseChargeQuery, SearchQueryError, type ChargeQuery } from './search-query.js';

const PARAMS = new Set(['query', 'limit', 'page', 'expand']);

/**
 * `GET /v1/charges/search?query=…`: the account's listed charges that match, newest
 * first, `limit` 1..100 (default 10), continued with `page=<next_page>`. Like Stripe's,
 * the index lags: a charge younger than the double's search lag is not found yet.
 * A linear scan: search serves a few look-ups per run, not the listing.
 */
export const searchCharges: Handler = ({ state, account, params }) => {
  for (const key of Object.keys(params)) if (!PARAMS.has(key)) throw unknownParameter(key);
  const text = read.string(params, 'query');
  if (text === undefined) throw missingParameter('query');
  let query: ChargeQuery;
  try {
    query = parseChargeQuery(text);
  } catch (error) {
    if (error instanceof SearchQueryError)
      throw invalidRequest(`Invalid query: ${error.message}`, { code: 'parameter_invalid', param: 'query' });
    throw error;
  }
  const limit = pageSize(read.string(params, 'limit'));
  const after = pageCursor(read.string(params, 'page'));
  const searchableBefore = state.clock.nowMs() - state.searchLagMs;

  const charges = state.charges.all(account);
  let i = 0;
  if (after !== undefined) {
    i = charges.findIndex((c) => c.id === after) + 1;
    if (i === 0)
      throw invalidRequest('Invalid page: the cursor is not from this search.', {
        code: 'parameter_invalid',
        param: 'page',
      });
  }
  const found: ChargeRecord[] = [];
  for (; i < charges.length && found.length <= limit; i += 1) {
    const charge = charges[i] as ChargeRecord;
    if (charge.created * 1000 <= searchableBefore && matchesCharge(query, charge)) found.push(charge);
  }
  const data = found.slice(0, limit);
  const hasMore = found.length > limit;
  const last = data[data.length - 1];
  return {
    status: 200,
    body: {
      object: 'search_result',
      data: data.map(renderCharge),
      has_more: hasMore,
      next_page: hasMore && last ? encodePage(last.id) : null,
      url: '/v1/charges/search',
    },
  };
};

function pageSize(text: string | undefined): number {
  if (text === undefined) return 10;
  if (!/^\d+$/.test(text)) throw invalidInteger('limit', text);
  const n = Number(text);
  if (n < 1 || n > 100)
    throw invalidRequest('This value must be between 1 and 100.', {
      code: 'parameter_invalid_integer',
      param: 'limit',
    });
  return n;
}

// Opaque to clients, as Stripe's are; here simply the last charge of the previous page.
function encodePage(lastId: string): string {
  return Buffer.from(JSON.stringify({ after: lastId })).toString('base64url');
}

function pageCursor(page: string | undefined): string | undefined {
  if (page === undefined) return undefined;
  try {
    const decoded = JSON.parse(Buffer.from(page, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof decoded.after === 'string') return decoded.after;
  } catch {
    // Falls through to the error below.
  }
  throw invalidRequest('Invalid page: the cursor is not from this search.', {
    code: 'parameter_invalid',
    param: 'page',
  });
}
