import Stripe from 'stripe';
import type { Pool } from '../db/pool.js';
import { silentLogger, type Logger } from '../log.js';
import { completeClaim, releaseClaim, takeClaim, type HeldClaim, type PaymentEffect, type StoredResponse } from './claim-store.js';
import { ClaimCounters, type ChargeOutcome } from './counters.js';
import { downstreamKey, requestFingerprint } from './keys.js';
import { classifyStripeFailure, retryAfterSeconds, storedError, type StoredError } from './stripe-outcome.js';
import { validateChargeRequest, validateKey, validateTenantId, type ChargeRequest } from './validate.js';

export interface ClaimClientDeps {
  pool: Pool;
  stripe: Stripe;
  /** How long one attempt may hold the claim; longer than the Stripe call can take with its retries. */
  leaseMs: number;
  maxAmount: number;
  metadataKeys: { tenantId: string; idempotencyKey: string };
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

/** The answer of a successful charge, stored on the claim and replayed to retries. */
export interface ChargeResponseBody {
  object: 'charge_result';
  payment_intent: string;
  charge: string | null;
  status: string;
  amount: number;
  currency: string;
}

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

export interface ClaimClient {
  chargeOnce(input: ChargeOnceInput): Promise<ChargeResult>;
  readonly counters: ClaimCounters;
}

/**
 * The library payment code calls to charge a card exactly once per (tenant, key).
 * See README "The claim library" for the flow and its guarantees.
 */
export function createClaimClient(deps: ClaimClientDeps): ClaimClient {
  const clock = deps.clock ?? (() => new Date());
  const logger = deps.logger ?? silentLogger();
  const counters = deps.counters ?? new ClaimCounters();
  const limits = { maxAmount: deps.maxAmount, metadataKeys: deps.metadataKeys };

  async function chargeOnce(input: ChargeOnceInput): Promise<ChargeResult> {
    const tenantId = validateTenantId(input.tenantId);
    const key = validateKey(input.key);
    const request = validateChargeRequest(input.request, limits);
    const result = await claimAndDrive(tenantId, key, request);
    counters.record(result.outcome);
    return result;
  }

  async function claimAndDrive(tenantId: string, key: string, request: ChargeRequest): Promise<ChargeResult> {
    const now = clock();
    const claim = await takeClaim(deps.pool, {
      tenantId,
      key,
      fingerprint: requestFingerprint(request),
      downstreamKey: downstreamKey(tenantId, key),
      now,
      leaseMs: deps.leaseMs,
      accountId: request.account ?? null,
      amount: request.amount,
      currency: request.currency,
    });
    switch (claim.outcome) {
      case 'fingerprint_mismatch':
        return problem('fingerprint_mismatch', 422, 'this idempotency key was already used with a different request; use a new key');
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
          ...problem('in_progress', 409, 'a request with this idempotency key is in progress; retry after the Retry-After delay'),
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
        const held: HeldClaim = { tenantId, key, createdAt: claim.created_at, attempt: claim.attempt, downstreamKey: claim.downstream_key };
        return drive(held, request);
      }
    }
  }

  async function drive(claim: HeldClaim, request: ChargeRequest): Promise<ChargeResult> {
    await deps.hooks?.afterClaim?.(claim);
    let intent: Stripe.PaymentIntent;
    try {
      intent = await createPaymentIntent(claim, request);
    } catch (error) {
      await deps.hooks?.afterStripeCall?.(claim);
      return settleFailure(claim, request, error);
    }
    await deps.hooks?.afterStripeCall?.(claim);
    const charge = typeof intent.latest_charge === 'object' ? intent.latest_charge : null;
    const body: ChargeResponseBody = {
      object: 'charge_result',
      payment_intent: intent.id,
      charge: charge?.id ?? (typeof intent.latest_charge === 'string' ? intent.latest_charge : null),
      status: intent.status,
      amount: intent.amount,
      currency: intent.currency,
    };
    // No charge yet (e.g. requires_action for 3-D Secure): the answer is stored, there is no effect.
    const status = charge ? 200 : 202;
    const effect = charge ? effectOf(claim, request, intent, charge) : null;
    return finish(claim, { status, body, outcome: charge ? 'success' : 'pending_action' }, effect, 'charged');
  }

  async function createPaymentIntent(claim: HeldClaim, request: ChargeRequest): Promise<Stripe.PaymentIntent> {
    const params: Stripe.PaymentIntentCreateParams = {
      amount: request.amount,
      currency: request.currency,
      payment_method: request.paymentMethod,
      // Server-side confirmation: no redirect-based methods, so no return_url is needed.
      automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
      confirm: true,
      // This metadata is how the sweeper attributes a charge to its claim.
      metadata: {
        ...request.metadata,
        [deps.metadataKeys.tenantId]: claim.tenantId,
        [deps.metadataKeys.idempotencyKey]: claim.key,
      },
      expand: ['latest_charge'],
    };
    if (request.customer) params.customer = request.customer;
    if (request.description) params.description = request.description;
    const options: Stripe.RequestOptions = { idempotencyKey: claim.downstreamKey };
    if (request.account) options.stripeAccount = request.account;
    return deps.stripe.paymentIntents.create(params, options);
  }

  async function settleFailure(claim: HeldClaim, request: ChargeRequest, error: unknown): Promise<ChargeResult> {
    if (error instanceof Stripe.errors.StripeError && classifyStripeFailure(error) === 'deterministic') {
      const body = storedError(error);
      const status = error.statusCode ?? 402;
      const effect: PaymentEffect | null = error.charge
        ? {
            chargeId: error.charge,
            tenantId: claim.tenantId,
            idempotencyKey: claim.key,
            paymentIntentId: error.payment_intent?.id ?? null,
            accountId: request.account ?? null,
            amount: request.amount,
            currency: request.currency,
            status: 'failed',
            amountRefunded: 0,
            disputed: false,
            createdAt: clock(),
          }
        : null;
      const outcome = error instanceof Stripe.errors.StripeCardError ? 'declined' : 'rejected';
      logger.info({ tenant_id: claim.tenantId, code: error.code, outcome }, 'stripe rejected the charge; answer stored for replay');
      return finish(claim, { status, body, outcome }, effect, outcome);
    }
    logger.warn({ tenant_id: claim.tenantId, err: describeError(error) }, 'transient failure calling Stripe; releasing the claim');
    try {
      await releaseClaim(deps.pool, claim, clock());
    } catch (releaseError) {
      // The lease runs out by itself and the next attempt steals the claim.
      logger.error({ err: describeError(releaseError) }, 'could not release the claim; it frees itself when the lease expires');
    }
    return {
      ...problem('transient_failure', 503, 'the payment provider could not be reached; retry with the same idempotency key'),
      retryAfterSeconds: retryAfterSeconds(error),
    };
  }

  async function finish(
    claim: HeldClaim,
    response: StoredResponse,
    effect: PaymentEffect | null,
    outcome: ChargeOutcome,
  ): Promise<ChargeResult> {
    const completed = await completeClaim(deps.pool, claim, response, effect, clock());
    if (!completed) {
      // A newer attempt took the claim over; it owns the answer (the same charge,
      // because it sent the same downstream key). Ours is not recorded.
      logger.warn({ tenant_id: claim.tenantId, attempt: claim.attempt }, 'claim was taken over by a newer attempt; not recording');
      return { ...problem('superseded', 409, 'a newer attempt took this request over; retry to get its answer'), retryAfterSeconds: 1 };
    }
    return { outcome, status: response.status, body: response.body };
  }

  return { chargeOnce, counters };
}

function effectOf(claim: HeldClaim, request: ChargeRequest, intent: Stripe.PaymentIntent, charge: Stripe.Charge): PaymentEffect {
  return {
    chargeId: charge.id,
    tenantId: claim.tenantId,
    idempotencyKey: claim.key,
    paymentIntentId: intent.id,
    accountId: request.account ?? null,
    amount: charge.amount,
    currency: charge.currency,
    status: effectStatus(charge.status),
    amountRefunded: charge.amount_refunded,
    disputed: charge.disputed,
    createdAt: new Date(charge.created * 1000),
  };
}

function effectStatus(status: string): PaymentEffect['status'] {
  return status === 'succeeded' || status === 'failed' ? status : 'pending';
}

function problem(outcome: ChargeOutcome, status: number, message: string): ChargeResult {
  return { outcome, status, body: { error: { type: 'idempotency_error', code: outcome, message } } satisfies ProblemBody };
}

function describeError(error: unknown): { type?: string; message: string; code?: string } {
  const err = error as { type?: string; message?: string; code?: string };
  return { type: err?.type, message: err?.message ?? String(error), code: err?.code };
}
