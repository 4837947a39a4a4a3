export { metricsConfigFromEnv, type MetricsConfig } from './config.js';
export type { MetricsInput, SweepReportLike } from './input.js';
export { readLastSuccessByAccount } from './last-success.js';
export { buildMetricsRegistry } from './registry.js';
export { gatewayGrouping, pushToGateway, type PushOptions } from './pushgateway.js';
export { publishMetrics, type PublishResult } from './publish.js';
export { writeTextfileAtomically } from './textfile.js';
