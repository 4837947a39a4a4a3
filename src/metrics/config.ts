import { urlProblem } from '../config.js';
import { ConfigError } from '../errors.js';
import { registerUrlCredentials } from '../secrets.js';

export interface MetricsConfig {
  /** Base URL of a Prometheus Pushgateway; metrics are PUT under job "sweeper". */
  pushgatewayUrl: string | undefined;
  /** A `.prom` file for node_exporter's textfile collector, replaced atomically. */
  file: string | undefined;
}

export function metricsConfigFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): MetricsConfig {
  const get = (name: string) => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const pushgatewayUrl = get('SWEEPER_PUSHGATEWAY_URL');
  // Basic-auth credentials in this URL are supported (they move to an Authorization
  // header) and redacted by value everywhere; the URL itself is never echoed.
  registerUrlCredentials(pushgatewayUrl);
  const problem =
    pushgatewayUrl === undefined
      ? null
      : urlProblem(pushgatewayUrl, ['http:', 'https:'], { credentials: true, host: true });
  if (problem) {
    throw new ConfigError(
      problem.startsWith('must start')
        ? 'SWEEPER_PUSHGATEWAY_URL must be an http(s) URL such as http://pushgateway:9091'
        : `SWEEPER_PUSHGATEWAY_URL ${problem}, such as http://pushgateway:9091`,
    );
  }
  const file = get('SWEEPER_METRICS_FILE');
  // node_exporter's textfile collector reads only *.prom, so any other name would be ignored silently.
  if (file !== undefined && !file.endsWith('.prom')) {
    throw new ConfigError(
      `SWEEPER_METRICS_FILE must name a .prom file in the textfile collector's directory (got "${file}")`,
    );
  }
  return { pushgatewayUrl, file };
}
