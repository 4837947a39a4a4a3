import type { Pool, Queryable } from '../../src/db/pool.js';
import { silentLogger } from '../../src/log.js';
import type { ApplyDeps } from '../../src/plans/index.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { sweepOptions, type SweepOptions } from '../../src/sweep/sweep.js';
import { charge, memoryEvidence, seedClaim, seedEffect } from './scenario.js';

/**
 * Saved plans in tests: a history with a step of every kind a plan can hold (each repair
 * kind, a refund, and findings left for a person), the backfill that judges it, and an
 * apply's dependencies against Stripe held in memory.
 */
export const PLAN_NOW = new Date('2026-11-10T12:00:00Z');
const at = (iso: string) => new Date(`2026-11-${iso}Z`);
const secs = (iso: string) => at(iso).getTime() / 1000;
const MIN = 60_000;

export const planOptions = (over: Partial<SweepOptions> = {}): SweepOptions =>
  sweepOptions({
    mode: 'backfill',
    accounts: ['platform'],
    window: { from: at('10T08:00:00'), to: at('10T11:30:00') },
    settleMs: 10 * MIN,
    sliceMs: 60 * MIN,
    leaseMs: 2 * MIN,
    refundDuplicates: true,
    ...over,
  });

const meta = (key: string) => ({ tenantId: 'acme', idempotencyKey: key });

/**
 * The history, written into `db`; returns Stripe's charges. Steps: a claim completed from
 * its charge (k-cwe), a decline stored (k-cwf), a release (k-stale), a claim re-created
 * (k-ewc), a claim and row created (k-orphan), a row taking Stripe's refund and dispute
 * (k-drift), and a refund of a duplicate (k-dup). Left open: an unattributed charge.
 */
export async function seedPlanHistory(db: Queryable): Promise<NormalizedCharge[]> {
  const stripe: NormalizedCharge[] = [];
  await seedClaim(db, { tenantId: 'acme', key: 'k-matched', status: 'completed', createdAt: at('10T08:05:00') });
  await seedEffect(db, { chargeId: 'ch_matched', tenantId: 'acme', key: 'k-matched', createdAt: at('10T08:05:01') });
  stripe.push(charge({ id: 'ch_matched', created: secs('10T08:05:01'), ...meta('k-matched') }));
  await seedClaim(db, { tenantId: 'acme', key: 'k-cwe', status: 'in_flight', createdAt: at('10T09:10:00') });
  stripe.push(charge({ id: 'ch_cwe', created: secs('10T09:10:01'), paymentIntent: 'pi_cwe', ...meta('k-cwe') }));
  await seedClaim(db, { tenantId: 'acme', key: 'k-cwf', status: 'in_flight', createdAt: at('10T09:20:00') });
  stripe.push(charge({ id: 'ch_cwf', created: secs('10T09:20:01'), status: 'failed', ...meta('k-cwf') }));
  await seedClaim(db, { tenantId: 'acme', key: 'k-stale', status: 'in_flight', createdAt: at('10T09:30:00') });
  await seedEffect(db, { chargeId: 'ch_ewc', tenantId: 'acme', key: 'k-ewc', createdAt: at('10T09:50:00') });
  stripe.push(charge({ id: 'ch_ewc', created: secs('10T09:50:00'), ...meta('k-ewc') }));
  stripe.push(charge({ id: 'ch_orphan', created: secs('10T10:00:00'), amount: 2500, ...meta('k-orphan') }));
  stripe.push(charge({ id: 'ch_unattributed', created: secs('10T10:05:00') }));
  await seedClaim(db, { tenantId: 'acme', key: 'k-drift', status: 'completed', createdAt: at('10T10:30:00') });
  await seedEffect(db, { chargeId: 'ch_drift', tenantId: 'acme', key: 'k-drift', createdAt: at('10T10:30:01') });
  stripe.push(
    charge({ id: 'ch_drift', created: secs('10T10:30:01'), amountRefunded: 400, disputed: true, ...meta('k-drift') }),
  );
  await seedClaim(db, { tenantId: 'acme', key: 'k-dup', status: 'completed', createdAt: at('10T10:40:00') });
  await seedEffect(db, { chargeId: 'ch_dup1', tenantId: 'acme', key: 'k-dup', createdAt: at('10T10:40:01') });
  stripe.push(charge({ id: 'ch_dup1', created: secs('10T10:40:01'), ...meta('k-dup') }));
  stripe.push(charge({ id: 'ch_dup2', created: secs('10T10:41:00'), ...meta('k-dup') }));
  return stripe;
}

/** A deep copy: each database of a comparison has its own Stripe (a refund changes its charge). */
export const copyOf = (charges: readonly NormalizedCharge[]): NormalizedCharge[] => charges.map((c) => ({ ...c }));

/** What `sweeper apply` is given, with Stripe in memory (null: the review page without a key). */
export function memoryApplyDeps(
  pool: Pool,
  evidence: ReturnType<typeof memoryEvidence> | null,
  now: Date = PLAN_NOW,
): ApplyDeps {
  return { pool, clock: () => now, logger: silentLogger(), evidence };
}

/**
 * The domain's rows: claims, the claims' directory, payment rows and the refund outbox,
 * without what names the run or plan that wrote them, and without a payment row's
 * surrogate `id` (a sequence's value: the plan's dry run drew some, and sequences never
 * roll back).
 */
export async function domainRows(db: Queryable): Promise<Record<string, unknown[]>> {
  const q = async (sql: string) => (await db.query(sql)).rows;
  return {
    claims: await q(`SELECT * FROM idempotency_keys ORDER BY tenant_id, key`),
    directory: await q(`SELECT * FROM idempotency_key_directory ORDER BY tenant_id, key`),
    payments: (await q(`SELECT * FROM payments ORDER BY charge_id`)).map(({ id: _id, ...row }) => row),
    refunds: await q(
      `SELECT charge_id, account, kept_charge_id, amount, currency, idempotency_key, state, stripe_refund_id, reason
         FROM recon_refunds ORDER BY charge_id`,
    ),
  };
}

/** The findings a run or an apply repaired, and their audit actions, without who did it. */
export async function repairedFindings(db: Queryable): Promise<unknown[]> {
  const { rows } = await db.query(
    `SELECT f.category, f.subject, f.state, array_agg(r.action ORDER BY r.action) AS actions
       FROM recon_findings f JOIN recon_repairs r ON r.finding_id = f.id
      GROUP BY f.category, f.subject, f.state ORDER BY f.category, f.subject`,
  );
  return rows;
}
