export type Fetch = typeof globalThis.fetch;

export interface PushOptions {
  /** Base URL, e.g. http://pushgateway:9091; may carry user:password for basic auth. */
  url: string;
  body: string;
  contentType: string;
  fetch: Fetch;
  jobName?: string;
  /** Extra grouping labels (e.g. a shard), each its own group on the gateway. */
  grouping?: Readonly<Record<string, string>>;
  timeoutMs?: number;
}

/**
 * PUT replaces every metric of the group, so series that vanished (an account no
 * longer swept) do not linger on the gateway as they would with POST.
 */
export async function pushToGateway(options: PushOptions): Promise<void> {
  const { target, authorization } = gatewayTarget(options.url, options.jobName ?? 'sweeper', options.grouping ?? {});
  let response: Response;
  try {
    response = await options.fetch(target, {
      method: 'PUT',
      headers: { 'content-type': options.contentType, ...(authorization ? { authorization } : {}) },
      body: options.body,
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
  } catch (error) {
    const err = error as { name?: string; message?: string };
    if (err?.name === 'TimeoutError' || err?.name === 'AbortError') throw new Error('Pushgateway did not answer in time');
    throw new Error(`Pushgateway unreachable: ${err?.message ?? String(error)}`);
  }
  const text = await response.text().catch(() => '');
  if (!response.ok) throw new Error(`Pushgateway answered HTTP ${response.status}${text.trim() ? `: ${text.trim().slice(0, 200)}` : ''}`);
}

/**
 * `/metrics/job/<job>/<label>/<value>…`. Values that are empty or contain a slash
 * use the gateway's `<label>@base64/<base64url>` form. fetch refuses URLs with
 * credentials, so they move to an Authorization header.
 */
export function gatewayTarget(base: string, jobName: string, grouping: Readonly<Record<string, string>>): { target: string; authorization?: string } {
  const url = new URL(base);
  let authorization: string | undefined;
  if (url.username || url.password) {
    const user = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    url.username = '';
    url.password = '';
  }
  const segments = [['job', jobName] as const, ...Object.entries(grouping)].map(([label, value]) =>
    value === '' || value.includes('/')
      ? `${label}@base64/${Buffer.from(value).toString('base64url') || '='}`
      : `${label}/${encodeURIComponent(value)}`,
  );
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/metrics/${segments.join('/')}`;
  return authorization ? { target: url.toString(), authorization } : { target: url.toString() };
}
