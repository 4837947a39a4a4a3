/**
 * Stripe's error envelope `{ error: { type, code, message, ... } }` and the answers
 * the double gives with it. Handlers throw DoubleError; the server renders it.
 */
export interface StripeErrorBody {
  error: {
    type: string;
    message: string;
    code?: string;
    decline_code?: string;
    param?: string;
    doc_url?: string;
    charge?: string;
    payment_intent?: unknown;
    [key: string]: unknown;
  };
}

export class DoubleError extends Error {
  constructor(
    readonly status: number,
    readonly body: StripeErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super(body.error.message);
  }
}

function docUrl(code: string | undefined): Record<string, string> {
  return code ? { doc_url: `https://stripe.com/docs/error-codes/${code.replace(/_/g, '-')}` } : {};
}

export function invalidRequest(
  message: string,
  extra: { code?: string; param?: string; status?: number } = {},
): DoubleError {
  const { status = 400, ...fields } = extra;
  return new DoubleError(status, {
    error: { type: 'invalid_request_error', message, ...fields, ...docUrl(fields.code) },
  });
}

export function unknownParameter(param: string): DoubleError {
  return invalidRequest(`Received unknown parameter: ${param}`, { code: 'parameter_unknown', param });
}

export function missingParameter(param: string): DoubleError {
  return invalidRequest(`Missing required param: ${param}.`, { code: 'parameter_missing', param });
}

export function invalidInteger(param: string, value: string): DoubleError {
  return invalidRequest(`Invalid integer: ${value}`, { code: 'parameter_invalid_integer', param });
}

export function resourceMissing(kind: string, id: string, param = 'id', status = 404): DoubleError {
  return invalidRequest(`No such ${kind}: '${id}'`, { code: 'resource_missing', param, status });
}

export function unrecognizedUrl(method: string, path: string): DoubleError {
  return invalidRequest(
    `Unrecognized request URL (${method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
    { status: 404 },
  );
}

/** Which of Stripe's limiters refused: the `Stripe-Rate-Limited-Reason` header of its 429. */
export type RateLimitedReason = 'global-rate' | 'endpoint-rate' | 'global-concurrency' | 'endpoint-concurrency';

/**
 * Stripe answers a throttled request with 429 `rate_limit` and a
 * `Stripe-Rate-Limited-Reason` header naming the limiter; no `Stripe-Should-Retry`
 * (its SDKs do not retry a rate limit: the caller must slow down) and no `Retry-After`.
 */
export function rateLimited(retryAfterSeconds?: number, reason?: RateLimitedReason): DoubleError {
  const headers: Record<string, string> = {};
  if (retryAfterSeconds !== undefined) headers['Retry-After'] = String(retryAfterSeconds);
  if (reason !== undefined) headers['Stripe-Rate-Limited-Reason'] = reason;
  return new DoubleError(
    429,
    {
      error: {
        type: 'rate_limit_error',
        code: 'rate_limit',
        message: 'Too many requests hit the API too quickly. We recommend an exponential backoff of your requests.',
        ...docUrl('rate_limit'),
      },
    },
    headers,
  );
}

/**
 * A request for a connected account the platform has no access to (revoked, or never
 * connected): Stripe's 403 naming the masked key and the account.
 */
export function accountAccessDenied(key: string, account: string): DoubleError {
  return invalidRequest(
    `The provided key '${maskKey(key)}' does not have access to account '${account}' (or that account does not exist). Application access may have been revoked.`,
    { status: 403, code: 'account_invalid' },
  );
}

export function apiError(message = 'An unknown error occurred.'): DoubleError {
  return new DoubleError(500, { error: { type: 'api_error', message } });
}

export function missingApiKey(): DoubleError {
  return invalidRequest(
    "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
    { status: 401 },
  );
}

export function invalidApiKey(key: string): DoubleError {
  return invalidRequest(`Invalid API Key provided: ${maskKey(key)}`, { status: 401, code: 'api_key_invalid' });
}

export function permissionDenied(key: string, account: string | null, permission: string): DoubleError {
  const on = account ? ` on account '${account}'` : '';
  return invalidRequest(
    `The provided key '${maskKey(key)}' does not have the required permissions for this endpoint${on}. Having the '${permission}' permission would allow this request to continue.`,
    { status: 403 },
  );
}

export function idempotencyMismatch(key: string): DoubleError {
  return new DoubleError(400, {
    error: {
      type: 'idempotency_error',
      message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
    },
  });
}

/** As Stripe does: the prefix and the last four characters, never the whole key. */
export function maskKey(key: string): string {
  const prefix = /^(sk|rk|pk)_(test|live)_/.exec(key)?.[0] ?? '';
  return `${prefix}${'*'.repeat(Math.max(4, key.length - prefix.length - 4))}${key.slice(-4)}`;
}
