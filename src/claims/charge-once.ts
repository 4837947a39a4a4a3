import type Stripe from 'stripe';
import type { Pool } from '../db/pool.js';
import { silentLogger, type Logger } from '../log.js';
import { stripeCreateCharge } from '../providers/stripe/create-charge.js';
import {
  chargeResultBody,
  refundResponse,
  completeClaim,
  releaseClaim,
  takeClaim,
  type ChargeResponseBody,
  type HeldClaim,
  type PaymentEffect,
  type RefundEffect,
  type StoredResponse,
  type TakeOutcome,
} from './claim-store.js';
import { ClaimCounters, type ChargeOutcome } from './counters.js';
import { ClaimOutcomeLog, type ClaimOutcome } from './outcomes.js';
import { overQuota } from './quota.js';
import { downstreamKey, requestFingerprint } from './keys.js';
import type { CreateCharge, CreateChargeResult, CreatedCharge, StoredError } from './create-charge.js';
import {
  validateChargeRequest,
  validateKey,
  validateRefundRequest,
  validateTenantId,
  type ChargeRequest,
  type RefundRequest,
} from './validate.js';
import type { CreateRefund, CreatedRefund } from './create-refund.js';
import { stripeCreateRefund } from '../providers/stripe/create-refund.js';

export interface ClaimClientDeps {
  pool: Pool;
  /** The Stripe client charges are made with (a PaymentIntent each), unless `createCharge` is given. */
  stripe?: Stripe;
  /**
   * How a charge is made (src/claims/create-charge.ts): another provider's, or a test's.
   * Default: a Stripe PaymentIntent through `stripe`.
   */
  createCharge?: CreateCharge;
  /** How a refund is made (src/claims/create-refund.ts); default: a Stripe refund through `stripe`. */
  createRefund?: CreateRefund;
  /** How long one attempt may hold the claim; longer than the Stripe call can take with its retries. */
  leaseMs: number;
  maxAmount: number;
  /** Metadata names stamped on every charge; `reference` defaults to `order_id`. */
  metadataKeys: { tenantId: string; idempotencyKey: string; reference?: string };
  /** Claims per minute one tenant may take (SWEEPER_CLAIM_QUOTA); unset or null: no quota. */
  quotaPerMinute?: number | null;
  /**
   * Where the takes' outcomes are counted per tenant and day (claim_outcomes); default: in
   * this pool, flushed every few seconds and on `close()`. `false`: not counted.
   */
  outcomes?: ClaimOutcomeLog | false;
  clock?: () => Date;
  logger?: Logger;
  counters?: ClaimCounters;
  /**
   * Fault injection for the traffic simulator and crash tests: a hook that throws
   * stops the attempt at that point exactly as a killed worker would (no release,
   * no completion). Never set in production.
   */
  hooks?: ClaimHooks;
}

export interface ClaimHooks {
  afterClaim?: (claim: HeldClaim) => void | Promise<void>;
  afterStripeCall?: (claim: HeldClaim) => void | Promise<void>;
}

export interface ChargeOnceInput {
  tenantId: string;
  /** The caller's idempotency key (e.g. the client's Idempotency-Key header). */
  key: string;
  request: ChargeRequest;
}

export type { ChargeResponseBody } from './claim-store.js';

export interface ProblemBody {
  error: { type: string; code: string; message: string };
}

export interface ChargeResult {
  outcome: ChargeOutcome;
  /** The HTTP status the payment API should answer with. */
  status: number;
  body: ChargeResponseBody | StoredError | ProblemBody | unknown;
  /** For 409 and 503: when the caller should retry, in seconds. */
  retryAfterSeconds?: number;
}

export interface RefundOnceInput {
  tenantId: string;
  /** The caller's idempotency key for this refund (not the charge's). */
  key: string;
  request: RefundRequest;
}

export interface ClaimClient {
  chargeOnce(input: ChargeOnceInput): Promise<ChargeResult>;
  /** Refunds a charge exactly once per (tenant, key): the same claim flow (docs/claim-library.md "Refunding once"). */
  refundOnce(input: RefundOnceInput): Promise<ChargeResult>;
  readonly counters: ClaimCounters;
  /** Adds the outcomes counted so far to claim_outcomes (also done every few seconds). */
  flushOutcomes(): Promise<void>;
  /** Flushes the outcomes; call before the pool is closed. */
  close(): Promise<void>;
}

/**
 * The library payment code calls to charge a card exactly once per (tenant, key).
 * See docs/claim-library.md "Charging once" for the flow and its guarantees.
 */
export function createClaimClient(deps: ClaimClientDeps): ClaimClient {
  const clock = deps.clock ?? (() => new Date());
  const logger = deps.logger ?? silentLogger();
  const counters = deps.counters ?? new ClaimCounters();
  const limits = { maxAmount: deps.maxAmount, metadataKeys: deps.metadataKeys };
  const createCharge = chargeFunctionOf(deps);
  const createRefund = refundFunctionOf(deps);
  const referenceKey = deps.metadataKeys.reference ?? 'order_id';
  const outcomes = deps.outcomes === false ? null : (deps.outcomes ?? new ClaimOutcomeLog(deps.pool, logger));

  async function chargeOnce(input: ChargeOnceInput): Promise<ChargeResult> {
    const tenantId = validateTenantId(input.tenantId);
    const key = validateKey(input.key);
    const request = validateChargeRequest(input.request, limits);
    const spec: ClaimSpec = {
      fingerprint: requestFingerprint(request),
      accountId: request.account ?? null,
      amount: request.amount,
      currency: request.currency,
      reference: request.reference ?? null,
      operation: null,
      target: null,
    };
    const result = await claimAndDrive(tenantId, key, spec, (held) => drive(held, request));
    counters.record(result.outcome);
    return result;
  }

  async function refundOnce(input: RefundOnceInput): Promise<ChargeResult> {
    const tenantId = validateTenantId(input.tenantId);
    const key = validateKey(input.key);
    const request = validateRefundRequest(input.request, limits);
    const spec: ClaimSpec = {
      // A refund and a charge never share a fingerprint, even with the same fields.
      fingerprint: requestFingerprint({ ...request, operation: 'refund' }),
      accountId: request.account ?? null,
      amount: request.amount ?? null,
      currency: null,
      reference: null,
      operation: 'refund',
      target: request.chargeId,
    };
    const result = await claimAndDrive(tenantId, key, spec, (held) => driveRefund(held, request));
    counters.record(result.outcome);
    return result;
  }

  async function claimAndDrive(
    tenantId: string,
    key: string,
    spec: ClaimSpec,
    driveHeld: (held: HeldClaim) => Promise<ChargeResult>,
  ): Promise<ChargeResult> {
    const now = clock();
    if (deps.quotaPerMinute) {
      const waitSeconds = await overQuota(deps.pool, tenantId, now, deps.quotaPerMinute);
      if (waitSeconds !== null) {
        outcomes?.record(tenantId, 'quota_exceeded', now);
        return {
          ...problem(
            'quota_exceeded',
            429,
            `this tenant has taken ${deps.quotaPerMinute} claims this minute (the quota); retry after the Retry-After delay`,
          ),
          retryAfterSeconds: waitSeconds,
        };
      }
    }
    const claim = await takeClaim(deps.pool, {
      tenantId,
      key,
      downstreamKey: downstreamKey(tenantId, key),
      now,
      leaseMs: deps.leaseMs,
      ...spec,
    });
    outcomes?.record(tenantId, TAKE_OUTCOMES[claim.outcome], now);
    switch (claim.outcome) {
      case 'fingerprint_mismatch':
        return problem(
          'fingerprint_mismatch',
          422,
          'this idempotency key was already used with a different request; use a new key',
        );
      case 'completed':
        return { outcome: 'replayed', status: claim.response_status ?? 200, body: claim.response_body };
      case 'retry_window_expired':
        // Stripe has forgotten the downstream key: re-driving could charge twice.
        return problem(
          'retry_window_expired',
          409,
          "this key's first attempt is older than Stripe's 24 h idempotency window and never completed; " +
            'it cannot be retried safely: check the payment status, then use a new key',
        );
      case 'in_flight': {
        const waitMs = (claim.locked_until?.getTime() ?? now.getTime()) - now.getTime();
        return {
          ...problem(
            'in_progress',
            409,
            'a request with this idempotency key is in progress; retry after the Retry-After delay',
          ),
          retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
        };
      }
      case 'stolen':
      case 'retaken':
      case 'claimed': {
        if (claim.outcome === 'stolen') {
          counters.steals += 1;
          logger.warn({ tenant_id: tenantId, attempt: claim.attempt }, 'took over a claim whose lease expired');
        }
        const held: HeldClaim = {
          tenantId,
          key,
          createdAt: claim.created_at,
          attempt: claim.attempt,
          downstreamKey: claim.downstream_key,
        };
        return driveHeld(held);
      }
    }
  }

  async function driveRefund(claim: HeldClaim, request: RefundRequest): Promise<ChargeResult> {
    await deps.hooks?.afterClaim?.(claim);
    const result = await createRefund({
      request,
      idempotencyKey: claim.downstreamKey,
      // How the sweep attributes a refund to its claim, as for charges.
      metadata: {
        ...request.metadata,
        [deps.metadataKeys.tenantId]: claim.tenantId,
        [deps.metadataKeys.idempotencyKey]: claim.key,
      },
    });
    await deps.hooks?.afterStripeCall?.(claim);
    if (result.kind === 'transient') return release(claim, result.error, result.retryAfterSeconds);
    if (result.kind === 'refused') {
      const { body, status, outcome } = result;
      return finish(claim, { status, body, outcome }, null, outcome);
    }
    const { refund } = result;
    return finish(claim, refundResponse(refund), null, 'refunded', refundRowOf(claim, request, refund));
  }

  async function drive(claim: HeldClaim, request: ChargeRequest): Promise<ChargeResult> {
    await deps.hooks?.afterClaim?.(claim);
    const result = await createCharge({
      request,
      idempotencyKey: claim.downstreamKey,
      // This metadata is how the sweeper attributes a charge to its claim.
      metadata: {
        ...request.metadata,
        [deps.metadataKeys.tenantId]: claim.tenantId,
        [deps.metadataKeys.idempotencyKey]: claim.key,
        ...(request.reference === undefined ? {} : { [referenceKey]: request.reference }),
      },
    });
    await deps.hooks?.afterStripeCall?.(claim);
    if (result.kind !== 'created') return settleFailure(claim, request, result);
    const { paymentIntent: intent, charge } = result;
    const body = chargeResultBody({
      paymentIntent: intent.id,
      charge: result.chargeId,
      status: intent.status,
      amount: intent.amount,
      currency: intent.currency,
    });
    // No charge yet (e.g. requires_action for 3-D Secure): the answer is stored, there is no effect.
    const status = charge ? 200 : 202;
    const effect = charge ? effectOf(claim, request, intent.id, charge) : null;
    return finish(claim, { status, body, outcome: charge ? 'success' : 'pending_action' }, effect, 'charged');
  }

  async function settleFailure(
    claim: HeldClaim,
    request: ChargeRequest,
    failure: Exclude<CreateChargeResult, { kind: 'created' }>,
  ): Promise<ChargeResult> {
    if (failure.kind === 'refused') {
      const { body, status, outcome } = failure;
      const effect: PaymentEffect | null = failure.chargeId
        ? {
            chargeId: failure.chargeId,
            tenantId: claim.tenantId,
            idempotencyKey: claim.key,
            paymentIntentId: failure.paymentIntentId,
            accountId: request.account ?? null,
            amount: request.amount,
            currency: request.currency,
            status: 'failed',
            amountRefunded: 0,
            disputed: false,
            createdAt: clock(),
            reference: request.reference ?? null,
          }
        : null;
      logger.info(
        { tenant_id: claim.tenantId, code: failure.code, outcome },
        'stripe rejected the charge; answer stored for replay',
      );
      return finish(claim, { status, body, outcome }, effect, outcome);
    }
    return release(claim, failure.error, failure.retryAfterSeconds);
  }

  /** A transient failure: the claim goes back so the caller's retry can run (same downstream key). */
  async function release(claim: HeldClaim, error: unknown, retryAfterSeconds: number): Promise<ChargeResult> {
    logger.warn(
      { tenant_id: claim.tenantId, err: describeError(error) },
      'transient failure calling Stripe; releasing the claim',
    );
    try {
      await releaseClaim(deps.pool, claim, clock());
    } catch (releaseError) {
      // The lease runs out by itself and the next attempt steals the claim.
      logger.error(
        { err: describeError(releaseError) },
        'could not release the claim; it frees itself when the lease expires',
      );
    }
    return {
      ...problem(
        'transient_failure',
        503,
        'the payment provider could not be reached; retry with the same idempotency key',
      ),
      retryAfterSeconds,
    };
  }

  async function finish(
    claim: HeldClaim,
    response: StoredResponse,
    effect: PaymentEffect | null,
    outcome: ChargeOutcome,
    refund: RefundEffect | null = null,
  ): Promise<ChargeResult> {
    const completed = await completeClaim(deps.pool, claim, response, effect, clock(), refund);
    if (!completed) {
      // A newer attempt took the claim over; it owns the answer (the same charge,
      // because it sent the same downstream key). Ours is not recorded.
      logger.warn(
        { tenant_id: claim.tenantId, attempt: claim.attempt },
        'claim was taken over by a newer attempt; not recording',
      );
      return {
        ...problem('superseded', 409, 'a newer attempt took this request over; retry to get its answer'),
        retryAfterSeconds: 1,
      };
    }
    return { outcome, status: response.status, body: response.body };
  }

  return {
    chargeOnce,
    refundOnce,
    counters,
    flushOutcomes: async () => outcomes?.flush(),
    close: async () => outcomes?.flush(),
  };
}

/**
 * How each take counts (claim_outcomes): a new claim is `created`; a key seen again and its
 * claim found is `replayed` (a stored answer replayed, a released claim re-driven, a retry
 * past Stripe's window refused): the sign of keys stable across a caller's attempts.
 */
const TAKE_OUTCOMES: Record<TakeOutcome, ClaimOutcome> = {
  claimed: 'created',
  completed: 'replayed',
  retaken: 'replayed',
  retry_window_expired: 'replayed',
  in_flight: 'in_progress',
  fingerprint_mismatch: 'fingerprint_mismatch',
  stolen: 'stolen',
};

/** What a take writes besides the key: the request the claim stands for. */
interface ClaimSpec {
  fingerprint: string;
  accountId: string | null;
  amount: number | null;
  currency: string | null;
  reference: string | null;
  operation: 'refund' | null;
  target: string | null;
}

/** The answer a refund's claim stores and replays: Stripe's Refund object, in the fields the sweep reads. */
function refundRowOf(claim: HeldClaim, request: RefundRequest, refund: CreatedRefund): RefundEffect {
  return {
    refundId: refund.id,
    chargeId: refund.chargeId,
    tenantId: claim.tenantId,
    idempotencyKey: claim.key,
    accountId: request.account ?? null,
    amount: refund.amount,
    currency: refund.currency,
    status: refund.status,
    createdAt: new Date(refund.created * 1000),
  };
}

function refundFunctionOf(deps: ClaimClientDeps): CreateRefund {
  if (deps.createRefund) return deps.createRefund;
  if (deps.stripe) return stripeCreateRefund(deps.stripe);
  // Only refundOnce needs it: a client made for charges alone says so when it is called.
  return () => {
    throw new TypeError('refundOnce needs a Stripe client (stripe) or a createRefund function');
  };
}

function chargeFunctionOf(deps: ClaimClientDeps): CreateCharge {
  if (deps.createCharge) return deps.createCharge;
  if (deps.stripe) return stripeCreateCharge(deps.stripe);
  throw new TypeError('createClaimClient needs a Stripe client (stripe) or a createCharge function');
}

function effectOf(
  claim: HeldClaim,
  request: ChargeRequest,
  paymentIntentId: string,
  charge: CreatedCharge,
): PaymentEffect {
  return {
    chargeId: charge.id,
    tenantId: claim.tenantId,
    idempotencyKey: claim.key,
    paymentIntentId,
    accountId: request.account ?? null,
    amount: charge.amount,
    currency: charge.currency,
    status: effectStatus(charge.status),
    amountRefunded: charge.amountRefunded,
    disputed: charge.disputed,
    createdAt: new Date(charge.created * 1000),
    reference: request.reference ?? null,
  };
}

function effectStatus(status: string): PaymentEffect['status'] {
  return status === 'succeeded' || status === 'failed' ? status : 'pending';
}

function problem(outcome: ChargeOutcome, status: number, message: string): ChargeResult {
  return {
    outcome,
    status,
    body: { error: { type: 'idempotency_error', code: outcome, message } } satisfies ProblemBody,
  };
}

function describeError(error: unknown): { type?: string; message: string; code?: string } {
  const err = error as { type?: string; message?: string; code?: string } | null | undefined;
  return { type: err?.type, message: err?.message ?? String(error), code: err?.code };
}
