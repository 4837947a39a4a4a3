import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * `X-Sweeper-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
 * The timestamp is signed with the body, so a receiver that also bounds its age
 * refuses both tampered bodies and replays of old deliveries.
 */
export const SIGNATURE_HEADER = 'X-Sweeper-Signature';

export function computeSignature(secret: string, timestamp: number, rawBody: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

export function signatureHeader(secret: string, timestamp: number, rawBody: string | Buffer): string {
  return `t=${timestamp},v1=${computeSignature(secret, timestamp, rawBody)}`;
}

export type VerifyResult =
  { valid: true; timestamp: number } | { valid: false; reason: 'malformed' | 'signature' | 'timestamp' };

/**
 * The receiver's recipe:
 * 1. split the header on `,` into `t` and one or more `v1` (several while a secret rotates);
 * 2. compute HMAC-SHA256(secret, `${t}.${rawBody}`) over the body bytes exactly as received;
 * 3. compare with each `v1` in constant time;
 * 4. refuse a `t` more than `toleranceSeconds` from now (a replay, or a badly skewed clock).
 */
export function verifySignature(
  secret: string,
  header: string | undefined,
  rawBody: string | Buffer,
  options: { toleranceSeconds?: number; now?: Date } = {},
): VerifyResult {
  const tolerance = options.toleranceSeconds ?? 300;
  const now = options.now ?? new Date();
  if (!header) return { valid: false, reason: 'malformed' };
  let timestamp: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    if (name === 'v1' && /^[0-9a-f]{64}$/i.test(value)) candidates.push(value.toLowerCase());
  }
  if (timestamp === undefined || candidates.length === 0) return { valid: false, reason: 'malformed' };

  const expected = Buffer.from(computeSignature(secret, timestamp, rawBody), 'hex');
  const matches = candidates.some((c) => timingSafeEqual(Buffer.from(c, 'hex'), expected));
  if (!matches) return { valid: false, reason: 'signature' };
  if (Math.abs(now.getTime() / 1000 - timestamp) > tolerance) return { valid: false, reason: 'timestamp' };
  return { valid: true, timestamp };
}
