import Stripe from 'stripe';
import { accountIdOf } from '../../domain/identity.js';
import type { MalformedCharge, NormalizedRefund, RefundPage, RefundSource } from '../../sweep/provider.js';
import type { TimeWindow } from '../../sweep/window.js';
import type { StripeListCounters } from './counters.js';
import { MissingReadPermissionError, MissingStripePermissionError, PageFetchError, REFUNDS_READ } from './errors.js';
import { STRIPE_MAX_PAGE_SIZE } from './limits.js';
import {
  CURRENCY,
  DEFAULT_METADATA_KEYS,
  IDEMPOTENCY_KEY,
  STRIPE_ID,
  TENANT_ID,
  type MetadataKeys,
} from './normalize.js';
import { accountCalls, type RetryDeps } from './page-source.js';
import type { RequestBudget } from './rate-budget.js';
import { describeAccount, describeRange } from './window.js';

/**
 * Refunds for the sweep (docs/judgement.md "Refunds the application makes"): listed by
 * window (`GET /v1/refunds` with `created` filters, a page of 100 at a time, following
 * `starting_after`), and read by id, under the process's rate budget and the lister's
 * retry rules. Each refund is read as the sweep judges it, or named with its problem.
 */

const STATUSES: ReadonlySet<string> = new Set(['pending', 'requires_action', 'succeeded', 'failed', 'canceled']);

export type NormalizeRefundResult = { ok: true; refund: NormalizedRefund } | { ok: false; malformed: MalformedCharge };

export function normalizeRefund(raw: unknown, account: string | null, keys: MetadataKeys): NormalizeRefundResult {
  const r = (typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
  const problems: string[] = [];
  const text = (field: string, shape: RegExp) => {
    const v = r[field];
    if (typeof v === 'string' && shape.test(v)) return v;
    problems.push(`${field} is missing or not readable`);
    return null;
  };
  const id = text('id', STRIPE_ID);
  const chargeRef = typeof r.charge === 'object' && r.charge !== null ? (r.charge as { id?: unknown }).id : r.charge;
  const chargeId = typeof chargeRef === 'string' && STRIPE_ID.test(chargeRef) ? chargeRef : null;
  if (chargeId === null) problems.push('charge is missing or not readable');
  const currency = text('currency', CURRENCY);
  const status = typeof r.status === 'string' && STATUSES.has(r.status) ? r.status : null;
  if (status === null) problems.push('status is missing or unknown');
  const whole = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (!whole(r.amount)) problems.push('amount is not a whole number of minor units');
  if (!whole(r.created)) problems.push('created is not a whole number of seconds');
  const metadata = (typeof r.metadata === 'object' && r.metadata !== null ? r.metadata : {}) as Record<string, unknown>;
  const attribution = (name: string, shape: RegExp) => {
    const v = metadata[name];
    if (v === undefined || v === null || v === '') return null;
    if (typeof v === 'string' && shape.test(v)) return v;
    problems.push(`metadata[${name}] is not readable`);
    return null;
  };
  const tenantId = attribution(keys.tenantId, TENANT_ID);
  const idempotencyKey = attribution(keys.idempotencyKey, IDEMPOTENCY_KEY);
  if (problems.length > 0 || id === null || chargeId === null || currency === null || status === null)
    return { ok: false, malformed: { id, account, problem: problems.join(', ') } };
  return {
    ok: true,
    refund: {
      id,
      account,
      chargeId,
      created: r.created as number,
      amount: r.amount as number,
      currency: currency.toLowerCase(),
      status: status as NormalizedRefund['status'],
      failureReason: typeof r.failure_reason === 'string' ? r.failure_reason : null,
      tenantId,
      idempotencyKey,
    },
  };
}

export interface StripeRefundsDeps {
  stripe: Stripe;
  budget?: RequestBudget;
  counters?: StripeListCounters;
  metadataKeys?: MetadataKeys;
  retry?: RetryDeps['policy'];
  sleep?: RetryDeps['sleep'];
}

/** Stripe's refunds: the window lister for the sweep, and the re-read by id for late changes. */
export function createStripeRefunds(deps: StripeRefundsDeps): {
  listRefunds: RefundSource;
  refundsById: (
    account: string,
    ids: readonly string[],
    signal?: AbortSignal,
    onMalformed?: (bad: MalformedCharge) => void,
  ) => Promise<NormalizedRefund[]>;
} {
  const keys = deps.metadataKeys ?? DEFAULT_METADATA_KEYS;
  const send = accountCalls(deps);
  const request = async <R>(account: string, run: (o: Stripe.RequestOptions) => Promise<R>, signal?: AbortSignal) => {
    try {
      return (await send({ account: accountIdOf(account), run }, signal ?? new AbortController().signal)) as R;
    } catch (error) {
      // The lister's 403 names the charges permission: this step needs Refunds read.
      if (error instanceof MissingStripePermissionError)
        throw new MissingReadPermissionError(error.account, REFUNDS_READ, stripeSaid(error.message));
      throw error;
    }
  };

  async function* listRefunds(account: string, window: TimeWindow, signal?: AbortSignal): AsyncIterable<RefundPage> {
    const created = { gte: Math.floor(window.from.getTime() / 1000), lt: Math.ceil(window.to.getTime() / 1000) };
    let after: string | undefined;
    for (;;) {
      const page = await request<Stripe.ApiList<Stripe.Refund>>(
        account,
        (options) =>
          deps.stripe.refunds.list(
            { created, limit: STRIPE_MAX_PAGE_SIZE, ...(after ? { starting_after: after } : {}) },
            options,
          ),
        signal,
      ).catch((error: unknown) => {
        // Retries spent: the line says whose refunds and which range, as a charges listing does.
        if (!(error instanceof PageFetchError)) throw error;
        throw new Error(
          `refunds of ${describeAccount(accountIdOf(account))} created in ${describeRange(created)} could not be listed: ${error.message}`,
          { cause: error },
        );
      });
      yield readPage(page.data, account);
      const last = page.data.at(-1);
      if (!page.has_more) return;
      if (!last || last.id === after)
        throw new Error(`the refunds listing of ${account} did not advance past ${after ?? 'its first page'}`);
      after = last.id;
    }
  }

  function readPage(data: readonly unknown[], account: string): RefundPage {
    const refunds: NormalizedRefund[] = [];
    const malformed: MalformedCharge[] = [];
    for (const raw of data) {
      const read = normalizeRefund(raw, accountIdOf(account), keys);
      if (read.ok) refunds.push(read.refund);
      else malformed.push(read.malformed);
    }
    return { refunds, malformed };
  }

  async function refundsById(
    account: string,
    ids: readonly string[],
    signal?: AbortSignal,
    onMalformed?: (bad: MalformedCharge) => void,
  ): Promise<NormalizedRefund[]> {
    const found: NormalizedRefund[] = [];
    for (const id of new Set(ids)) {
      const raw = await request<Stripe.Refund | null>(
        account,
        async (options) => {
          try {
            return await deps.stripe.refunds.retrieve(id, {}, options);
          } catch (error) {
            // Inside the retried call: a 404 is an answer (no such refund here), not a failure.
            const { statusCode, code } = (error ?? {}) as { statusCode?: unknown; code?: unknown };
            if (error instanceof Stripe.errors.StripeError && statusCode === 404 && code === 'resource_missing')
              return null;
            throw error;
          }
        },
        signal,
      );
      if (raw === null) continue;
      const read = normalizeRefund(raw, accountIdOf(account), keys);
      if (read.ok && read.refund.id !== id)
        throw new Error(`Stripe's answer for refund ${id} is another refund (${read.refund.id})`);
      if (read.ok) found.push(read.refund);
      else if (onMalformed) onMalformed({ ...read.malformed, id });
      else throw new Error(`Stripe's re-read of refund ${id} cannot be judged: ${read.malformed.problem}`);
    }
    return found;
  }

  return { listRefunds, refundsById };
}

/** Stripe's own words from a permission error's message. */
function stripeSaid(message: string): string {
  const at = message.indexOf('Stripe said: ');
  return at < 0 ? message : message.slice(at + 'Stripe said: '.length);
}
