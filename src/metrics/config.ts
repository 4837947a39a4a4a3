import { z } from 'zod';
import { parseEnv, url } from '../config.js';
import { registerUrlCredentials } from '../secrets.js';

export interface MetricsConfig {
  /** Base URL of a Prometheus Pushgateway; metrics are PUT under job "sweeper". */
  pushgatewayUrl: string | undefined;
  /** A `.prom` file for node_exporter's textfile collector, replaced atomically. */
  file: string | undefined;
}

/**
 * The metrics variables, read with the sweep's own parser (src/config.ts `parseEnv`);
 * docs/configuration.md's rows for them are generated from this schema.
 */
export const metricsEnvSchema = z.object({
  // Basic-auth credentials in this URL are supported (they move to an Authorization
  // header) and redacted by value everywhere; the URL itself is never echoed.
  SWEEPER_PUSHGATEWAY_URL: url('SWEEPER_PUSHGATEWAY_URL', ['http:', 'https:'], 'http://pushgateway:9091', {
    credentials: true,
    host: true,
  })
    .meta({ bounds: 'http(s) URL' })
    .describe(
      'push metrics to a Prometheus Pushgateway; `user:password@` is sent as Basic auth and redacted everywhere (alert URLs with credentials are refused)',
    ),
  SWEEPER_METRICS_FILE: z
    .string()
    .optional()
    // node_exporter's textfile collector reads only *.prom, so any other name would be ignored silently.
    .superRefine((file, ctx) => {
      if (file !== undefined && !file.endsWith('.prom'))
        ctx.addIssue({
          code: 'custom',
          message: `SWEEPER_METRICS_FILE must name a .prom file in the textfile collector's directory (got "${file}")`,
        });
    })
    .meta({ bounds: 'a path ending in `.prom`' })
    .describe("write metrics to a file for node_exporter's textfile collector"),
});

export function metricsConfigFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): MetricsConfig {
  // Before the URL is checked: its password must not reach any message.
  registerUrlCredentials(env.SWEEPER_PUSHGATEWAY_URL?.trim());
  const e = parseEnv(metricsEnvSchema, env, { trim: true });
  return { pushgatewayUrl: e.SWEEPER_PUSHGATEWAY_URL, file: e.SWEEPER_METRICS_FILE };
}
