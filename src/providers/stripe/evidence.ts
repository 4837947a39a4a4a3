import Stripe from 'stripe';
import { accountIdOf } from '../../domain/identity.js';
import { STRIPE_MAX_PAGE_SIZE } from './limits.js';
import type { RefundFact, RefundRequest, ProviderEvidence } from '../../sweep/provider.js';
import { StripeListCounters } from './counters.js';
import { DEFAULT_METADATA_KEYS, normalizeCharge, type MetadataKeys } from './normalize.js';
import { withRetries, type RetryDeps } from './page-source.js';
import { RateBudget, type RequestBudget } from './rate-budget.js';
import { createChargeRetriever } from './retrieve-charges.js';
import type { NormalizedCharge } from '../../sweep/provider.js';
import { ExitCode } from '../../exit-codes.js';

/**
 * Stripe's own word for the sweep (ProviderEvidence, src/sweep/provider.ts), through the real
 * SDK, under the process's shared rate budget and the lister's retry rules:
 * `GET /v1/charges/:id` (the events reader's retriever), `GET /v1/charges/search` by
 * metadata, `GET /v1/refunds?charge=`
 * and `POST /v1/refunds` (idempotent by its key, so retrying it is safe).
 */

export interface StripeEvidenceDeps {
  stripe: Stripe;
  /** Searches, refund lists and refunds. */
  budget?: RequestBudget;
  /** Re-reads by id (`GET /v1/charges/:id`); default `budget`. */
  retrieveBudget?: RequestBudget;
  counters?: StripeListCounters;
  metadataKeys?: MetadataKeys;
  retry?: RetryDeps['policy'];
  sleep?: RetryDeps['sleep'];
  /** Unix seconds now, for the normaliser's range checks. */
  nowSeconds?: () => number;
}

/** A re-read answered, but the charge cannot be judged: fail closed rather than decide on it. */
export class UnreadableEvidenceError extends Error {
  override readonly name = 'UnreadableEvidenceError';
  readonly exitCode = ExitCode.failed;
}

/** Pages of a search followed at most this far: a key names a handful of charges, not thousands. */
const MAX_SEARCH_PAGES = 10;

type Call<R> = { account: string | null; run: (options: Stripe.RequestOptions) => Promise<R> };

export function createStripeEvidence(deps: StripeEvidenceDeps): ProviderEvidence {
  const c = evidenceClient(deps);
  return {
    chargesById: (account, ids, signal, onMalformed) => chargesById(c, account, ids, signal, onMalformed),
    chargesNaming: (account, tenantId, key, signal, onMalformed) =>
      chargesNaming(c, account, { tenantId, key }, signal, onMalformed),
    refundsOf: (account, chargeId, signal) => refundsOf(c, account, chargeId, signal),
    refund: (account, request, signal) => refund(c, account, request, signal),
  };
}

/** What every request for Stripe's word shares: the SDK, the budget and retries, the normaliser. */
interface EvidenceClient {
  stripe: Stripe;
  keys: MetadataKeys;
  retriever: ReturnType<typeof createChargeRetriever>;
  send: <R>(account: string, run: Call<R>['run'], signal?: AbortSignal) => Promise<R>;
  /** A charge as the sweep reads it, or what cannot be read in it. */
  read: (raw: unknown, account: string) => ReturnType<typeof normalizeCharge>;
}

type OnMalformed = Parameters<ProviderEvidence['chargesById']>[3];

function evidenceClient(deps: StripeEvidenceDeps): EvidenceClient {
  const keys = deps.metadataKeys ?? DEFAULT_METADATA_KEYS;
  const nowSeconds = deps.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  const budget = deps.budget ?? new RateBudget();
  const counters = deps.counters ?? new StripeListCounters();
  const retrying = withRetries(
    <R>(call: Call<R>) => {
      const options: Stripe.RequestOptions = { maxNetworkRetries: 0 };
      if (call.account) options.stripeAccount = call.account;
      return call.run(options);
    },
    { budget, counters, policy: deps.retry, sleep: deps.sleep },
  );
  return {
    stripe: deps.stripe,
    keys,
    // By id: the events reader's retriever, a few at a time under the same budget.
    retriever: createChargeRetriever({
      stripe: deps.stripe,
      budget: deps.retrieveBudget ?? budget,
      counters,
      policy: deps.retry,
      sleep: deps.sleep,
    }),
    send: <R>(account: string, run: Call<R>['run'], signal?: AbortSignal): Promise<R> =>
      retrying({ account: accountIdOf(account), run }, signal ?? new AbortController().signal) as Promise<R>,
    read: (raw, account) => normalizeCharge(raw, accountIdOf(account), keys, nowSeconds()),
  };
}

/** Without an `onMalformed` to tell, an unreadable answer fails closed rather than be decided on. */
function unreadable(result: Extract<ReturnType<typeof normalizeCharge>, { ok: false }>): never {
  throw new UnreadableEvidenceError(
    `Stripe's re-read of charge ${result.malformed.id ?? '(no id)'} cannot be judged: ${result.malformed.problem}`,
  );
}

async function chargesById(
  c: EvidenceClient,
  account: string,
  ids: readonly string[],
  signal: AbortSignal | undefined,
  onMalformed: OnMalformed,
): Promise<NormalizedCharge[]> {
  const answers = await c.retriever.retrieveCharges(accountIdOf(account), ids, signal ? { signal } : {});
  const found: NormalizedCharge[] = [];
  for (const a of answers) {
    if (!a.found) continue;
    const result = c.read(a.raw, account);
    if (result.ok) found.push(result.charge);
    // Asked by id: an answer without one is still that charge, and the finding can name it.
    else if (onMalformed) onMalformed({ ...result.malformed, id: result.malformed.id ?? a.id });
    else unreadable(result);
  }
  return found;
}

async function chargesNaming(
  c: EvidenceClient,
  account: string,
  { tenantId, key }: { tenantId: string; key: string },
  signal: AbortSignal | undefined,
  onMalformed: OnMalformed,
): Promise<NormalizedCharge[]> {
  const { keys } = c;
  const query = `metadata['${quote(keys.tenantId)}']:'${quote(tenantId)}' AND metadata['${quote(keys.idempotencyKey)}']:'${quote(key)}'`;
  const found: NormalizedCharge[] = [];
  let page: string | undefined;
  for (let n = 0; n < MAX_SEARCH_PAGES; n += 1) {
    const result = await c.send(
      account,
      (options) => c.stripe.charges.search({ query, limit: STRIPE_MAX_PAGE_SIZE, ...(page ? { page } : {}) }, options),
      signal,
    );
    for (const raw of result.data) {
      const read = c.read(raw, account);
      if (read.ok) found.push(read.charge);
      else if (onMalformed) onMalformed(read.malformed);
      else unreadable(read);
    }
    if (!result.has_more || !result.next_page) return found;
    page = result.next_page;
  }
  throw new UnreadableEvidenceError(
    `Stripe's search for ${tenantId}/${key} did not end after ${MAX_SEARCH_PAGES} pages`,
  );
}

async function refundsOf(
  c: EvidenceClient,
  account: string,
  chargeId: string,
  signal: AbortSignal | undefined,
): Promise<RefundFact[]> {
  const refunds: RefundFact[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await c.send(
      account,
      (options) =>
        c.stripe.refunds.list(
          { charge: chargeId, limit: STRIPE_MAX_PAGE_SIZE, ...(after ? { starting_after: after } : {}) },
          options,
        ),
      signal,
    );
    refunds.push(...page.data.map(refundFact));
    const last = page.data.at(-1);
    if (!page.has_more || !last || last.id === after) return refunds;
    after = last.id;
  }
}

async function refund(
  c: EvidenceClient,
  account: string,
  request: RefundRequest,
  signal: AbortSignal | undefined,
): Promise<RefundFact> {
  const made = await c.send(
    account,
    (options) =>
      c.stripe.refunds.create(
        { charge: request.chargeId, amount: request.amount, metadata: request.metadata },
        { ...options, idempotencyKey: request.idempotencyKey },
      ),
    signal,
  );
  return refundFact(made);
}

function refundFact(r: Stripe.Refund): RefundFact {
  return {
    id: r.id,
    chargeId: typeof r.charge === 'string' ? r.charge : (r.charge?.id ?? ''),
    amount: r.amount,
    status: r.status ?? 'succeeded',
    metadata: Object.fromEntries(
      Object.entries(r.metadata ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'),
    ),
  };
}

/** Stripe's search language: a quote or backslash inside a quoted value is escaped with a backslash. */
function quote(value: string): string {
  return value.replace(/[\\']/g, (c) => `\\${c}`);
}
