import type { Queryable } from '../../src/db/pool.js';
import type { NormalizedCharge } from '../../src/stripe/types.js';
import type { ChargeSource } from '../../src/sweep/sweep.js';
import { downstreamKey } from '../../src/claims/keys.js';

/** Direct table writes for sweep tests: the states crashes leave behind, made on purpose. */

export interface ClaimSeed {
  tenantId: string;
  key: string;
  status: 'in_flight' | 'completed' | 'released';
  createdAt: Date;
  lockedUntil?: Date | null;
  attempt?: number;
  responseStatus?: number | null;
  accountId?: string | null;
}

export async function seedClaim(db: Queryable, c: ClaimSeed): Promise<void> {
  const completed = c.status === 'completed';
  await db.query(
    `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, attempt, downstream_key,
                                   account_id, response_status, response_body, created_at, completed_at, updated_at)
     VALUES ($1, $2, 'fp', $3, $4, $5, $6, $7, $8, $9, $10, $11, $10)`,
    [
      c.tenantId,
      c.key,
      c.status,
      c.status === 'in_flight' ? (c.lockedUntil ?? new Date(c.createdAt.getTime() + 120_000)) : null,
      c.attempt ?? 1,
      downstreamKey(c.tenantId, c.key),
      c.accountId ?? null,
      completed ? (c.responseStatus ?? 200) : null,
      completed ? JSON.stringify({ seeded: true }) : null,
      c.createdAt,
      completed ? c.createdAt : null,
    ],
  );
}

export interface EffectSeed {
  chargeId: string;
  tenantId?: string | null;
  key?: string | null;
  amount?: number;
  currency?: string;
  status?: 'succeeded' | 'failed' | 'pending';
  amountRefunded?: number;
  disputed?: boolean;
  createdAt: Date;
  accountId?: string | null;
}

export async function seedEffect(db: Queryable, e: EffectSeed): Promise<void> {
  await db.query(
    `INSERT INTO payments (charge_id, tenant_id, idempotency_key, payment_intent_id, account_id, amount, currency, status,
                           amount_refunded, disputed, created_at, updated_at)
     VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, $8, $9, $10, $10)`,
    [
      e.chargeId,
      e.tenantId ?? null,
      e.key ?? null,
      e.accountId ?? null,
      e.amount ?? 1000,
      e.currency ?? 'usd',
      e.status ?? 'succeeded',
      e.amountRefunded ?? 0,
      e.disputed ?? false,
      e.createdAt,
    ],
  );
}

export function charge(over: Partial<NormalizedCharge> & { id: string; created: number }): NormalizedCharge {
  return {
    account: null,
    amount: 1000,
    amountCaptured: 1000,
    amountRefunded: 0,
    currency: 'usd',
    status: 'succeeded',
    captured: true,
    refunded: false,
    disputed: false,
    paymentIntent: null,
    tenantId: null,
    idempotencyKey: null,
    livemode: false,
    ...over,
  };
}

/** A Stripe account as an array: the window filter and pages of 100, like the real lister. */
export function memoryChargeSource(charges: () => NormalizedCharge[], calls?: { count: number }): ChargeSource {
  return async function* (account, window) {
    if (calls) calls.count += 1;
    const from = window.from.getTime() / 1000;
    const to = window.to.getTime() / 1000;
    const matching = charges().filter(
      (c) => (c.account ?? 'platform') === account && c.created >= from && c.created < to,
    );
    for (let i = 0; i < matching.length; i += 100) yield { charges: matching.slice(i, i + 100), malformed: [] };
  };
}
