import type { ListQuery } from './charge-store.js';
import { invalidInteger, invalidRequest, unknownParameter } from './errors.js';
import { read, type FormParams } from './form.js';

const KNOWN = new Set(['created', 'limit', 'starting_after', 'ending_before', 'expand']);
const RANGE_KEYS = new Set(['gt', 'gte', 'lt', 'lte']);

/**
 * `GET /v1/charges` parameters as Stripe validates them: `created` as a timestamp or
 * a `gt/gte/lt/lte` range, `limit` 1..100 (default 10), at most one cursor.
 * Throws the DoubleError Stripe would answer with.
 */
export function parseListQuery(params: FormParams): ListQuery {
  for (const key of Object.keys(params)) if (!KNOWN.has(key)) throw unknownParameter(key);
  const query: ListQuery = { gte: Number.MIN_SAFE_INTEGER, lt: Number.MAX_SAFE_INTEGER, limit: 10 };

  const created = rangeOf(params, 'created');
  if (created) {
    query.gte = created.gte;
    query.lt = created.lt;
  }

  const limit = read.string(params, 'limit');
  if (limit !== undefined) {
    const n = integer('limit', limit);
    if (n < 1)
      throw invalidRequest('This value must be greater than or equal to 1.', {
        code: 'parameter_invalid_integer',
        param: 'limit',
      });
    if (n > 100)
      throw invalidRequest('This value must be less than or equal to 100.', {
        code: 'parameter_invalid_integer',
        param: 'limit',
      });
    query.limit = n;
  }

  const startingAfter = read.string(params, 'starting_after');
  const endingBefore = read.string(params, 'ending_before');
  if (startingAfter !== undefined && endingBefore !== undefined) {
    throw invalidRequest('You may only specify one of these parameters: ending_before, starting_after.', {
      param: 'starting_after',
    });
  }
  if (startingAfter) query.startingAfter = startingAfter;
  if (endingBefore) query.endingBefore = endingBefore;
  return query;
}

/**
 * A timestamp filter as Stripe takes it (`created`, `arrival_date`): one value, or a hash
 * of `gt/gte/lt/lte`, as the half-open range `gte <= t < lt`; undefined when absent.
 */
export function rangeOf(params: FormParams, name: string): { gte: number; lt: number } | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (typeof value === 'string') {
    const at = integer(name, value);
    return { gte: at, lt: at + 1 };
  }
  const range = read.object(params, name);
  if (!range)
    throw invalidRequest(`Invalid ${name}: must be an integer or a hash of gt, gte, lt, lte`, { param: name });
  const out = { gte: Number.MIN_SAFE_INTEGER, lt: Number.MAX_SAFE_INTEGER };
  for (const [op, bound] of Object.entries(range)) {
    if (!RANGE_KEYS.has(op)) throw unknownParameter(`${name}[${op}]`);
    if (typeof bound !== 'string') throw invalidRequest(`Invalid ${name}[${op}]`, { param: `${name}[${op}]` });
    const n = integer(`${name}[${op}]`, bound);
    if (op === 'gt') out.gte = Math.max(out.gte, n + 1);
    if (op === 'gte') out.gte = Math.max(out.gte, n);
    if (op === 'lt') out.lt = Math.min(out.lt, n);
    if (op === 'lte') out.lt = Math.min(out.lt, n + 1);
  }
  return out;
}

function integer(param: string, value: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw invalidInteger(param, value);
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw invalidInteger(param, value);
  return n;
}
