import { emitChargeCreated, emitIntentCreated, openDispute, openDisputeOf } from './changes.js';
import type { ChargeRecord, ChargeStatus } from './charge-store.js';
import { createConnectControls, type ConnectControls } from './connect-controls.js';
import type { DoubleClock } from './clock.js';
import { toMs, type EventTiming } from './emit.js';
import { createEventControls, type EventControls } from './event-controls.js';
import type { RequestCounters } from './counters.js';
import type { FaultConfig, FaultInjector } from './faults.js';
import type { IdempotencyStore } from './idempotency.js';
import { createMoneyControls, type MoneyControls } from './money-controls.js';
import { rateLimitOf, type EndpointRateLimiter, type RateLimit } from './rate-limit.js';
import type { PaymentIntentRecord } from './records.js';
import { refundCharge } from './refund-changes.js';
import {
  renderCharge,
  renderPaymentIntent,
  renderRefund,
  type ChargeJson,
  type PaymentIntentJson,
  type RefundJson,
} from './render.js';
import { seedCharges, type SeedOptions, type SeedResult } from './seed.js';
import { importCharges, type ChargeImport, type ImportOptions, type ImportResult } from './import-charges.js';
import type { DoubleState } from './state.js';

/** A charge "made outside the library": by the dashboard, another system, a person. */
export interface CreateChargeOptions {
  amount?: number;
  currency?: string;
  status?: ChargeStatus;
  /** A Date or unix seconds; default the double's clock. */
  created?: Date | number;
  /** Omit for a charge with no metadata (an unattributable charge). */
  metadata?: Record<string, string>;
  captured?: boolean;
  amountRefunded?: number;
  disputed?: boolean;
  description?: string;
  customer?: string;
  paymentMethod?: string;
  /** Also create the PaymentIntent it belongs to, as every charge made today has. Default true. */
  withPaymentIntent?: boolean;
  id?: string;
  /** Fields left out of the JSON, to see how a client copes with a malformed charge. */
  omitFields?: string[];
  /**
   * Its creation events (`charge.succeeded`/`.failed`/`.pending`, and the intent's),
   * dated at `created` by default. `false`: none, e.g. history seeded before an events
   * cursor. Default: emitted.
   */
  events?: EventTiming | boolean;
  /** A Date or unix seconds on the double's clock: until then the charge is retrievable but not in `GET /v1/charges` (listed late). */
  listedAt?: Date | number;
}

export interface TimeWindow {
  from: Date | number;
  to: Date | number;
}

/** Plain methods (not HTTP) with which tests and benchmarks steer and inspect the double. */
export interface DoubleControls extends EventControls, MoneyControls, ConnectControls {
  /** `clock.set(date)` stops time there; `clock.advance(ms)`; `clock.useRealTime()`. */
  readonly clock: DoubleClock;
  /**
   * Requests per endpoint (`counters.get('GET /v1/charges')`) and statuses answered, per
   * account too (`counters.account('acct_…')`), and the limiters' 429s (`counters.rateLimited()`).
   */
  readonly counters: RequestCounters;
  /** Faults injected so far, by kind. */
  readonly injectedFaults: Readonly<Record<'429' | '500' | 'reset', number>>;
  /** Delay before every answer (or only `endpoint`'s), in real milliseconds. */
  setLatency(ms: number, endpoint?: string): void;
  /** Requests per second allowed on `endpoint` (e.g. 'GET /v1/charges') over all accounts; null removes the limit. */
  setRateLimit(endpoint: string, limit: RateLimit | number | null): void;
  setFaults(config: FaultConfig | null): void;
  setIdempotencyTtl(ms: number): void;
  /** Bulk insert for benchmarks: charges spread uniformly over `[from, to)`. */
  seedCharges(account: string | null, n: number, options: SeedOptions): SeedResult;
  /** Bulk insert of given charges (API field names, plus `account`): what `--charges FILE` and `POST /_double/charges` do. */
  importCharges(charges: readonly ChargeImport[], options?: ImportOptions): ImportResult;
  createCharge(account: string | null, options?: CreateChargeOptions): ChargeJson;
  /** Refunds all or `amount` of what is left: `charge.refunded` and `refund.created`. */
  refund(chargeId: string, amount?: number, events?: EventTiming): ChargeJson;
  /** Opens a dispute unless one is open (see openDispute/closeDispute for the lifecycle). */
  dispute(chargeId: string, events?: EventTiming): ChargeJson;
  charge(id: string): ChargeJson | undefined;
  /** Charges of an account in list order, optionally only `from <= created < to`. */
  listCharges(account: string | null, window?: TimeWindow): ChargeJson[];
  chargeIds(account: string | null, window?: TimeWindow): string[];
  chargeCount(account?: string | null): number;
  paymentIntent(id: string): PaymentIntentJson | undefined;
  paymentIntents(account: string | null): PaymentIntentJson[];
  refunds(chargeId?: string): RefundJson[];
  accounts(): Array<string | null>;
  /** Forgets every object (accounts, balance transactions, payouts too), idempotency key, fault, limit, latency, count, fee, FX. */
  reset(): void;
}

interface Parts {
  state: DoubleState;
  clock: DoubleClock;
  counters: RequestCounters;
  limiter: EndpointRateLimiter;
  faults: FaultInjector;
  latency: Map<string, number>;
  idempotency: IdempotencyStore;
}

export function createControls({
  state,
  clock,
  counters,
  limiter,
  faults,
  latency,
  idempotency,
}: Parts): DoubleControls {
  const chargeOrThrow = (id: string): ChargeRecord => {
    const charge = state.charges.get(id);
    if (!charge) throw new Error(`the double has no charge ${id}`);
    return charge;
  };
  const inWindow = (account: string | null, window?: TimeWindow): readonly ChargeRecord[] => {
    const all = state.charges.all(account);
    if (!window) return all;
    const gte = Math.ceil(seconds(window.from));
    const lt = Math.ceil(seconds(window.to));
    return all.filter((c) => c.created >= gte && c.created < lt);
  };

  return {
    ...createEventControls(state),
    ...createMoneyControls(state),
    ...createConnectControls(state, limiter),
    clock,
    counters,
    get injectedFaults() {
      return { ...faults.injected };
    },
    setLatency(ms, endpoint = '*') {
      if (ms > 0) latency.set(endpoint, ms);
      else latency.delete(endpoint);
    },
    setRateLimit(endpoint, limit) {
      limiter.set(endpoint, rateLimitOf(limit));
    },
    setFaults(config) {
      faults.set(config);
    },
    setIdempotencyTtl(ms) {
      idempotency.ttlMs = ms;
    },
    seedCharges(account, n, options) {
      return seedCharges(state, account, n, options);
    },
    importCharges(charges, options) {
      return importCharges(state, charges, options);
    },
    createCharge(account, options = {}) {
      const status = options.status ?? 'succeeded';
      const created = options.created === undefined ? clock.nowSeconds() : Math.floor(seconds(options.created));
      const amount = options.amount ?? 1000;
      const currency = (options.currency ?? 'usd').toLowerCase();
      const metadata = { ...(options.metadata ?? {}) };
      let intent: PaymentIntentRecord | undefined;
      if (options.withPaymentIntent ?? true) {
        intent = {
          id: state.newId('pi'),
          account,
          created,
          amount,
          currency,
          status:
            status === 'succeeded'
              ? options.captured === false
                ? 'requires_capture'
                : 'succeeded'
              : 'requires_payment_method',
          paymentMethod: options.paymentMethod ?? 'pm_card_visa',
          customer: options.customer ?? null,
          description: options.description ?? null,
          metadata,
          captureMethod: 'automatic_async',
          automaticPaymentMethods: null,
          latestCharge: null,
          lastPaymentError: null,
          clientSecret: '',
        };
        intent.clientSecret = `${intent.id}_secret_x`;
        state.intents.set(intent.id, intent);
      }
      const events: EventTiming =
        options.events === false ? { emit: false } : options.events === true ? {} : (options.events ?? {});
      const listedAtMs = options.listedAt === undefined ? undefined : toMs(options.listedAt);
      const failed = status === 'failed';
      const charge = state.addCharge(
        {
          account,
          amount,
          currency,
          status,
          created,
          metadata,
          ...(options.id === undefined ? {} : { id: options.id }),
          ...(options.captured === undefined ? {} : { captured: options.captured }),
          amountRefunded: options.amountRefunded ?? 0,
          disputed: options.disputed ?? false,
          description: options.description ?? null,
          customer: options.customer ?? null,
          paymentMethod: options.paymentMethod ?? 'pm_card_visa',
          paymentIntent: intent?.id ?? null,
          failureCode: failed ? 'card_declined' : null,
          failureMessage: failed ? 'Your card was declined.' : null,
          declineCode: failed ? 'generic_decline' : null,
          ...(options.omitFields ? { omitFields: options.omitFields } : {}),
        },
        listedAtMs,
      );
      if (intent) {
        intent.latestCharge = charge.id;
        emitIntentCreated(state, intent, events);
      }
      emitChargeCreated(state, charge, intent, events);
      return renderCharge(charge);
    },
    refund(chargeId, amount, events = {}) {
      const charge = chargeOrThrow(chargeId);
      refundCharge(state, charge, amount === undefined ? {} : { amount }, events);
      return renderCharge(charge);
    },
    dispute(chargeId, events = {}) {
      const charge = chargeOrThrow(chargeId);
      if (!openDisputeOf(state, chargeId)) openDispute(state, charge, {}, events);
      return renderCharge(charge);
    },
    charge(id) {
      const charge = state.charges.get(id);
      return charge ? renderCharge(charge) : undefined;
    },
    listCharges(account, window) {
      return inWindow(account, window).map(renderCharge);
    },
    chargeIds(account, window) {
      return inWindow(account, window).map((c) => c.id);
    },
    chargeCount(account) {
      return state.charges.size(account);
    },
    paymentIntent(id) {
      const intent = state.intents.get(id);
      return intent ? renderPaymentIntent(intent) : undefined;
    },
    paymentIntents(account) {
      return [...state.intents.values()].filter((i) => i.account === account).map((i) => renderPaymentIntent(i));
    },
    refunds(chargeId) {
      return [...state.refunds.values()]
        .filter((r) => chargeId === undefined || r.charge === chargeId)
        .map(renderRefund);
    },
    accounts() {
      return state.charges.accounts();
    },
    reset() {
      state.reset();
      idempotency.clear();
      limiter.clear();
      faults.set(null);
      latency.clear();
      counters.reset();
    },
  };
}

function seconds(instant: Date | number): number {
  return instant instanceof Date ? instant.getTime() / 1000 : instant;
}
