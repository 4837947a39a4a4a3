export { createClaimClient } from './charge-once.js';
export type { ClaimClient, ClaimClientDeps, ChargeOnceInput, ChargeResult, ChargeResponseBody } from './charge-once.js';
export { ClaimValidationError } from './validate.js';
export type { ChargeRequest } from './validate.js';
export { ClaimCounters, CHARGE_OUTCOMES, SUPPRESSED_OUTCOMES } from './counters.js';
export type { ChargeOutcome } from './counters.js';
export { downstreamKey, requestFingerprint } from './keys.js';
export { insertPayment, type PaymentEffect } from './claim-store.js';
