/** A response as sent, so that a replay is byte-for-byte the first answer. */
import { DAY_MS } from '../../src/time/units.js';
export interface StoredResponse {
  status: number;
  body: string;
  requestId: string;
}

interface Entry {
  fingerprint: string;
  response: StoredResponse;
  storedAt: number;
}

export type IdempotencyLookup = { kind: 'new' } | { kind: 'replay'; response: StoredResponse } | { kind: 'mismatch' };

/**
 * Stripe's idempotency semantics: keys are scoped per account; the first executed
 * request's status and body are stored and replayed for the same key and the same
 * request (method, path and parameters); another request with the key is an
 * `idempotency_error`. Keys are forgotten once older than the TTL (24 h at Stripe),
 * measured on the double's clock. Requests rejected before execution (validation,
 * authentication, rate limits) are not stored, as at Stripe.
 */
export class IdempotencyStore {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly nowMs: () => number,
    public ttlMs: number = DAY_MS,
  ) {}

  lookup(account: string | null, key: string, fingerprint: string): IdempotencyLookup {
    const slot = slotOf(account, key);
    const entry = this.entries.get(slot);
    if (!entry) return { kind: 'new' };
    if (this.nowMs() - entry.storedAt >= this.ttlMs) {
      this.entries.delete(slot);
      return { kind: 'new' };
    }
    return entry.fingerprint === fingerprint ? { kind: 'replay', response: entry.response } : { kind: 'mismatch' };
  }

  store(account: string | null, key: string, fingerprint: string, response: StoredResponse): void {
    this.entries.set(slotOf(account, key), { fingerprint, response, storedAt: this.nowMs() });
  }

  size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }
}

function slotOf(account: string | null, key: string): string {
  return `${account ?? ''}\u0000${key}`;
}
