import { renderAccount } from './accounts.js';
import { accountAccessDenied } from './errors.js';
import type { Handler } from './handler.js';
import { parseListQuery } from './list-query.js';
import { listBody, pageOf } from './list-page.js';

/**
 * `GET /v1/accounts`: the platform's connected accounts, newest first; `created`,
 * `limit`, cursors. Removed and revoked accounts are not listed; a connected account
 * (a `Stripe-Account` request) has none of its own.
 */
export const listAccounts: Handler = ({ state, account, params }) => {
  const query = parseListQuery(params);
  const all = account === null ? state.accounts.listed() : [];
  const page = pageOf(
    all,
    (a) => a.id,
    (a) => a.created >= query.gte && a.created < query.lt,
    query,
    'account',
  );
  return { status: 200, body: listBody(page, '/v1/accounts', renderAccount) };
};

/**
 * `GET /v1/accounts/:id`: a connected account (listed or removed), or the caller's own.
 * One revoked or never known answers 403, as Stripe answers for an account the key has
 * no access to.
 */
export const retrieveAccount: Handler = ({ state, account, pathParams, key }) => {
  const id = pathParams.id as string;
  const own = account ?? state.accounts.platform.id;
  if (id === own) return retrieveOwn(state, account);
  const record = account === null ? state.accounts.get(id) : undefined;
  if (!record || record.state === 'revoked') throw accountAccessDenied(key ?? '', id);
  return { status: 200, body: renderAccount(record) };
};

/** `GET /v1/account`: the account the request is made for (the platform without `Stripe-Account`). */
export const retrieveOwnAccount: Handler = ({ state, account }) => retrieveOwn(state, account);

function retrieveOwn(state: Parameters<Handler>[0]['state'], account: string | null): ReturnType<Handler> {
  if (account === null) return { status: 200, body: renderAccount(state.accounts.platform) };
  const record = state.accounts.get(account);
  // An account served without being known (unknownAccounts: 'serve') is rendered with the defaults.
  const body = record
    ? renderAccount(record)
    : renderAccount({ ...state.accounts.platform, ...state.accounts.settingsOf(account), id: account });
  return { status: 200, body };
}
