import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { Queryable } from '../db/pool.js';
import { redact } from '../secrets.js';
import { evidenceAtSql } from '../sweep/evidence-time.js';
import { terminalSafe, terminalSafeJson } from '../terminal-text.js';

export interface ReportFilter {
  status?: string;
  category?: string;
  account?: string;
  /** Findings last seen at or after this instant. */
  since?: Date;
}

/**
 * One row per finding, with the facts a person needs to act on it. The charge columns
 * describe the finding's charge; for a `duplicate_charge`, the kept one (`charge_id`),
 * and `live_charges` says how many live charges name the key (blank for the other
 * categories). `evidence_at` is when the charge (else the payment row, else the claim)
 * was created (src/sweep/evidence-time.ts); `first_seen_at` is when the sweep found it.
 */
export const REPORT_COLUMNS = [
  'id',
  'category',
  'state',
  'account',
  'charge_id',
  'tenant_id',
  'idempotency_key',
  'reference',
  'charge_amount',
  'effect_amount',
  'amount_refunded',
  'currency',
  'live_charges',
  'charge_status',
  'evidence_at',
  'first_seen_at',
  'last_seen_at',
  'first_seen_run',
  'last_seen_run',
  'repair',
  'closed_by',
  'note',
  'reason',
] as const;
export type ReportRow = Record<(typeof REPORT_COLUMNS)[number], string | number | null>;

/**
 * The finding's charge, as its details summarise it (src/sweep/judge/build.ts): its own,
 * or a duplicate's kept one among its live charges; NULL when it names none.
 */
export function findingChargeSql(alias: string): string {
  const d = `${alias}.details`;
  return `coalesce(${d} -> 'charge', (
             SELECT e FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${d} -> 'charges') = 'array' THEN ${d} -> 'charges' ELSE '[]'::jsonb END) e
              WHERE e ->> 'id' = ${d} ->> 'kept' LIMIT 1))`;
}

const PAGE = 2_000;

/** Whether any run or finding names the account: a report filtered on one nothing names is a typo, not an empty answer. */
export async function accountIsRecorded(db: Queryable, account: string): Promise<boolean> {
  const { rows } = await db.query<{ known: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM recon_findings WHERE account = $1)
         OR EXISTS (SELECT 1 FROM recon_runs WHERE account = $1) AS known`,
    [account],
  );
  return rows[0]?.known === true;
}

/**
 * Keyset pagination by id: each query holds at most PAGE rows, so memory stays flat
 * however many findings there are, and no transaction or cursor is held open while
 * a slow consumer reads.
 */
export async function* findingRows(db: Queryable, filter: ReportFilter): AsyncGenerator<ReportRow> {
  let after = 0;
  for (;;) {
    const { rows } = await db.query<ReportRow & { id: number }>(
      `SELECT f.id, f.category, f.state, f.account, f.charge_id, f.tenant_id, f.idempotency_key, f.reference,
              (ch.c ->> 'amount')::bigint AS charge_amount,
              (f.details #>> '{effect,amount}')::bigint AS effect_amount,
              coalesce(ch.c ->> 'amount_refunded', f.details #>> '{effect,amount_refunded}')::bigint AS amount_refunded,
              coalesce(ch.c ->> 'currency', f.details #>> '{effect,currency}') AS currency,
              CASE WHEN jsonb_typeof(f.details -> 'count') = 'number' THEN (f.details ->> 'count')::int END AS live_charges,
              ch.c ->> 'status' AS charge_status,
              to_char(${evidenceAtSql('f')} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS evidence_at,
              to_char(f.first_seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS first_seen_at,
              to_char(f.last_seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_seen_at,
              f.first_seen_run, f.last_seen_run,
              (SELECT r.action FROM recon_repairs r WHERE r.finding_id = f.id AND r.actor = 'sweeper'
                ORDER BY r.id DESC LIMIT 1) AS repair,
              f.closed_by, f.note, f.details ->> 'reason' AS reason
         FROM recon_findings f
         CROSS JOIN LATERAL (SELECT ${findingChargeSql('f')} AS c) ch
        WHERE f.id > $1
          AND ($2::text IS NULL OR f.state = $2)
          AND ($3::text IS NULL OR f.category = $3)
          AND ($4::text IS NULL OR f.account = $4)
          AND ($5::timestamptz IS NULL OR f.last_seen_at >= $5)
        ORDER BY f.id
        LIMIT ${PAGE}`,
      [after, filter.status ?? null, filter.category ?? null, filter.account ?? null, filter.since ?? null],
    );
    for (const row of rows) yield row;
    if (rows.length < PAGE) return;
    after = rows[rows.length - 1]!.id as number;
  }
}

/** Streams the report to `out` with backpressure; returns the number of rows written. */
export async function writeReport(
  db: Queryable,
  filter: ReportFilter,
  format: 'csv' | 'json',
  out: Writable,
): Promise<number> {
  let count = 0;
  if (format === 'csv') {
    const csv = stringify({ header: true, columns: [...REPORT_COLUMNS] });
    const produce = async () => {
      for await (const row of findingRows(db, filter)) {
        count += 1;
        if (!csv.write(mapStrings(row, csvCell))) await once(csv, 'drain');
      }
      csv.end();
    };
    // pipeline() owns both streams' errors (a closed reader, a file that cannot be
    // written): they reject here instead of escaping as uncaught exceptions.
    await Promise.all([pipeline(csv, out, { end: false }), produce()]);
    return count;
  }
  await write(out, '[');
  for await (const row of findingRows(db, filter)) {
    await write(out, `${count === 0 ? '\n' : ',\n'}${terminalSafeJson(JSON.stringify(mapStrings(row, redact)))}`);
    count += 1;
  }
  await write(out, count === 0 ? ']\n' : '\n]\n');
  return count;
}

/**
 * A cell a spreadsheet would run as a formula starts with one of these (OWASP "CSV
 * Injection"): such a cell gets a leading single quote, which spreadsheets show as
 * text. Only text cells: the amount columns are numbers (a negative amount stays a
 * number, which no spreadsheet evaluates), so they are left as they are.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * A text cell of the CSV: secrets redacted, control characters escaped (CSV has no
 * escape of its own, so they are shown as `\x1b`), formulas neutralised.
 */
export function csvCell(text: string): string {
  const safe = terminalSafe(redact(text));
  return FORMULA_START.test(safe) ? `'${safe}` : safe;
}

function mapStrings(row: ReportRow, fn: (text: string) => string): ReportRow {
  const out = {} as ReportRow;
  for (const [key, value] of Object.entries(row) as Array<[keyof ReportRow, ReportRow[keyof ReportRow]]>) {
    out[key] = typeof value === 'string' ? fn(value) : value;
  }
  return out;
}

async function write(out: Writable, chunk: string): Promise<void> {
  // A reader that went away: stop producing (the caller treats EPIPE as an end).
  if (out.destroyed) throw Object.assign(new Error('output closed'), { code: 'EPIPE' });
  if (!out.write(chunk)) await once(out, 'drain');
}
