import type { Logger } from '../log.js';
import type { MetricsConfig } from './config.js';
import type { MetricsInput } from './input.js';
import { pushToGateway } from './pushgateway.js';
import { buildMetricsRegistry } from './registry.js';
import { writeTextfileAtomically } from './textfile.js';

export interface PublishResult {
  written: boolean;
  pushed: boolean;
  /** One line per failure; the caller decides whether a run with unpublished metrics failed. */
  errors: string[];
}

/**
 * Renders the metrics once and sends them to every configured destination. A
 * failure to publish is logged and returned, never thrown: the run's results are
 * already committed and must not be lost over monitoring.
 */
export async function publishMetrics(args: {
  config: MetricsConfig;
  input: MetricsInput;
  logger: Logger;
  grouping?: Readonly<Record<string, string>>;
  timeoutMs?: number;
}): Promise<PublishResult> {
  const result: PublishResult = { written: false, pushed: false, errors: [] };
  const { file, pushgatewayUrl } = args.config;
  if (!file && !pushgatewayUrl) return result;
  const registry = buildMetricsRegistry(args.input);
  const text = await registry.metrics();

  if (file) {
    try {
      await writeTextfileAtomically(file, text);
      result.written = true;
      args.logger.debug({ file }, 'metrics written');
    } catch (error) {
      const message = `metrics file ${file}: ${(error as Error).message}`;
      result.errors.push(message);
      args.logger.warn({ file, error: (error as Error).message }, 'could not write the metrics file');
    }
  }
  if (pushgatewayUrl) {
    try {
      await pushToGateway({ url: pushgatewayUrl, registry, grouping: args.grouping, timeoutMs: args.timeoutMs });
      result.pushed = true;
      args.logger.debug('metrics pushed');
    } catch (error) {
      // The message never contains the URL, which may carry credentials.
      const message = `metrics push: ${(error as Error).message}`;
      result.errors.push(message);
      args.logger.warn({ error: (error as Error).message }, 'could not push metrics to the Pushgateway');
    }
  }
  return result;
}
