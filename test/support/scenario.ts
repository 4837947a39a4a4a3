import type { Queryable } from '../../src/db/pool.js';
import type { MalformedCharge, NormalizedCharge } from '../../src/sweep/provider.js';
import type { ChangeSource, ChargeSource, SweepDeps } from '../../src/sweep/sweep.js';
import { silentLogger } from '../../src/log.js';
import { STRIPE_IDEMPOTENCY_WINDOW_MS } from '../../src/providers/stripe/limits.js';
import { downstreamKey } from '../../src/claims/keys.js';
import type { RefundFact, ProviderEvidence } from '../../src/sweep/provider.js';

/** Direct table writes for sweep tests: the states crashes leave behind, made on purpose. */

/** The in-memory provider stands in for Stripe: it has Stripe's idempotency window (SweepDeps.idempotencyWindowMs). */
export { STRIPE_IDEMPOTENCY_WINDOW_MS as IDEMPOTENCY_WINDOW_MS } from '../../src/providers/stripe/limits.js';

export interface ClaimSeed {
  tenantId: string;
  key: string;
  status: 'in_flight' | 'completed' | 'released';
  createdAt: Date;
  lockedUntil?: Date | null;
  attempt?: number;
  responseStatus?: number | null;
  /** The stored answer's body; by default a completed 2xx names the charge `responseCharge` (or none). */
  responseBody?: unknown;
  responseCharge?: string | null;
  responseOutcome?: 'success' | 'pending_action' | 'declined' | 'rejected' | null;
  accountId?: string | null;
  /** The request the claim stands for; null = written by another writer. */
  amount?: number | null;
  currency?: string | null;
}

export async function seedClaim(db: Queryable, c: ClaimSeed): Promise<void> {
  const completed = c.status === 'completed';
  const status = completed ? (c.responseStatus ?? 200) : null;
  const body = completed
    ? (c.responseBody ?? (c.responseCharge ? { object: 'charge_result', charge: c.responseCharge } : { seeded: true }))
    : null;
  await db.query(
    `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, attempt, downstream_key,
                                   account_id, response_status, response_body, created_at, completed_at, updated_at,
                                   response_outcome, amount, currency)
     VALUES ($1, $2, 'fp', $3, $4, $5, $6, $7, $8, $9, $10, $11, $10, $12, $13, $14)`,
    [
      c.tenantId,
      c.key,
      c.status,
      c.status === 'in_flight' ? (c.lockedUntil ?? new Date(c.createdAt.getTime() + 120_000)) : null,
      c.attempt ?? 1,
      downstreamKey(c.tenantId, c.key),
      c.accountId ?? null,
      status,
      body === null ? null : JSON.stringify(body),
      c.createdAt,
      completed ? c.createdAt : null,
      completed
        ? c.responseOutcome === undefined
          ? status !== null && status < 300
            ? 'success'
            : 'declined'
          : c.responseOutcome
        : null,
      c.amount === undefined ? 1000 : c.amount,
      c.currency === undefined ? 'usd' : c.currency,
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
    customer: null,
    paymentMethod: null,
    tenantId: null,
    idempotencyKey: null,
    livemode: false,
    ...over,
  };
}

/**
 * A payment made through the claim library: its claim (completed, naming the charge), its
 * payment row and its charge agree; the charge joins `stripe`, the account as a test's
 * memory Stripe holds it. `over` changes the charge only (its tenant, reference, amount…).
 */
export async function seedPaid(
  db: Queryable,
  stripe: NormalizedCharge[],
  p: { id: string; tenantId: string; key: string; at: Date; over?: Partial<NormalizedCharge> },
): Promise<NormalizedCharge> {
  const c = charge({
    id: p.id,
    created: Math.floor(p.at.getTime() / 1000),
    tenantId: p.tenantId,
    idempotencyKey: p.key,
    ...p.over,
  });
  stripe.push(c);
  const claim = { tenantId: p.tenantId, key: p.key, createdAt: p.at };
  await seedClaim(db, { ...claim, status: 'completed', responseCharge: p.id, amount: c.amount });
  await seedEffect(db, { chargeId: p.id, tenantId: p.tenantId, key: p.key, amount: c.amount, createdAt: p.at });
  return c;
}

/**
 * What a sweep run in-process needs against Stripe held in memory: `charges()` listed
 * (counted in `listCalls` when given) and read back as Stripe's own word, the clock stopped
 * at `now`, no logs; `over` replaces any of it.
 */
export function memorySweepDeps(
  pool: SweepDeps['pool'],
  charges: () => NormalizedCharge[],
  now: Date,
  over: Partial<SweepDeps> & { listCalls?: { count: number } } = {},
): SweepDeps {
  const { listCalls, ...deps } = over;
  return {
    pool,
    listCharges: memoryChargeSource(charges, listCalls),
    evidence: memoryEvidence(charges),
    clock: () => now,
    logger: silentLogger(),
    idempotencyWindowMs: STRIPE_IDEMPOTENCY_WINDOW_MS,
    ...deps,
  };
}

/** A Stripe account as an array: the window filter and pages of 100, like the real lister. */
export function memoryChargeSource(
  charges: () => NormalizedCharge[],
  calls?: { count: number },
  /** Charges the listing returns unreadable (by id: the problem), as a poison record in a page would be. */
  unreadable: ReadonlyMap<string, string> = new Map(),
): ChargeSource {
  return async function* (account, window) {
    if (calls) calls.count += 1;
    const from = window.from.getTime() / 1000;
    const to = window.to.getTime() / 1000;
    const matching = charges().filter(
      (c) => (c.account ?? 'platform') === account && c.created >= from && c.created < to,
    );
    for (let i = 0; i < matching.length; i += 100) {
      const page = matching.slice(i, i + 100);
      yield {
        charges: page.filter((c) => !unreadable.has(c.id)),
        malformed: page.flatMap((c) => {
          const problem = unreadable.get(c.id);
          return problem === undefined ? [] : [{ id: c.id, account: c.account, problem, created: c.created }];
        }),
      };
    }
  };
}

/**
 * Stripe's own word over the same array the scenario lists from: lookups by id,
 * search by metadata, refunds. `refundsMade` records every refund POST, so tests can
 * count them across runs; `refundFails` makes the next POSTs throw (a crash, Stripe down).
 */
export function memoryEvidence(
  charges: () => NormalizedCharge[],
  /** Charges Stripe answers but that cannot be read (by id: the problem), as a poison record would. */
  unreadable: ReadonlyMap<string, string> = new Map(),
): ProviderEvidence & {
  calls: { byId: number; searches: number; refundLists: number; refundPosts: number };
  refunds: RefundFact[];
  refundFails: { next: number; afterStripeRefunded?: boolean };
} {
  const calls = { byId: 0, searches: 0, refundLists: 0, refundPosts: 0 };
  const refunds: RefundFact[] = [];
  const refundFails = { next: 0, afterStripeRefunded: false };
  const inAccount = (account: string) => charges().filter((c) => (c.account ?? 'platform') === account);
  // Without a callback an unreadable answer fails the call, as the Stripe provider's does.
  const answer = (found: NormalizedCharge[], onMalformed?: (bad: MalformedCharge) => void) =>
    found.flatMap((c) => {
      const problem = unreadable.get(c.id);
      if (problem === undefined) return [{ ...c }];
      if (!onMalformed) throw new Error(`Stripe's re-read of charge ${c.id} cannot be judged: ${problem}`);
      onMalformed({ id: c.id, account: c.account, problem, created: c.created });
      return [];
    });
  return {
    calls,
    refunds,
    refundFails,
    async chargesById(account, ids, _signal, onMalformed) {
      calls.byId += ids.length;
      return answer(
        inAccount(account).filter((c) => ids.includes(c.id)),
        onMalformed,
      );
    },
    async chargesNaming(account, tenantId, key, _signal, onMalformed) {
      calls.searches += 1;
      return answer(
        inAccount(account).filter((c) => c.tenantId === tenantId && c.idempotencyKey === key),
        onMalformed,
      );
    },
    async refundsOf(_account, chargeId) {
      calls.refundLists += 1;
      return refunds.filter((r) => r.chargeId === chargeId);
    },
    async refund(account, request) {
      calls.refundPosts += 1;
      const existing = refunds.find((r) => r.metadata.sweeper_refund_key === request.idempotencyKey);
      const charge = inAccount(account).find((c) => c.id === request.chargeId);
      if (refundFails.next > 0 && !refundFails.afterStripeRefunded) {
        refundFails.next -= 1;
        throw new Error('Stripe could not be reached');
      }
      if (existing) return existing;
      if (!charge) throw new Error(`No such charge: ${request.chargeId}`);
      if (charge.amountRefunded >= charge.amount) throw new Error(`Charge ${charge.id} has already been refunded.`);
      const refund: RefundFact = {
        id: `re_${refunds.length + 1}`,
        chargeId: charge.id,
        amount: request.amount,
        status: 'succeeded',
        metadata: { ...request.metadata },
      };
      refunds.push(refund);
      charge.amountRefunded += request.amount;
      charge.refunded = charge.amountRefunded >= charge.amount;
      if (refundFails.next > 0) {
        // Stripe refunded, but the answer never came back.
        refundFails.next -= 1;
        throw new Error('connection reset after the refund was made');
      }
      return refund;
    },
  };
}

export interface MemoryEvent {
  id: string;
  type: string;
  /** Unix seconds. */
  created: number;
  chargeId: string | null;
  account?: string | null;
}

/** Stripe's Events API over an array: the reader's window rules (created > after, or ≥ after − overlap; < before). */
export function memoryChangeSource(events: () => MemoryEvent[], calls?: { count: number }): ChangeSource {
  return async (account, window) => {
    if (calls) calls.count += 1;
    const from = window.overlapSeconds > 0 ? window.after - window.overlapSeconds : window.after + 1;
    return events()
      .filter((e) => (e.account ?? 'platform') === account && e.created >= from && e.created < window.before)
      .map(({ id, type, created, chargeId }) => ({ id, type, created, chargeId }));
  };
}

/**
 * Empties every table a sweep reads or writes (alert state aside), for tests that rebuild
 * a scenario: the state a TRUNCATE of those tables leaves (the claim directory empty too),
 * by DELETE, which on a few rows takes milliseconds where a TRUNCATE of partitioned tables
 * takes tens. recon_repairs is append-only (no DELETE): truncated.
 */
export async function emptySweepTables(db: Queryable): Promise<void> {
  await db.query(
    `TRUNCATE recon_repairs;
     DELETE FROM recon_refunds; DELETE FROM recon_event_cursors; DELETE FROM recon_deep_reads;
     DELETE FROM recon_finding_charges; DELETE FROM recon_findings; DELETE FROM recon_watermarks;
     DELETE FROM recon_runs; DELETE FROM stripe_charges; DELETE FROM stripe_charge_references;
     DELETE FROM payments; DELETE FROM idempotency_keys; DELETE FROM idempotency_key_directory;
     DELETE FROM claim_outcomes; DELETE FROM claim_quota;
     DELETE FROM payment_refunds; DELETE FROM stripe_refunds; DELETE FROM recon_refund_cursors; DELETE FROM stripe_disputes;
     DELETE FROM stripe_balance_transactions; DELETE FROM stripe_payouts; DELETE FROM recon_payouts; DELETE FROM recon_payout_accounts`,
  );
}

/**
 * Records that an earlier backfill judged `[from, to)` of an account (a recon_runs row,
 * committed to its end): the late-changes step and the deep re-read judge charges again
 * only inside what some run has swept (src/sweep/coverage.ts).
 */
export async function seedSweptRange(db: Queryable, account: string, from: Date, to: Date): Promise<void> {
  const id = `run_seeded_${account}_${from.getTime()}_${to.getTime()}`;
  await db.query(
    `INSERT INTO recon_runs (id, mode, account, window_from, window_to, status, checkpoint, started_at, finished_at)
     VALUES ($1, 'backfill', $2, $3, $4, 'succeeded', $4, $3, $4)`,
    [id, account, from, to],
  );
}
