import type { ChargePage, NormalizedCharge, PaymentProvider } from '../../src/sweep/provider.js';
import { charge as chargeOf, memoryChangeSource, memoryEvidence, type MemoryEvent } from './scenario.js';

/**
 * A second payment provider, in memory, written against PaymentProvider alone (the proof
 * that the seam holds: the provider contract tests run it beside Stripe's). Grown from the
 * scenario's in-memory sources: charges are an array, refunds and search are
 * memoryEvidence's, events memoryChangeSource's, and the provider records the events a
 * real one would (a charge's creation, a refund).
 */
export interface MemoryProvider extends PaymentProvider {
  readonly charges: NormalizedCharge[];
  readonly events: MemoryEvent[];
  /** The provider's clock, unix seconds: when refunds and their events happen. */
  now: number;
  /** A charge as a payment made through the provider leaves it; `account` null: the platform. */
  createCharge(spec: MemoryChargeSpec): NormalizedCharge;
}

export interface MemoryChargeSpec {
  account: string | null;
  /** Unix seconds. */
  created: number;
  amount?: number;
  tenantId?: string;
  idempotencyKey?: string;
}

export function createMemoryProvider(
  options: { pageSize?: number; now?: number; idempotencyWindowMs?: number } = {},
): MemoryProvider {
  const pageSize = options.pageSize ?? 100;
  const charges: NormalizedCharge[] = [];
  const events: MemoryEvent[] = [];
  const evidence = memoryEvidence(() => charges);
  let ids = 0;
  const event = (type: string, chargeId: string, account: string | null, created: number) =>
    events.push({ id: `evt_mem_${(ids += 1)}`, type, created, chargeId, account });
  const provider: MemoryProvider = {
    name: 'memory',
    facts: {
      idempotencyWindowMs: options.idempotencyWindowMs ?? 24 * 3_600_000,
      pageSize,
      ratePerSecond: Number.POSITIVE_INFINITY,
    },
    charges,
    events,
    now: options.now ?? Math.floor(Date.now() / 1000),
    createCharge(spec) {
      const made = chargeOf({
        id: `ch_mem_${(ids += 1)}`,
        account: spec.account,
        created: spec.created,
        amount: spec.amount ?? 1000,
        amountCaptured: spec.amount ?? 1000,
        tenantId: spec.tenantId ?? null,
        idempotencyKey: spec.idempotencyKey ?? null,
      });
      charges.push(made);
      event('charge.succeeded', made.id, made.account, made.created);
      return { ...made };
    },
    // Newest first, `pageSize` a page, like a provider's listing.
    async *listCharges(account, window): AsyncIterable<ChargePage> {
      const from = window.from.getTime() / 1000;
      const to = window.to.getTime() / 1000;
      const matching = charges
        .filter((c) => (c.account ?? 'platform') === account && c.created >= from && c.created < to)
        .sort((a, b) => b.created - a.created);
      for (let i = 0; i < matching.length; i += pageSize) {
        yield { charges: matching.slice(i, i + pageSize).map((c) => ({ ...c })), malformed: [] };
      }
    },
    listChanges: memoryChangeSource(() => events),
    evidence: {
      chargesById: evidence.chargesById,
      chargesNaming: evidence.chargesNaming,
      refundsOf: evidence.refundsOf,
      async refund(account, request, signal) {
        const before = evidence.refunds.length;
        const made = await evidence.refund(account, request, signal);
        if (evidence.refunds.length > before)
          event('charge.refunded', request.chargeId, account === 'platform' ? null : account, provider.now);
        return made;
      },
    },
    pace: () => ({ ratePerSecond: Number.POSITIVE_INFINITY, meanLatencyMs: null }),
  };
  return provider;
}
