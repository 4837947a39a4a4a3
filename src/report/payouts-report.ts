import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { Queryable } from '../db/pool.js';
import { terminalSafeJson } from '../terminal-text.js';
import { csvCell } from './findings-report.js';

/**
 * `sweeper report payouts`: one row per payout the sweep recorded (recon_payouts), by
 * arrival date, with what it paid out by kind in its currency's smallest unit (docs/cli.md
 * "report payouts"): charges, refunds (failed refunds back), disputes (won back), Stripe's
 * fees (positive, subtracted), other (adjustments, transfers, returned payouts), the net,
 * the payout's amount and the residual (amount − net; 0 when it reconciles). A manual
 * payout, which Stripe cannot itemise, has `itemised` false and empty sums.
 */
export const PAYOUT_REPORT_COLUMNS = [
  'id',
  'account',
  'arrival_date',
  'created',
  'status',
  'currency',
  'itemised',
  'transactions',
  'charges',
  'refunds',
  'disputes',
  'fees',
  'other',
  'net',
  'payout_amount',
  'residual',
] as const;
export type PayoutReportRow = Record<(typeof PAYOUT_REPORT_COLUMNS)[number], string | number | boolean | null>;

export interface PayoutReportFilter {
  /** Payouts arriving at or after this instant. */
  from?: Date;
  /** Payouts arriving before this instant. */
  to?: Date;
  account?: string;
}

const PAGE = 2_000;
const UTC = `'YYYY-MM-DD"T"HH24:MI:SS"Z"'`;

/** Keyset pagination by (arrival date, id): memory stays flat, no transaction is held while a reader is slow. */
export async function* payoutRows(db: Queryable, filter: PayoutReportFilter): AsyncGenerator<PayoutReportRow> {
  type Page = Array<PayoutReportRow & { arrival: Date }>;
  const after: { arrival: Date | null; id: string | null } = { arrival: null, id: null };
  for (;;) {
    const { rows } = await db.query<PayoutReportRow & { arrival: Date }>(
      `SELECT payout_id AS id, account, to_char(arrival_date AT TIME ZONE 'UTC', ${UTC}) AS arrival_date,
              to_char(created AT TIME ZONE 'UTC', ${UTC}) AS created, status, currency, itemised, transactions,
              charges::float8 AS charges, refunds::float8 AS refunds, disputes::float8 AS disputes,
              fees::float8 AS fees, other::float8 AS other, net::float8 AS net, amount::float8 AS payout_amount,
              residual::float8 AS residual, arrival_date AS arrival
         FROM recon_payouts
        WHERE ($1::timestamptz IS NULL OR arrival_date >= $1) AND ($2::timestamptz IS NULL OR arrival_date < $2)
          AND ($3::text IS NULL OR account = $3)
          AND ($4::timestamptz IS NULL OR (arrival_date, payout_id) > ($4, $5::text))
        ORDER BY arrival_date, payout_id
        LIMIT ${PAGE}`,
      [filter.from ?? null, filter.to ?? null, filter.account ?? null, after.arrival, after.id],
    );
    const page: Page = rows;
    for (const row of page) yield withoutKey({ ...row, currency: String(row.currency).trim() });
    const last = page.at(-1);
    if (page.length < PAGE || !last) return;
    after.arrival = last.arrival;
    after.id = last.id as string;
  }
}

function withoutKey(row: PayoutReportRow & { arrival?: Date }): PayoutReportRow {
  delete row.arrival;
  return row;
}

/** Streams the report to `out` with backpressure; returns the number of rows written. */
export async function writePayoutReport(
  db: Queryable,
  filter: PayoutReportFilter,
  format: 'csv' | 'json',
  out: Writable,
): Promise<number> {
  let count = 0;
  if (format === 'csv') {
    const csv = stringify({ header: true, columns: [...PAYOUT_REPORT_COLUMNS], cast: { boolean: (v) => String(v) } });
    const produce = async () => {
      for await (const row of payoutRows(db, filter)) {
        count += 1;
        const cells = Object.fromEntries(
          Object.entries(row).map(([k, v]) => [k, typeof v === 'string' ? csvCell(v) : v]),
        );
        if (!csv.write(cells)) await once(csv, 'drain');
      }
      csv.end();
    };
    await Promise.all([pipeline(csv, out, { end: false }), produce()]);
    return count;
  }
  await write(out, '[');
  for await (const row of payoutRows(db, filter)) {
    await write(out, `${count === 0 ? '\n' : ',\n'}${terminalSafeJson(JSON.stringify(row))}`);
    count += 1;
  }
  await write(out, count === 0 ? ']\n' : '\n]\n');
  return count;
}

async function write(out: Writable, chunk: string): Promise<void> {
  if (out.destroyed) throw Object.assign(new Error('output closed'), { code: 'EPIPE' });
  if (!out.write(chunk)) await once(out, 'drain');
}
