import Stripe from 'stripe';
import { accountIdOf } from '../../domain/identity.js';
import type { NormalizedBalanceTransaction, NormalizedPayout, PayoutSource } from '../../sweep/provider.js';
import type { TimeWindow } from '../../sweep/window.js';
import type { StripeListCounters } from './counters.js';
import {
  BALANCE_READ,
  MissingReadPermissionError,
  MissingStripePermissionError,
  PageFetchError,
  PAYOUTS_READ,
  type ReadPermission,
} from './errors.js';
import { STRIPE_MAX_PAGE_SIZE } from './limits.js';
import { DEFAULT_CONCURRENCY } from './list-charges.js';
import { listTransactionWindows, type FetchTransactionPage } from './payout-listing.js';
import { CURRENCY, STRIPE_ID } from './normalize.js';
import { accountCalls, type RetryDeps } from './page-source.js';
import { RateBudget, type RequestBudget } from './rate-budget.js';

/**
 * Payouts for the sweep (docs/judgement.md "Payouts and fees"): an account's payouts
 * listed by `created` (`GET /v1/payouts`, a page of 100 at a time), and an automatic
 * payout's balance transactions (`GET /v1/balance_transactions?payout=…`, pages of 100,
 * `expand[]=data.source` so a refund's or a dispute's charge comes with it instead of one
 * request each, listed by `created` sub-windows at once: payout-listing.ts), under the
 * process's rate budget and the lister's retry rules. Anything
 * Stripe returns that cannot be read fails the call, naming it: a payout is never summed
 * from part of its transactions.
 */

const PAYOUT_STATUSES: ReadonlySet<string> = new Set(['pending', 'in_transit', 'paid', 'failed', 'canceled']);
const RECONCILIATION: ReadonlySet<string> = new Set(['not_applicable', 'in_progress', 'completed']);

type Raw = Record<string, unknown>;

function objectOf(raw: unknown): Raw {
  return (typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {}) as Raw;
}

function idOf(value: unknown): string | null {
  const ref = typeof value === 'object' && value !== null ? (value as { id?: unknown }).id : value;
  return typeof ref === 'string' && STRIPE_ID.test(ref) ? ref : null;
}

const whole = (v: unknown, min = 0) => typeof v === 'number' && Number.isSafeInteger(v) && v >= min;
const integer = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v);

/** A payout as the sweep reads it; throws naming what cannot be read. */
export function normalizePayout(raw: unknown, account: string | null): NormalizedPayout {
  const r = objectOf(raw);
  const problems: string[] = [];
  const id = idOf(r.id);
  if (id === null) problems.push('id is missing or not readable');
  if (!whole(r.amount)) problems.push('amount is not a whole number of minor units');
  if (!whole(r.created)) problems.push('created is not a whole number of seconds');
  if (!whole(r.arrival_date)) problems.push('arrival_date is not a whole number of seconds');
  if (typeof r.currency !== 'string' || !CURRENCY.test(r.currency))
    problems.push('currency is missing or not readable');
  if (typeof r.automatic !== 'boolean') problems.push('automatic is not a boolean');
  if (typeof r.status !== 'string' || !PAYOUT_STATUSES.has(r.status)) problems.push('status is missing or unknown');
  if (typeof r.reconciliation_status !== 'string' || !RECONCILIATION.has(r.reconciliation_status))
    problems.push('reconciliation_status is missing or unknown');
  if (problems.length > 0)
    throw new Error(`Stripe returned payout ${id ?? '(no id)'} without what the sweep needs: ${problems.join(', ')}`);
  return {
    id: id as string,
    account,
    created: r.created as number,
    arrivalDate: r.arrival_date as number,
    amount: r.amount as number,
    currency: (r.currency as string).toLowerCase(),
    automatic: r.automatic as boolean,
    status: r.status as NormalizedPayout['status'],
    reconciliationStatus: r.reconciliation_status as NormalizedPayout['reconciliationStatus'],
    failureCode: typeof r.failure_code === 'string' ? r.failure_code : null,
  };
}

/** No rate (not converted), or a positive number. */
function readableRate(rate: unknown): boolean {
  return rate === null || rate === undefined || (typeof rate === 'number' && Number.isFinite(rate) && rate > 0);
}

/** What in a balance transaction cannot be read; empty when it all can. */
function transactionProblems(r: Raw): string[] {
  const problems: string[] = [];
  if (idOf(r.id) === null) problems.push('id is missing or not readable');
  for (const field of ['amount', 'net'] as const) if (!integer(r[field])) problems.push(`${field} is not an integer`);
  if (!whole(r.fee)) problems.push('fee is not a whole number of minor units');
  if (!whole(r.created)) problems.push('created is not a whole number of seconds');
  if (typeof r.currency !== 'string' || !CURRENCY.test(r.currency))
    problems.push('currency is missing or not readable');
  for (const field of ['type', 'reporting_category'] as const)
    if (typeof r[field] !== 'string' || r[field] === '') problems.push(`${field} is missing`);
  if (!readableRate(r.exchange_rate)) problems.push('exchange_rate is not a positive number');
  if (problems.length === 0 && (r.amount as number) - (r.fee as number) !== r.net)
    problems.push(`net ${String(r.net)} is not amount ${String(r.amount)} less fee ${String(r.fee)}`);
  return problems;
}

/** A balance transaction as the sweep reads it (its source expanded or not); throws naming what cannot be read. */
export function normalizeBalanceTransaction(raw: unknown): NormalizedBalanceTransaction {
  const r = objectOf(raw);
  const problems = transactionProblems(r);
  if (problems.length > 0)
    throw new Error(
      `Stripe returned balance transaction ${idOf(r.id) ?? '(no id)'} without what the sweep needs: ${problems.join(', ')}`,
    );
  const source = typeof r.source === 'object' && r.source !== null ? (r.source as Raw) : null;
  // A refund's and a dispute's object name their charge; a charge names itself.
  const sourceChargeId = source && source.object !== 'charge' ? idOf(source.charge) : null;
  return {
    id: idOf(r.id) as string,
    type: r.type as string,
    reportingCategory: r.reporting_category as string,
    amount: r.amount as number,
    fee: r.fee as number,
    net: r.net as number,
    currency: (r.currency as string).toLowerCase(),
    exchangeRate: typeof r.exchange_rate === 'number' ? r.exchange_rate : null,
    created: r.created as number,
    sourceId: idOf(r.source),
    sourceChargeId,
  };
}

export interface StripePayoutsDeps {
  stripe: Stripe;
  budget?: RequestBudget;
  /** The balance transactions listing's budget (default: `budget`). */
  transactionsBudget?: RequestBudget;
  /** Sub-windows of one payout's balance transactions listed at once. */
  concurrency?: number;
  counters?: StripeListCounters;
  retry?: RetryDeps['policy'];
  sleep?: RetryDeps['sleep'];
}

/** A guard against a cursor handed out forever: 10 million transactions in one payout. */
const MAX_TRANSACTION_PAGES = 100_000;

interface ListAnswer {
  data: unknown[];
  has_more: boolean;
}

/** Stripe's payouts and their balance transactions, for the sweep's payouts step. */
export function createStripePayouts(deps: StripePayoutsDeps): PayoutSource {
  const send = accountCalls(deps);
  /** Every page of one listing, following `starting_after`; a 403 names the permission this listing needs. */
  async function* pages(
    account: string,
    what: ReadPermission,
    list: (after: string | undefined, options: Stripe.RequestOptions) => Promise<ListAnswer>,
    signal?: AbortSignal,
  ): AsyncGenerator<unknown[]> {
    let after: string | undefined;
    for (;;) {
      let page: ListAnswer;
      try {
        page = (await send(
          { account: accountIdOf(account), run: (options) => list(after, options) },
          signal ?? new AbortController().signal,
        )) as ListAnswer;
      } catch (error) {
        if (error instanceof MissingStripePermissionError)
          throw new MissingReadPermissionError(error.account, what, stripeSaid(error.message));
        if (error instanceof PageFetchError)
          throw new Error(`the ${what.noun} listing of ${account} could not be read: ${error.message}`, {
            cause: error,
          });
        throw error;
      }
      if (!Array.isArray(page.data) || typeof page.has_more !== 'boolean')
        throw new Error(`the ${what.noun} listing of ${account} answered something that is not a list`);
      yield page.data;
      if (!page.has_more) return;
      const last = idOf(objectOf(page.data.at(-1)).id);
      if (last === null || last === after)
        throw new Error(`the ${what.noun} listing of ${account} did not advance past ${after ?? 'its first page'}`);
      after = last;
    }
  }

  return {
    async *listPayouts(account: string, window: TimeWindow, signal?: AbortSignal) {
      const created = { gte: Math.floor(window.from.getTime() / 1000), lt: Math.ceil(window.to.getTime() / 1000) };
      const list = (after: string | undefined, options: Stripe.RequestOptions) =>
        deps.stripe.payouts.list(
          { created, limit: STRIPE_MAX_PAGE_SIZE, ...(after ? { starting_after: after } : {}) },
          options,
        ) as unknown as Promise<ListAnswer>;
      for await (const data of pages(account, PAYOUTS_READ, list, signal))
        yield data.map((raw) => normalizePayout(raw, accountIdOf(account)));
    },
    async *payoutTransactions(account: string, payoutId: string, signal?: AbortSignal) {
      // No spare-capacity check: with a burst of 1 the budget reads as backlogged whenever two
      // requests leave together, which would stop the splits that keep the listing at the limit.
      const pages = listTransactionWindows(transactionPages(deps, account, payoutId), {
        concurrency: Math.max(1, Math.floor(deps.concurrency ?? DEFAULT_CONCURRENCY)),
        limit: STRIPE_MAX_PAGE_SIZE,
        maxPages: MAX_TRANSACTION_PAGES,
        signal,
        what: `the balance transactions of ${payoutId} of ${account}`,
      });
      for await (const data of pages) yield data.map(normalizeBalanceTransaction);
    },
  };
}

/** One sub-window's page of a payout's balance transactions (no `created` bound where the window has none). */
function transactionPages(deps: StripePayoutsDeps, account: string, payoutId: string): FetchTransactionPage {
  const send = accountCalls({ ...deps, budget: deps.transactionsBudget ?? deps.budget ?? new RateBudget() });
  return async (task, signal) => {
    const created = {
      ...(task.gte > 0 ? { gte: task.gte } : {}),
      ...(Number.isFinite(task.lt) ? { lt: task.lt } : {}),
    };
    const params: Stripe.BalanceTransactionListParams = {
      payout: payoutId,
      limit: STRIPE_MAX_PAGE_SIZE,
      expand: ['data.source'],
      ...(Object.keys(created).length > 0 ? { created } : {}),
      ...(task.startingAfter ? { starting_after: task.startingAfter } : {}),
    };
    try {
      return (await send(
        { account: accountIdOf(account), run: (options) => deps.stripe.balanceTransactions.list(params, options) },
        signal,
      )) as ListAnswer;
    } catch (error) {
      if (error instanceof MissingStripePermissionError)
        throw new MissingReadPermissionError(error.account, BALANCE_READ, stripeSaid(error.message));
      if (error instanceof PageFetchError)
        throw new Error(`the balance transactions of ${payoutId} of ${account} could not be listed: ${error.message}`, {
          cause: error,
        });
      throw error;
    }
  };
}

/** Stripe's own words from a permission error's message. */
function stripeSaid(message: string): string {
  const at = message.indexOf('Stripe said: ');
  return at < 0 ? message : message.slice(at + 'Stripe said: '.length);
}
