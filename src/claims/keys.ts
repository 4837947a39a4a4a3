import { createHash } from 'node:crypto';
import type { ChargeRequest, RefundRequest } from './validate.js';

/**
 * The Idempotency-Key sent to Stripe for one (tenant, key). Deterministic, so every
 * attempt at the same claim (a retry after a timeout, a steal after a crash) sends
 * the same key and Stripe answers with the first charge instead of making another.
 * Hashed so tenants cannot collide by choosing keys, and 68 characters (Stripe
 * allows 255). The `v1` prefix lets the derivation change without reusing keys.
 */
export function downstreamKey(tenantId: string, key: string): string {
  return `sweeper_v1_${sha256(`${tenantId}\u001f${key}`)}`;
}

/**
 * sha256 of the canonical request: what makes "the same request". Keys are sorted
 * at every level, so property order in the caller's object does not matter.
 */
export function requestFingerprint(request: ChargeRequest | (RefundRequest & { operation: 'refund' })): string {
  return sha256(canonicalJson(request));
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
