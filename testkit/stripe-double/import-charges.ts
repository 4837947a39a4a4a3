import { parse as parseCsv } from 'csv-parse/sync';
import { emitChargeCreated } from './changes.js';
import { listOrder, type ChargeRecord, type ChargeStatus } from './charge-store.js';
import type { DoubleState } from './state.js';

/**
 * Bulk seeding from data: charges given one by one (a JSON lines or CSV file on the
 * command line, `POST /_double/charges`, `importCharges()`), so nobody writes a script to
 * load 60,000 charges. Field names are the API's (a charge as `GET /v1/charges` renders it
 * is accepted, extra fields ignored), plus `account` (a connected account id; none: the
 * platform). Only `amount` is required: `created` defaults to the double's clock.
 */
export interface ChargeImport {
  id?: string;
  /** `acct_…`, or null/'' for the platform. */
  account?: string | null;
  /** Unix seconds, or an ISO 8601 instant. */
  created?: number | string;
  amount: number;
  currency?: string;
  status?: ChargeStatus;
  captured?: boolean;
  amount_refunded?: number;
  disputed?: boolean;
  description?: string | null;
  customer?: string | null;
  payment_method?: string | null;
  metadata?: Record<string, string> | null;
}

export interface ImportOptions {
  /** Also store each charge's creation event (`charge.succeeded`, …), dated at its `created`. Default false. */
  events?: boolean;
}

export interface ImportResult {
  count: number;
  /** Charges per account (`platform` for none). */
  accounts: Record<string, number>;
  /** Unix seconds of the oldest and newest charge imported; null when none. */
  from: number | null;
  to: number | null;
}

export type ChargeFormat = 'ndjson' | 'csv';

/** `.csv` / `text/csv` is CSV; anything else JSON: one charge per line, or one JSON array. */
export function chargeFormatOf(nameOrContentType: string | undefined): ChargeFormat {
  return /(^|[./])csv\b/i.test(nameOrContentType ?? '') ? 'csv' : 'ndjson';
}

/** Thrown for bad input, naming the line; the HTTP endpoint answers it with a 400. */
export class ChargeImportError extends Error {}

/**
 * Parses charges. JSON: one object per line (blank lines skipped), or a single JSON array.
 * CSV: a header row of field names; `metadata.<key>` columns fill the metadata (an empty
 * cell leaves the key out); empty cells are unset.
 */
export function parseCharges(text: string, format: ChargeFormat): ChargeImport[] {
  if (format === 'csv') {
    let rows: Array<Record<string, string>>;
    try {
      rows = parseCsv(text, { columns: true, skip_empty_lines: true, trim: true, bom: true }) as Array<
        Record<string, string>
      >;
    } catch (error) {
      throw new ChargeImportError(`CSV: ${(error as Error).message}`);
    }
    return rows.map((row, i) => fromCsvRow(row, i + 2));
  }
  const trimmed = text.trimStart();
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (error) {
      throw new ChargeImportError(`JSON array: ${(error as Error).message}`);
    }
    if (!Array.isArray(parsed)) throw new ChargeImportError('expected a JSON array of charges');
    return parsed.map((value, i) => checked(value, `charge ${i}`));
  }
  const charges: ChargeImport[] = [];
  let line = 0;
  for (const raw of text.split('\n')) {
    line += 1;
    if (raw.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new ChargeImportError(`line ${line}: ${(error as Error).message}`);
    }
    charges.push(checked(value, `line ${line}`));
  }
  return charges;
}

function fromCsvRow(row: Record<string, string>, line: number): ChargeImport {
  const value: Record<string, unknown> = {};
  const metadata: Record<string, string> = {};
  for (const [column, cell] of Object.entries(row)) {
    if (cell === '') continue;
    if (column.startsWith('metadata.')) metadata[column.slice('metadata.'.length)] = cell;
    else if (['amount', 'amount_refunded'].includes(column) || (column === 'created' && /^\d+$/.test(cell)))
      value[column] = Number(cell);
    else if (['captured', 'disputed'].includes(column)) value[column] = cell === 'true';
    else value[column] = cell;
  }
  if (Object.keys(metadata).length > 0) value.metadata = metadata;
  return checked(value, `line ${line}`);
}

const STATUSES: readonly string[] = ['succeeded', 'failed', 'pending'];

function checked(value: unknown, where: string): ChargeImport {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ChargeImportError(`${where}: expected a charge object`);
  const c = value as Record<string, unknown>;
  const fail = (what: string) => new ChargeImportError(`${where}: ${what}`);
  if (!Number.isSafeInteger(c.amount) || (c.amount as number) < 0)
    throw fail('amount must be a non-negative integer (the smallest currency unit)');
  if (c.id !== undefined && (typeof c.id !== 'string' || c.id === '')) throw fail('id must be a non-empty string');
  if (c.status !== undefined && !STATUSES.includes(c.status as string))
    throw fail(`status must be one of ${STATUSES.join(', ')}`);
  if (
    c.created !== undefined &&
    !(typeof c.created === 'number'
      ? Number.isFinite(c.created)
      : typeof c.created === 'string' && Number.isFinite(Date.parse(c.created)))
  ) {
    throw fail('created must be unix seconds or an ISO 8601 instant');
  }
  if (
    c.amount_refunded !== undefined &&
    (!Number.isSafeInteger(c.amount_refunded) ||
      (c.amount_refunded as number) < 0 ||
      (c.amount_refunded as number) > (c.amount as number))
  ) {
    throw fail('amount_refunded must be an integer between 0 and amount');
  }
  if (c.metadata !== undefined && c.metadata !== null) {
    if (
      typeof c.metadata !== 'object' ||
      Array.isArray(c.metadata) ||
      Object.values(c.metadata).some((v) => typeof v !== 'string')
    )
      throw fail('metadata must map keys to strings');
  }
  if (c.account !== undefined && c.account !== null && typeof c.account !== 'string')
    throw fail('account must be a string');
  return c as unknown as ChargeImport;
}

/**
 * Adds the charges to the double, all or none: ids must be new (given ones checked
 * first); each account's batch is sorted once and merged into its list (no per-charge
 * insertion), so 60,000 charges take a fraction of a second.
 */
export function importCharges(
  state: DoubleState,
  charges: readonly ChargeImport[],
  options: ImportOptions = {},
): ImportResult {
  const now = state.clock.nowSeconds();
  const seen = new Set<string>();
  for (const [i, c] of charges.entries()) {
    if (c.id === undefined) continue;
    if (seen.has(c.id) || state.charges.get(c.id))
      throw new ChargeImportError(`charge ${i}: id ${c.id} already exists`);
    seen.add(c.id);
  }
  const byAccount = new Map<string | null, ChargeRecord[]>();
  const accounts: Record<string, number> = {};
  let from: number | null = null;
  let to: number | null = null;
  for (const c of charges) {
    const status = c.status ?? 'succeeded';
    const captured = c.captured ?? status === 'succeeded';
    const created =
      c.created === undefined
        ? now
        : typeof c.created === 'number'
          ? Math.floor(c.created)
          : Math.floor(Date.parse(c.created) / 1000);
    const account = c.account || null;
    let id = c.id;
    if (id === undefined) {
      do id = state.newId('ch');
      while (seen.has(id) || state.charges.get(id));
      seen.add(id);
    }
    const failed = status === 'failed';
    const record: ChargeRecord = {
      id,
      account,
      created,
      amount: c.amount,
      amountCaptured: captured ? c.amount : 0,
      amountRefunded: c.amount_refunded ?? 0,
      currency: (c.currency ?? 'usd').toLowerCase(),
      status,
      captured,
      disputed: c.disputed ?? false,
      paymentIntent: null,
      paymentMethod: c.payment_method ?? 'pm_card_visa',
      customer: c.customer ?? null,
      description: c.description ?? null,
      metadata: Object.freeze({ ...(c.metadata ?? {}) }),
      failureCode: failed ? 'card_declined' : null,
      failureMessage: failed ? 'Your card was declined.' : null,
      declineCode: failed ? 'generic_decline' : null,
    };
    let batch = byAccount.get(account);
    if (!batch) byAccount.set(account, (batch = []));
    batch.push(record);
    accounts[account ?? 'platform'] = (accounts[account ?? 'platform'] ?? 0) + 1;
    from = from === null ? created : Math.min(from, created);
    to = to === null ? created : Math.max(to, created);
  }
  for (const [account, batch] of byAccount) {
    batch.sort(listOrder);
    state.charges.insertSorted(account, batch);
    state.accounts.touch(account, now);
    if (options.events)
      for (let i = batch.length - 1; i >= 0; i -= 1) emitChargeCreated(state, batch[i] as ChargeRecord, undefined);
  }
  return { count: charges.length, accounts, from, to };
}
