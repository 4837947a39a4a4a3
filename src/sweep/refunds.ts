import { inTransaction, type Pool, type Queryable } from '../db/pool.js';
import { ensureDayPartitions, utcDay } from '../db/partitions.js';
import { forOperator, type Logger } from '../log.js';
import { findingKey } from '../domain/identity.js';
import type { MalformedCharge, NormalizedCharge } from './provider.js';
import { isRefundMade, REFUND_KEY_METADATA, type RefundFact, type ProviderEvidence } from './provider.js';
import type { RecordedFinding } from './findings-store.js';
import type { Finding, RepairPlan } from './judge/index.js';
import { upsertCharges } from './mirror.js';

/**
 * The refund outbox of `--refund-duplicates`. A slice commits, with its findings, one
 * intent per extra charge to refund. Then, and at the start of every later run, each
 * open intent is settled against Stripe: if Stripe already lists a refund carrying the
 * intent's key, it is recorded (no POST); otherwise the extra and the kept charge are
 * re-read, and only if the extra is still an identical, untouched duplicate of a
 * kept charge that still stands is the refund POSTed (with the same idempotency
 * key). The refund, the mirror's new read of the charge, the audit row and, once
 * every extra is refunded, the finding's `repaired` state commit together. A crash at
 * any point leaves an intent the next run finishes; a refund already made is never
 * POSTed again.
 */

export type RefundFinding = Finding & { repair: Extract<RepairPlan, { kind: 'refund_duplicates' }> };

export function isRefund(f: Finding): f is RefundFinding {
  return f.repair?.kind === 'refund_duplicates';
}

/** Deterministic per charge: every attempt at one refund sends the same key. */
export function refundIdempotencyKey(chargeId: string): string {
  return `sweeper_refund_v1_${chargeId}`;
}

/** Inside the slice's transaction: one intent per extra; a cancelled intent may be planned again. */
export async function recordRefundIntents(
  db: Queryable,
  args: { account: string; runId: string; now: Date; findings: RefundFinding[]; recorded: RecordedFinding[] },
): Promise<number> {
  const ids = new Map(args.recorded.map((r) => [findingKey(r.category, r.subject), r.id]));
  const rows = args.findings.flatMap((f) => {
    const findingId = ids.get(findingKey(f.category, f.subject));
    if (findingId === undefined) return [];
    return f.repair.refund
      .filter((c) => c.id !== f.repair.keep.id) // never the kept charge, whatever the plan says
      .map((c) => ({
        charge_id: c.id,
        kept_charge_id: f.repair.keep.id,
        finding_id: findingId,
        amount: c.amount - c.amountRefunded,
        currency: c.currency,
        idempotency_key: refundIdempotencyKey(c.id),
      }));
  });
  if (rows.length === 0) return 0;
  const result = await db.query(
    `INSERT INTO recon_refunds AS r (charge_id, account, kept_charge_id, finding_id, amount, currency, idempotency_key,
                                     state, run_id, created_at, updated_at)
     SELECT i.charge_id, $2, i.kept_charge_id, i.finding_id, i.amount, i.currency, i.idempotency_key, 'intent', $3, $4, $4
       FROM jsonb_to_recordset($1::jsonb) AS i(charge_id text, kept_charge_id text, finding_id bigint, amount bigint,
            currency text, idempotency_key text)
      WHERE i.amount > 0
     ON CONFLICT (charge_id) DO UPDATE
        SET state = 'intent', kept_charge_id = EXCLUDED.kept_charge_id, finding_id = EXCLUDED.finding_id,
            amount = EXCLUDED.amount, run_id = EXCLUDED.run_id, reason = NULL, updated_at = EXCLUDED.updated_at
      WHERE r.state = 'cancelled'`,
    [JSON.stringify(rows), args.account, args.runId, args.now],
  );
  return result.rowCount ?? 0;
}

interface Intent {
  charge_id: string;
  kept_charge_id: string;
  finding_id: number;
  amount: number;
  currency: string;
  idempotency_key: string;
}

export interface SettleArgs {
  pool: Pool;
  evidence: ProviderEvidence;
  account: string;
  runId: string;
  clock: () => Date;
  log: Logger;
  signal?: AbortSignal;
  /** Only the intents of these charges (a plan's refunds, src/plans/apply.ts); all the account's when absent. */
  chargeIds?: readonly string[];
  /** The audit's actor: the sweep, or the person applying a plan. */
  actor?: string;
  /** Crash tests: `refund:<charge>:posted` (Stripe refunded, nothing recorded yet). */
  faultPoint?: (name: string) => void | Promise<void>;
}

/** Settles every open intent of the account; returns how many findings became `repaired`. */
export async function settleRefundIntents(
  args: SettleArgs,
): Promise<{ refunded: number; cancelled: number; repairedFindings: number }> {
  const { rows: intents } = await args.pool.query<Intent>(
    `SELECT charge_id, kept_charge_id, finding_id, amount, currency, idempotency_key
       FROM recon_refunds WHERE account = $1 AND state = 'intent' AND ($2::text[] IS NULL OR charge_id = ANY($2))
      ORDER BY created_at, charge_id`,
    [args.account, args.chargeIds ?? null],
  );
  const totals = { refunded: 0, cancelled: 0, repairedFindings: 0 };
  for (const intent of intents) {
    args.signal?.throwIfAborted();
    const outcome = await settleOne(args, intent);
    await args.faultPoint?.(`refund:${intent.charge_id}:${outcome.kind === 'refunded' ? 'posted' : 'cancelled'}`);
    if (outcome.kind === 'refunded') totals.refunded += 1;
    else totals.cancelled += 1;
    totals.repairedFindings += await record(args, intent, outcome);
  }
  return totals;
}

type Outcome =
  | { kind: 'refunded'; refund: RefundFact; how: 'posted' | 'found'; charge: NormalizedCharge | null }
  | { kind: 'cancelled'; reason: string; charge: NormalizedCharge | null };

async function settleOne(args: SettleArgs, intent: Intent): Promise<Outcome> {
  const { evidence, account, signal } = args;
  const ours = async () =>
    (await evidence.refundsOf(account, intent.charge_id, signal)).find(
      (r) => r.metadata[REFUND_KEY_METADATA] === intent.idempotency_key && isRefundMade(r),
    );
  const found = await ours();
  if (found) return { kind: 'refunded', refund: found, how: 'found', charge: await reread(args, intent.charge_id) };
  // Stripe's own word before money moves: both charges as they are now.
  const unreadable: MalformedCharge[] = [];
  const charges = await evidence.chargesById(account, [intent.charge_id, intent.kept_charge_id], signal, (bad) =>
    unreadable.push(bad),
  );
  const extra = charges.find((c) => c.id === intent.charge_id) ?? null;
  const kept = charges.find((c) => c.id === intent.kept_charge_id) ?? null;
  // No money moves on a charge that cannot be read: the intent is cancelled, the finding stays open.
  const problem =
    unreadable.length > 0
      ? `Stripe returned ${unreadable.map((b) => `${b.id ?? 'a charge'} unreadable (${b.problem})`).join(', ')}`
      : whyNotNow(intent, extra, kept);
  if (problem) return { kind: 'cancelled', reason: problem, charge: extra };
  try {
    const refund = await evidence.refund(
      account,
      {
        chargeId: intent.charge_id,
        amount: intent.amount,
        idempotencyKey: intent.idempotency_key,
        metadata: {
          [REFUND_KEY_METADATA]: intent.idempotency_key,
          reason: 'duplicate_charge',
          kept_charge: intent.kept_charge_id,
        },
      },
      signal,
    );
    return { kind: 'refunded', refund, how: 'posted', charge: await reread(args, intent.charge_id) };
  } catch (error) {
    // The POST may have reached Stripe before failing here: look again before giving up.
    const after = await ours();
    if (after) return { kind: 'refunded', refund: after, how: 'found', charge: await reread(args, intent.charge_id) };
    throw error;
  }
}

/** Why the extra must not be refunded now; null when it still may. */
function whyNotNow(intent: Intent, extra: NormalizedCharge | null, kept: NormalizedCharge | null): string | null {
  if (!extra) return 'Stripe no longer has the extra charge';
  if (!kept) return 'Stripe no longer has the kept charge';
  return whyNotStanding(extra, kept) ?? whyNotTheSame(intent, extra, kept);
}

/** The kept charge must still stand, and the extra be money nobody has handled yet. */
function whyNotStanding(extra: NormalizedCharge, kept: NormalizedCharge): string | null {
  if (kept.status !== 'succeeded' || kept.refunded || kept.amountRefunded > 0)
    return 'the kept charge no longer stands (failed or refunded)';
  if (extra.amountRefunded > 0 || extra.refunded) return 'the extra charge was refunded at Stripe by someone else';
  if (extra.status !== 'succeeded' || !extra.captured) return 'the extra charge is not a captured, succeeded charge';
  if (extra.disputed) return 'the extra charge is disputed: the dispute decides';
  return null;
}

/** The extra must still be an identical duplicate of the kept charge, for the amount the intent recorded. */
function whyNotTheSame(intent: Intent, extra: NormalizedCharge, kept: NormalizedCharge): string | null {
  if (extra.amount !== kept.amount || extra.currency !== kept.currency || extra.amount !== intent.amount) {
    return 'amount or currency differ from the kept charge';
  }
  if (extra.customer !== kept.customer || extra.paymentMethod !== kept.paymentMethod)
    return 'customer or payment method differ';
  if (extra.tenantId !== kept.tenantId || extra.idempotencyKey !== kept.idempotencyKey)
    return 'the two charges no longer name the same key';
  return null;
}

async function reread(args: SettleArgs, chargeId: string): Promise<NormalizedCharge | null> {
  // Unreadable now: the mirror keeps its last good read.
  return (await args.evidence.chargesById(args.account, [chargeId], args.signal, () => undefined))[0] ?? null;
}

/** Intent, mirror, audit row and (once every extra is refunded) the finding, in one transaction. */
async function record(args: SettleArgs, intent: Intent, outcome: Outcome): Promise<number> {
  const now = args.clock();
  return inTransaction(args.pool, async (tx) => {
    if (outcome.charge) {
      const day = utcDay(new Date(outcome.charge.created * 1000));
      await ensureDayPartitions(tx, { from: day, to: day }, ['stripe_charges']);
      await upsertCharges(tx, [outcome.charge], now);
    }
    if (outcome.kind === 'cancelled') {
      await tx.query(
        `UPDATE recon_refunds SET state = 'cancelled', reason = $2, updated_at = $3 WHERE charge_id = $1 AND state = 'intent'`,
        [intent.charge_id, outcome.reason, now],
      );
      args.log.warn(
        { charge: intent.charge_id, reason: outcome.reason },
        'duplicate not refunded: it stays open for a person',
      );
      return 0;
    }
    const updated = await tx.query(
      `UPDATE recon_refunds SET state = 'refunded', stripe_refund_id = $2, reason = $3, updated_at = $4
        WHERE charge_id = $1 AND state = 'intent'`,
      [
        intent.charge_id,
        outcome.refund.id,
        outcome.how === 'found' ? 'found at Stripe: already refunded by an earlier attempt' : null,
        now,
      ],
    );
    if (updated.rowCount !== 1) return 0; // settled meanwhile by another run: its audit row stands
    await tx.query(
      `INSERT INTO recon_repairs (finding_id, run_id, action, before, after, actor, at)
       VALUES ($1, $2, 'refund_duplicate', $3, $4, $6, $5)`,
      [
        intent.finding_id,
        args.runId,
        JSON.stringify({ charge: intent.charge_id, kept: intent.kept_charge_id, amount_refunded: 0 }),
        JSON.stringify({
          refund: outcome.refund.id,
          amount: outcome.refund.amount,
          idempotency_key: intent.idempotency_key,
          how: outcome.how,
        }),
        now,
        args.actor ?? 'sweeper',
      ],
    );
    // Repaired once no intent of it is open or cancelled, and nothing was left for a person.
    const { rowCount } = await tx.query(
      `UPDATE recon_findings f SET state = 'repaired', closed_at = $2, closed_by = $4, last_seen_run = $3
        WHERE f.id = $1 AND f.state = 'open'
          AND coalesce(jsonb_array_length(f.details->'not_refundable'), 0) = 0
          AND NOT EXISTS (SELECT 1 FROM recon_refunds r WHERE r.finding_id = f.id AND r.state <> 'refunded')`,
      [intent.finding_id, now, args.runId, args.actor ?? 'sweeper'],
    );
    args.log.info(
      forOperator({ charge: intent.charge_id, refund: outcome.refund.id, how: outcome.how }),
      'duplicate charge refunded',
    );
    return rowCount ?? 0;
  });
}
