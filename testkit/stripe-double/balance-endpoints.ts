import { renderBalanceTransaction } from './balance-render.js';
import { invalidRequest, resourceMissing } from './errors.js';
import { omitParams, read, type FormParams } from './form.js';
import type { Handler } from './handler.js';
import { resolveTransaction } from './ledger.js';
import { entryRecord, ledgerOf, type LedgerEntry } from './ledger-entries.js';
import { parseListQuery } from './list-query.js';
import { listBody, pageOf } from './list-page.js';
import type { PayoutRecord } from './payouts.js';
import type { DoubleState } from './state.js';
import { balanceJson, sourceJson } from './views.js';

const FILTERS = ['payout', 'type', 'source', 'currency'];

/**
 * `GET /v1/balance_transactions`: newest first, `created`, cursors, `limit`, and `type`,
 * `source`, `currency`, `payout` filters; `expand[]=data.source`. `payout` only for an
 * automatic payout, as Stripe documents (a manual one is a 400), and only once its
 * `reconciliation_status` is `completed` (before that: an empty list).
 */
export const listBalanceTransactions: Handler = ({ state, account, params }) => {
  const query = parseListQuery(omitParams(params, FILTERS));
  const expandSource = expansions(params, ['data.source']).includes('data.source');
  const [type, source, currency] = ['type', 'source', 'currency'].map((k) => read.string(params, k));
  const payoutId = read.string(params, 'payout');
  const entries = payoutId === undefined ? ledgerOf(state, account) : payoutEntries(state, account, payoutId);
  const wanted = (e: LedgerEntry) =>
    e.created >= query.gte &&
    e.created < query.lt &&
    (type === undefined || e.type === type) &&
    (source === undefined || e.source === source) &&
    (currency === undefined || e.currency === currency.toLowerCase());
  const page = pageOf(entries, (e) => e.id, wanted, query, 'balance transaction');
  const now = state.clock.nowSeconds();
  const render = (entry: LedgerEntry) => {
    const txn = entryRecord(state, entry);
    const expanded = expandSource && txn.source !== null ? sourceJson(state, txn.source) : undefined;
    return renderBalanceTransaction(txn, now, expanded);
  };
  return { status: 200, body: listBody(page, '/v1/balance_transactions', render) };
};

/** `GET /v1/balance_transactions/:id`, `expand[]=source`. */
export const retrieveBalanceTransaction: Handler = ({ state, account, params, pathParams }) => {
  const id = pathParams.id as string;
  const txn = resolveTransaction(state, id);
  if (!txn || txn.account !== account) throw resourceMissing('balance transaction', id);
  const expanded = expansions(params, ['source']).includes('source') && txn.source !== null;
  const source = expanded ? sourceJson(state, txn.source as string) : undefined;
  return { status: 200, body: renderBalanceTransaction(txn, state.clock.nowSeconds(), source) };
};

/** `GET /v1/balance`: available and pending, per currency, on the double's clock. */
export const retrieveBalance: Handler = ({ state, account, params }) => {
  expansions(params, []);
  return { status: 200, body: balanceJson(state, account) };
};

/** A payout's members never change: resolved once, not on every page of a 10,000-transaction payout. */
const membersOf = new WeakMap<PayoutRecord, LedgerEntry[]>();

function payoutEntries(state: DoubleState, account: string | null, payoutId: string): LedgerEntry[] {
  const payout = state.payouts.get(payoutId);
  if (!payout || payout.account !== account) throw resourceMissing('payout', payoutId, 'payout', 400);
  if (!payout.automatic) {
    throw invalidRequest('Balance transaction history can only be filtered on automatic transfers, not manual.', {
      param: 'payout',
    });
  }
  if (payout.reconciliationStatus !== 'completed') return [];
  let entries = membersOf.get(payout);
  if (!entries) {
    entries = payout.members.flatMap((id) => {
      const stored = resolveTransaction(state, id);
      if (!stored) return [];
      const { created, availableOn, type, source, currency } = stored;
      return [{ id, created, availableOn, type, source, currency, stored }];
    });
    membersOf.set(payout, entries);
  }
  return entries;
}

/** The `expand[]` paths asked for; one the endpoint cannot expand is a 400, as at Stripe. */
export function expansions(params: FormParams, allowed: readonly string[]): string[] {
  const asked = read.strings(params, 'expand');
  const bad = asked.find((path) => !allowed.includes(path));
  if (bad !== undefined) throw invalidRequest(`This property cannot be expanded (${bad}).`, { param: 'expand' });
  return asked;
}
