import { Pushgateway, type Registry } from 'prom-client';
import { errorMessage } from '../errors.js';

export interface PushOptions {
  /** Base URL, e.g. http://pushgateway:9091; may carry user:password for basic auth. */
  url: string;
  /** What is pushed: the registry's metrics, rendered by prom-client. */
  registry: Registry;
  jobName?: string;
  /** Extra grouping labels (e.g. a shard), each its own group on the gateway. */
  grouping?: Readonly<Record<string, string>>;
  timeoutMs?: number;
}

/**
 * prom-client's Pushgateway, with `push` (HTTP PUT): PUT replaces every metric of the
 * group, so series that vanished (an account no longer swept) do not linger on the
 * gateway as they would with POST (`pushAdd`). Basic auth comes from the URL. Errors
 * are rewritten to say what happened without the URL, which may carry credentials.
 */
export async function pushToGateway(options: PushOptions): Promise<void> {
  // prom-client appends "/metrics/…" to the URL's path as it is: a trailing slash would double.
  const base = new URL(options.url);
  base.pathname = base.pathname.replace(/\/+$/, '');
  const gateway = new Pushgateway(
    base.toString(),
    { timeout: options.timeoutMs ?? 10_000, headers: { 'Content-Type': options.registry.contentType } },
    options.registry,
  );
  try {
    await gateway.push({ jobName: options.jobName ?? 'sweeper', groupings: gatewayGrouping(options.grouping ?? {}) });
  } catch (error) {
    throw new Error(describePushError(error));
  }
}

/**
 * Grouping labels as the Pushgateway reads them from the path. A value that is empty
 * or contains a slash cannot be a path segment: it goes as `<label>@base64` with the
 * base64url value, the gateway's own escape (prom-client percent-encodes the `@`, and
 * the gateway decodes the path before it reads it).
 */
export function gatewayGrouping(grouping: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(grouping).map(([label, value]) =>
      value === '' || value.includes('/')
        ? [`${label}@base64`, Buffer.from(value).toString('base64url') || '=']
        : [label, value],
    ),
  );
}

function describePushError(error: unknown): string {
  const message = errorMessage(error);
  const refused = /^push failed with status (\d+), ?([\s\S]*)$/.exec(message);
  if (refused) {
    const body = refused[2]!.trim();
    return `Pushgateway answered HTTP ${refused[1]}${body ? `: ${body.slice(0, 200)}` : ''}`;
  }
  if (/timed out/i.test(message)) return 'Pushgateway did not answer in time';
  return `Pushgateway unreachable: ${message}`;
}
