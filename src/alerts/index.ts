export { createAlerter, type Alerter, type AlerterDeps, type NotifyInput, type NotifyResult } from './alerter.js';
export {
  alertConfigFromEnv,
  alertSecrets,
  configuredSinks,
  describeAlertConfig,
  DEFAULT_PAGERDUTY_URL,
  type AlertConfig,
  type PagerDutyConfig,
  type SlackConfig,
  type WebhookConfig,
} from './config.js';
export {
  ALERT_CATEGORIES,
  ALERT_KEYS,
  LAG_ALERT,
  severityOf,
  type AlertCategory,
  type AlertKey,
  type Severity,
} from './categories.js';
export { describeLag, type LagStatus } from './lag.js';
export { readOpenFindings, type OpenFindings } from './open-findings.js';
export { dedupKey } from './pagerduty.js';
export { SIGNATURE_HEADER, signatureHeader, verifySignature, type VerifyResult } from './signature.js';
export type { SinkName } from './sink.js';
export type { Fetch } from './http.js';
