/** Moved: the provider model is src/sweep/provider.ts. Kept until every importer is updated. */
export { isRefundMade, REFUND_KEY_METADATA } from './provider.js';
export type { ProviderEvidence as StripeEvidence, RefundFact, RefundRequest } from './provider.js';
