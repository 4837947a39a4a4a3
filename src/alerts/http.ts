export type Fetch = typeof globalThis.fetch;

export const DEFAULT_TIMEOUT_MS = 10_000;

/** A sink did not accept a message: non-2xx, a network error or a timeout. */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/**
 * POSTs a JSON body that is already a string (the webhook signs the exact bytes it
 * sends). Resolves on any 2xx; everything else becomes a DeliveryError whose message
 * names no URL, since some sink URLs are credentials.
 */
export async function postJson(
  fetch: Fetch,
  url: string,
  body: string,
  options: { headers?: Record<string, string>; timeoutMs: number },
): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'sweeper', ...options.headers },
      body,
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (error) {
    throw new DeliveryError(describeNetworkError(error, options.timeoutMs));
  }
  // Read the answer either way so the connection can be reused; keep a little for the message.
  const text = await response.text().catch(() => '');
  if (response.status < 200 || response.status >= 300) {
    const excerpt = text.trim().slice(0, 200);
    throw new DeliveryError(`HTTP ${response.status}${excerpt ? `: ${excerpt}` : ''}`, response.status);
  }
}

function describeNetworkError(error: unknown, timeoutMs: number): string {
  const err = error as
    { name?: string; message?: string; cause?: { code?: string; message?: string } | null } | null | undefined;
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const cause = err?.cause?.code ?? err?.cause?.message;
  return `network error: ${err?.message ?? String(error)}${cause ? ` (${cause})` : ''}`;
}
