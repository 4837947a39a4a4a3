export { startStripeDouble, type StripeDouble, type StripeDoubleOptions } from './server.js';
export type { DoubleControls, CreateChargeOptions, TimeWindow } from './controls.js';
export { READ_ONLY_PERMISSIONS, type KeyPolicy } from './auth.js';
export { ENDPOINTS, type Endpoint } from './routes.js';
export type { FaultConfig } from './faults.js';
export type { RateLimit, Limited } from './rate-limit.js';
export type { RateLimitedReason } from './errors.js';
export type { MoneyControls } from './money-controls.js';
export type { ConnectControls, SeedAccountsOptions } from './connect-controls.js';
export type {
  AccountJson,
  AccountOptions,
  AccountSettings,
  AccountType,
  PayoutInterval,
  UnknownAccountPolicy,
} from './accounts.js';
export type { BalanceJson, BalanceTransactionJson } from './balance-render.js';
export type { BalanceTransactionType, ReportingCategory } from './balance-store.js';
export type { FeeSchedule, FeeDetail } from './fees.js';
export { DEFAULT_FEE_SCHEDULE } from './fees.js';
export { DEFAULT_FX_RATES, decimalsOf } from './currency.js';
export type { PayoutJson, PayoutStatus, ReconciliationStatus } from './payouts.js';
export type { RunPayoutOptions } from './payout-changes.js';
export type { RefundOptions } from './refund-changes.js';
export type { RefundFailureReason, RefundStatus } from './records.js';
export type { SeedOptions, SeedResult, SeededCharge } from './seed.js';
export type { ChargeJson, PaymentIntentJson, RefundJson } from './render.js';
export { DoubleClock } from './clock.js';
export { RequestCounters, type AccountRequests, type Unretried429 } from './counters.js';
export type { EventControls } from './event-controls.js';
export type { EventTiming } from './emit.js';
export type { EventJson } from './event-render.js';
export type { ChargeUpdate } from './changes.js';
export type { DisputeJson, DisputeOutcome } from './disputes.js';
export { EVENT_RETENTION_SECONDS, type EventRequest } from './event-store.js';
export {
  chargeFormatOf,
  ChargeImportError,
  parseCharges,
  type ChargeFormat,
  type ChargeImport,
  type ImportOptions,
  type ImportResult,
} from './import-charges.js';
