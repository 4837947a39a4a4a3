import { invalidRequest, resourceMissing } from './errors.js';
import { EventStore } from './event-store.js';
import { renderEvent } from './event-render.js';
import { omitParams, read, type FormParams } from './form.js';
import type { Handler } from './handler.js';
import { parseListQuery } from './list-query.js';

/** Stripe accepts at most this many names in `types[]`. */
export const MAX_EVENT_TYPES = 20;
const EVENT_ONLY_PARAMS = ['type', 'types', 'delivery_success'];

/**
 * `GET /v1/events`: newest first, `created` range, cursors, `limit` 1..100, and either
 * `type` (one name, `*` as a wildcard: `charge.dispute.*`) or `types[]` (up to 20 exact
 * names), never both. Events older than 30 days or not yet visible are left out.
 */
export const listEvents: Handler = ({ state, account, params }) => {
  // The list parameters proper; `delivery_success` is accepted and ignored (the double delivers no webhooks).
  const query = parseListQuery(omitParams(params, EVENT_ONLY_PARAMS));
  const matches = typeFilter(params);
  const answer = state.events.list(account, { ...query, nowMs: state.clock.nowMs(), ...(matches ? { matches } : {}) });
  if (!answer.ok)
    throw invalidRequest(`No such event: '${answer.missingCursor}'`, { code: 'resource_missing', param: answer.param });
  return {
    status: 200,
    body: { object: 'list', data: answer.data.map(renderEvent), has_more: answer.hasMore, url: '/v1/events' },
  };
};

/** `GET /v1/events/:id`: only within the account asked for, only while retained and visible. */
export const retrieveEvent: Handler = ({ state, account, pathParams }) => {
  const id = pathParams.id as string;
  const event = state.events.get(id);
  if (!event || event.account !== account || !EventStore.listable(event, state.clock.nowMs()))
    throw resourceMissing('event', id);
  return { status: 200, body: renderEvent(event) };
};

function typeFilter(params: FormParams): ((t: string) => boolean) | undefined {
  const { type, types } = params;
  if (type !== undefined && types !== undefined) {
    throw invalidRequest('You may pass either `type` or `types`, but not both.', {
      code: 'parameter_invalid',
      param: 'types',
    });
  }
  if (type !== undefined) {
    const pattern = read.string(params, 'type');
    if (!pattern) throw invalidRequest('Invalid type: must be a string', { code: 'parameter_invalid', param: 'type' });
    const regex = new RegExp(`^${pattern.split('*').map(escapeRegex).join('.*')}$`);
    return (t) => regex.test(t);
  }
  if (types === undefined) return undefined;
  const names = read.strings(params, 'types');
  if (names.length === 0) throw invalidRequest('Invalid array', { code: 'parameter_invalid', param: 'types' });
  if (names.length > MAX_EVENT_TYPES) {
    throw invalidRequest(`Invalid types: must contain at most ${MAX_EVENT_TYPES} event types`, {
      code: 'parameter_invalid',
      param: 'types',
    });
  }
  // `types[]` takes exact names; a wildcard there is a mistake the caller should hear about.
  const wildcard = names.find((n) => n.includes('*'));
  if (wildcard !== undefined) {
    throw invalidRequest(`Invalid types: '${wildcard}' is not an event type; wildcards are only accepted in \`type\``, {
      code: 'parameter_invalid',
      param: 'types',
    });
  }
  const set = new Set(names);
  return (t) => set.has(t);
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
