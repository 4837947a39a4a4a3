export { createStripeClient, parseApiBase, STRIPE_API_VERSION, type StripeClientOptions } from './client.js';
export type { MalformedCharge, NormalizedCharge } from '../../sweep/provider.js';
export {
  createChargeLister,
  listChargeWindow,
  DEFAULT_CONCURRENCY,
  type ChargeBatch,
  type ChargeLister,
  type ChargeListerDeps,
  type WindowListingOptions,
} from './list-charges.js';
export {
  RateBudget,
  DEFAULT_RATE_PER_SECOND,
  type RateBudgetOptions,
  type Sleep,
  type MonotonicClock,
} from './rate-budget.js';
export { StripeListCounters, type CounterSnapshot } from './counters.js';
export {
  IncompleteWindowError,
  InvalidStripeKeyError,
  MissingStripePermissionError,
  StripeUnreachableError,
} from './errors.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './backoff.js';
export { DEFAULT_METADATA_KEYS, normalizeCharge, type MetadataKeys } from './normalize.js';
export { toUnixRange, type ChargeWindow, type Instant, type UnixRange } from './window.js';
export type { FetchChargePage, PageQuery, RawChargePage } from './page-source.js';
export {
  CHANGE_EVENT_TYPES,
  createEventReader,
  readEvents,
  sdkEventPageSource,
  type EventListing,
  type EventPageQuery,
  type EventReader,
  type EventReaderDeps,
  type EventWindow,
  type FetchEventPage,
  type ReadEventsOptions,
} from './events.js';
export { pointersOf, readChangeEvent, type ChangeEvent } from './change-event.js';
export {
  ChargeRetrievalError,
  IncompleteEventsError,
  MissingEventsPermissionError,
  type EventRange,
} from './event-errors.js';
export { createChargeRetriever, type ChargeRetriever, type RetrievedCharge } from './retrieve-charges.js';
export { createStripeProvider, stripeFacts, type StripeProvider, type StripeProviderOptions } from './provider.js';
