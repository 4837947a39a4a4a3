import type { ChargeRequest } from './validate.js';

/**
 * How the claim library makes a charge: the one call it sends to the payment provider,
 * behind a function the caller can pass in (`ClaimClientDeps.createCharge`). Stripe's is
 * src/providers/stripe/create-charge.ts (a PaymentIntent, created and confirmed).
 * It never throws for the provider's answer: a refusal or a failure is a result.
 */
export type CreateCharge = (input: CreateChargeInput) => Promise<CreateChargeResult>;

export interface CreateChargeInput {
  request: ChargeRequest;
  /** The provider's idempotency key: the same for every attempt at one claim. */
  idempotencyKey: string;
  /** The request's metadata with the claim attribution added: how the sweep attributes the charge to its claim. */
  metadata: Record<string, string>;
}

/** The charge a successful call made, as the payment row records it. */
export interface CreatedCharge {
  id: string;
  amount: number;
  currency: string;
  status: string;
  amountRefunded: number;
  disputed: boolean;
  /** Unix seconds. */
  created: number;
}

/** An answer the provider gave and that is replayed to every retry. */
export interface StoredError {
  error: {
    type: string;
    code?: string;
    decline_code?: string;
    message: string;
    charge?: string;
    payment_intent?: string;
  };
}

export type CreateChargeResult =
  /** The payment was created: with its charge (`charge`), or none yet (e.g. 3-D Secure pending). */
  | {
      kind: 'created';
      paymentIntent: { id: string; status: string; amount: number; currency: string };
      /** The charge's id, even when the provider did not return the charge itself. */
      chargeId: string | null;
      charge: CreatedCharge | null;
    }
  /** The provider decided (a decline, an invalid request): stored and replayed without calling it again. */
  | {
      kind: 'refused';
      outcome: 'declined' | 'rejected';
      /** The HTTP status to answer with. */
      status: number;
      body: StoredError;
      code?: string;
      /** A decline's failed charge, recorded as a `failed` payment. */
      chargeId: string | null;
      paymentIntentId: string | null;
    }
  /** Nothing final happened, or it cannot be known: the claim is released and the caller retries. */
  | { kind: 'transient'; error: unknown; retryAfterSeconds: number };
