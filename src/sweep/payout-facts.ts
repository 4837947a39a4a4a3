import type { Queryable } from '../db/pool.js';
import type { NormalizedBalanceTransaction, NormalizedPayout } from './provider.js';
import type {
  FeeRecord,
  PayoutFact,
  PayoutHistory,
  PayoutLinks,
  PayoutStatus,
  PayoutSums,
  PayoutTransactionFact,
  UnpaidPayment,
} from './judge/payouts.js';

/**
 * What the payouts step reads and writes (docs/judgement.md "Payouts and fees"): the
 * payouts and balance transactions mirrors (stripe_payouts, stripe_balance_transactions),
 * the reconciled payouts (recon_payouts), the account's payout state
 * (recon_payout_accounts), and the payment and refund rows a payout's transactions name,
 * each with set-based statements.
 */

export function payoutFact(p: NormalizedPayout, account: string): PayoutFact {
  return {
    id: p.id,
    account,
    created: new Date(p.created * 1000),
    arrivalDate: new Date(p.arrivalDate * 1000),
    amount: p.amount,
    currency: p.currency,
    automatic: p.automatic,
    status: p.status,
    reconciliationStatus: p.reconciliationStatus,
    failureCode: p.failureCode,
  };
}

export function transactionFact(t: NormalizedBalanceTransaction): PayoutTransactionFact {
  return {
    id: t.id,
    type: t.type,
    reportingCategory: t.reportingCategory,
    amount: t.amount,
    fee: t.fee,
    net: t.net,
    currency: t.currency,
    exchangeRate: t.exchangeRate,
    sourceId: t.sourceId,
    sourceChargeId: t.sourceChargeId,
  };
}

/** The account's payout state: since when payouts are reconciled, how far old payments were judged. */
export interface PayoutAccountState {
  since: Date;
  unpaidJudgedTo: Date;
  listedAt: Date;
}

export async function readPayoutAccount(db: Queryable, account: string): Promise<PayoutAccountState | null> {
  const { rows } = await db.query<{ since: Date; unpaid_judged_to: Date; listed_at: Date }>(
    `SELECT since, unpaid_judged_to, listed_at FROM recon_payout_accounts WHERE account = $1`,
    [account],
  );
  const row = rows[0];
  return row ? { since: row.since, unpaidJudgedTo: row.unpaid_judged_to, listedAt: row.listed_at } : null;
}

/** One account's payout state as a run notes it. */
export type PayoutAccountNote = PayoutAccountState & { account: string; runId: string };

/**
 * Notes accounts' payout state, one row or a group's (quiet.ts) in one statement: `since`
 * only ever moves back (a backfill), the unpaid cursor and the last listing only forward.
 */
export async function notePayoutAccounts(db: Queryable, notes: readonly PayoutAccountNote[], now: Date): Promise<void> {
  if (notes.length === 0) return;
  await db.query(
    `INSERT INTO recon_payout_accounts AS a (account, since, unpaid_judged_to, listed_at, run_id, updated_at)
     SELECT t.account, t.since, t.unpaid_judged_to, t.listed_at, t.run_id, $6
       FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[], $5::text[])
            AS t(account, since, unpaid_judged_to, listed_at, run_id)
     ON CONFLICT (account) DO UPDATE
        SET since = LEAST(a.since, EXCLUDED.since),
            unpaid_judged_to = GREATEST(a.unpaid_judged_to, EXCLUDED.unpaid_judged_to),
            listed_at = GREATEST(a.listed_at, EXCLUDED.listed_at), run_id = EXCLUDED.run_id, updated_at = EXCLUDED.updated_at`,
    [
      notes.map((n) => n.account),
      notes.map((n) => n.since),
      notes.map((n) => n.unpaidJudgedTo),
      notes.map((n) => n.listedAt),
      notes.map((n) => n.runId),
      now,
    ],
  );
}

/**
 * The oldest payout of the account still awaited: automatic, neither failed nor canceled,
 * not reconciled yet. The listing reaches back to it, whatever SWEEPER_PAYOUT_GRACE says.
 */
export async function oldestAwaitedPayout(db: Queryable, account: string): Promise<Date | null> {
  const { rows } = await db.query<{ created: Date | null }>(
    `SELECT min(p.created) AS created FROM stripe_payouts p
      WHERE p.account = $1 AND p.automatic AND p.status NOT IN ('failed', 'canceled')
        AND NOT EXISTS (SELECT 1 FROM recon_payouts r WHERE r.payout_id = p.payout_id)`,
    [account],
  );
  return rows[0]?.created ?? null;
}

/**
 * What the sweep knew of these payouts before this read: read before the mirror is written.
 * A manual payout's record (not itemised) is no reconciliation.
 */
export async function payoutHistories(db: Queryable, ids: readonly string[]): Promise<Map<string, PayoutHistory>> {
  const { rows } = await db.query<{ id: string; status: PayoutStatus | null; reconciled: boolean }>(
    `SELECT i.id, coalesce(r.status, m.status) AS status, coalesce(r.itemised, false) AS reconciled
       FROM unnest($1::text[]) AS i(id)
       LEFT JOIN stripe_payouts m ON m.payout_id = i.id
       LEFT JOIN recon_payouts r ON r.payout_id = i.id`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, { status: r.status, reconciled: r.reconciled }]));
}

/** Lands payouts in the mirror; a version read earlier than the one there never overwrites it. */
export async function mirrorPayouts(
  db: Queryable,
  account: string,
  payouts: readonly PayoutFact[],
  fetchedAt: Date,
): Promise<void> {
  if (payouts.length === 0) return;
  await db.query(
    `INSERT INTO stripe_payouts AS m (account, payout_id, created, arrival_date, amount, currency, automatic, status,
                                     reconciliation_status, failure_code, fetched_at)
     SELECT $1, p.id, p.created, p.arrival_date, p.amount, p.currency, p.automatic, p.status, p.reconciliation_status,
            p.failure_code, $3
       FROM jsonb_to_recordset($2::jsonb) AS p(id text, created timestamptz, arrival_date timestamptz, amount bigint,
            currency text, automatic boolean, status text, reconciliation_status text, failure_code text)
     ON CONFLICT (payout_id) DO UPDATE
        SET status = EXCLUDED.status, reconciliation_status = EXCLUDED.reconciliation_status,
            failure_code = EXCLUDED.failure_code, arrival_date = EXCLUDED.arrival_date, fetched_at = EXCLUDED.fetched_at
      WHERE m.fetched_at <= EXCLUDED.fetched_at`,
    [
      account,
      JSON.stringify(
        payouts.map((p) => ({
          id: p.id,
          created: p.created.toISOString(),
          arrival_date: p.arrivalDate.toISOString(),
          amount: p.amount,
          currency: p.currency,
          automatic: p.automatic,
          status: p.status,
          reconciliation_status: p.reconciliationStatus,
          failure_code: p.failureCode,
        })),
      ),
      fetchedAt,
    ],
  );
}

/** A reconciled payout's last status, and manual payouts recorded once, as not itemised. */
export async function recordPayoutStatuses(
  db: Queryable,
  args: { account: string; payouts: readonly PayoutFact[]; runId: string; now: Date },
): Promise<number> {
  if (args.payouts.length === 0) return 0;
  const input = JSON.stringify(
    args.payouts.map((p) => ({
      id: p.id,
      automatic: p.automatic,
      status: p.status,
      created: p.created.toISOString(),
      arrival_date: p.arrivalDate.toISOString(),
      currency: p.currency,
      amount: p.amount,
    })),
  );
  await db.query(
    `UPDATE recon_payouts r SET status = p.status, updated_at = $2
       FROM jsonb_to_recordset($1::jsonb) AS p(id text, status text)
      WHERE r.payout_id = p.id AND r.status <> p.status`,
    [input, args.now],
  );
  const { rowCount } = await db.query(
    `INSERT INTO recon_payouts (payout_id, account, itemised, created, arrival_date, currency, amount, status, run_id,
                                reconciled_at, updated_at)
     SELECT p.id, $2, false, p.created, p.arrival_date, p.currency, p.amount, p.status, $3, $4, $4
       FROM jsonb_to_recordset($1::jsonb) AS p(id text, automatic boolean, status text, created timestamptz,
            arrival_date timestamptz, currency text, amount bigint)
      WHERE NOT p.automatic
     ON CONFLICT (payout_id) DO NOTHING`,
    [input, args.account, args.runId, args.now],
  );
  return rowCount ?? 0;
}

/** Transactions landed per statement (a payout of many thousands in a few). */
const MIRROR_BATCH = 5_000;

export async function mirrorTransactions(
  db: Queryable,
  args: { account: string; payoutId: string; txns: readonly NormalizedBalanceTransaction[]; fetchedAt: Date },
): Promise<void> {
  for (let at = 0; at < args.txns.length; at += MIRROR_BATCH) {
    const batch = args.txns.slice(at, at + MIRROR_BATCH).map((t) => ({
      id: t.id,
      type: t.type,
      reporting_category: t.reportingCategory,
      amount: t.amount,
      fee: t.fee,
      net: t.net,
      currency: t.currency,
      exchange_rate: t.exchangeRate,
      source_id: t.sourceId,
      source_charge_id: t.sourceChargeId,
      created: t.created,
    }));
    await db.query(
      `INSERT INTO stripe_balance_transactions AS m (account, txn_id, payout_id, type, reporting_category, amount, fee, net,
                                                    currency, exchange_rate, source_id, source_charge_id, created, fetched_at)
       SELECT $1, t.id, $2, t.type, t.reporting_category, t.amount, t.fee, t.net, t.currency, t.exchange_rate, t.source_id,
              t.source_charge_id, to_timestamp(t.created), $4
         FROM jsonb_to_recordset($3::jsonb) AS t(id text, type text, reporting_category text, amount bigint, fee bigint,
              net bigint, currency text, exchange_rate numeric, source_id text, source_charge_id text, created bigint)
       ON CONFLICT (txn_id) DO UPDATE
          SET payout_id = EXCLUDED.payout_id, fetched_at = EXCLUDED.fetched_at
        WHERE m.fetched_at <= EXCLUDED.fetched_at`,
      [args.account, args.payoutId, JSON.stringify(batch), args.fetchedAt],
    );
  }
}

/** Which charges (payment rows) and refunds (refund rows) the payout's transactions name exist on the account. */
export async function loadPayoutLinks(
  db: Queryable,
  account: string,
  txns: readonly PayoutTransactionFact[],
): Promise<PayoutLinks> {
  const charges = [...new Set(txns.flatMap((t) => [t.type === 'charge' ? t.sourceId : null, t.sourceChargeId]))].filter(
    (id): id is string => id !== null,
  );
  const refunds = [...new Set(txns.filter((t) => t.type.startsWith('refund')).map((t) => t.sourceId))].filter(
    (id): id is string => id !== null,
  );
  const { rows } = await db.query<{ kind: 'payment' | 'refund'; id: string }>(
    `SELECT 'payment' AS kind, charge_id AS id FROM payments WHERE account = $1 AND charge_id = ANY($2::text[])
     UNION ALL
     SELECT 'refund', refund_id FROM payment_refunds WHERE account = $1 AND refund_id = ANY($3::text[])`,
    [account, charges, refunds],
  );
  return {
    payments: new Set(rows.filter((r) => r.kind === 'payment').map((r) => r.id)),
    refunds: new Set(rows.filter((r) => r.kind === 'refund').map((r) => r.id)),
  };
}

/** Each payment row records its charge's fee, net, settlement currency and exchange rate. */
export async function recordFees(db: Queryable, account: string, fees: readonly FeeRecord[]): Promise<number> {
  if (fees.length === 0) return 0;
  const { rowCount } = await db.query(
    `UPDATE payments p SET fee = f.fee, net = f.net, settlement_currency = f.settlement_currency,
            exchange_rate = f.exchange_rate
       FROM jsonb_to_recordset($2::jsonb) AS f(charge_id text, fee bigint, net bigint, settlement_currency text,
            exchange_rate numeric)
      WHERE p.account = $1 AND p.charge_id = f.charge_id
        AND (p.fee, p.net, p.settlement_currency, p.exchange_rate)
            IS DISTINCT FROM (f.fee, f.net, f.settlement_currency, f.exchange_rate)`,
    [
      account,
      JSON.stringify(
        fees.map((f) => ({
          charge_id: f.chargeId,
          fee: f.fee,
          net: f.net,
          settlement_currency: f.settlementCurrency,
          exchange_rate: f.exchangeRate,
        })),
      ),
    ],
  );
  return rowCount ?? 0;
}

export async function recordReconciled(
  db: Queryable,
  args: { payout: PayoutFact; sums: PayoutSums; runId: string; now: Date },
): Promise<void> {
  const { payout: p, sums: s } = args;
  await db.query(
    `INSERT INTO recon_payouts (payout_id, account, itemised, created, arrival_date, currency, amount, status,
                                transactions, charges, refunds, disputes, fees, other, net, residual, run_id,
                                reconciled_at, updated_at)
     VALUES ($1, $2, true, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $17)
     ON CONFLICT (payout_id) DO NOTHING`,
    [
      p.id,
      p.account,
      p.created,
      p.arrivalDate,
      p.currency,
      p.amount,
      p.status,
      s.transactions,
      s.charges,
      s.refunds,
      s.disputes,
      s.fees,
      s.other,
      s.net,
      s.residual,
      args.runId,
      args.now,
    ],
  );
}

/**
 * Succeeded payments no mirrored payout transaction holds: those created in `window` (older
 * than the grace), and those with an open unpaid_effect finding (still unpaid, or healed).
 * Only on an account with an automatic payout in the mirror.
 */
export async function loadUnpaidPayments(
  db: Queryable,
  args: { account: string; window: { from: Date; to: Date }; reopen: readonly string[] },
): Promise<UnpaidPayment[]> {
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT p.charge_id, p.tenant_id, p.idempotency_key, p.amount::float8 AS amount, p.currency, p.created_at
       FROM payments p
      WHERE p.account = $1 AND p.status = 'succeeded' AND p.amount > 0
        AND ((p.created_at >= $2 AND p.created_at < $3) OR p.charge_id = ANY($4::text[]))
        AND EXISTS (SELECT 1 FROM stripe_payouts o WHERE o.account = $1 AND o.automatic)
        AND NOT EXISTS (SELECT 1 FROM stripe_balance_transactions t
                         WHERE t.source_id = p.charge_id AND t.account = $1 AND t.type = 'charge')
      ORDER BY p.created_at, p.charge_id`,
    [args.account, args.window.from, args.window.to, args.reopen],
  );
  return rows.map((r) => ({
    chargeId: r.charge_id as string,
    tenantId: (r.tenant_id as string | null) ?? null,
    key: (r.idempotency_key as string | null) ?? null,
    amount: Number(r.amount),
    currency: (r.currency as string).trim(),
    createdAt: r.created_at as Date,
  }));
}

/** The charges of the account's open unpaid_effect findings. */
export async function openUnpaidSubjects(db: Queryable, account: string): Promise<string[]> {
  const { rows } = await db.query<{ subject: string }>(
    `SELECT subject FROM recon_findings WHERE account = $1 AND category = 'unpaid_effect' AND state = 'open'`,
    [account],
  );
  return rows.map((r) => r.subject);
}
