import type { AlertKey } from './categories.js';
import type { AlertContext } from './message.js';

export type SinkName = 'slack' | 'pagerduty' | 'webhook';

/** One message to one sink, and the categories whose state it carries. */
export interface Delivery {
  /** For logs and returned errors, e.g. "pagerduty trigger duplicate_charge"; never a credential. */
  label: string;
  /** Their counts become the sink's state once this delivery succeeds, and only then. */
  categories: readonly AlertKey[];
  send(): Promise<void>;
}

/** A sink turns one account's changes into zero or more deliveries. */
export interface AlertSink {
  name: SinkName;
  plan(ctx: AlertContext): Delivery[];
}
