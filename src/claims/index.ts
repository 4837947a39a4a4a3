import { loadClaimSettings, type ClaimSettings } from '../config.js';
export { createClaimClient } from './charge-once.js';
export type {
  ClaimClient,
  ClaimClientDeps,
  ChargeOnceInput,
  ChargeResult,
  ChargeResponseBody,
  RefundOnceInput,
} from './charge-once.js';
export type { CreateRefund, CreateRefundInput, CreateRefundResult, CreatedRefund } from './create-refund.js';
export { stripeCreateRefund } from '../providers/stripe/create-refund.js';
export type {
  CreateCharge,
  CreateChargeInput,
  CreateChargeResult,
  CreatedCharge,
  StoredError,
} from './create-charge.js';
export { stripeCreateCharge } from '../providers/stripe/create-charge.js';
export { ClaimValidationError } from './validate.js';
export type { ChargeRequest, RefundRequest } from './validate.js';
export { ClaimCounters, CHARGE_OUTCOMES, SUPPRESSED_OUTCOMES } from './counters.js';
export type { ChargeOutcome } from './counters.js';
export { downstreamKey, requestFingerprint } from './keys.js';
export { insertPayment, type PaymentEffect } from './claim-store.js';

/**
 * The claim library's settings from the same environment the sweep reads
 * (SWEEPER_CLAIM_LEASE, SWEEPER_MAX_AMOUNT, SWEEPER_METADATA_*), so the payment
 * service and the sweeper agree on the lease and the metadata names. Only those
 * variables are read. Throws a ConfigError naming a bad variable.
 */
export function claimSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): ClaimSettings {
  return loadClaimSettings(env);
}
