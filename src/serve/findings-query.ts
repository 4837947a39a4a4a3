import type { Queryable } from '../db/pool.js';
import { findingChargeSql } from '../report/findings-report.js';
import { FINDING_CATEGORY_DEFINITIONS, type FindingCategory } from '../sweep/categories.js';
import { evidenceAtSql } from '../sweep/evidence-time.js';
import { formatDuration, parseDuration } from '../time/duration.js';
import { parseMajorAmount, THREE_DECIMAL_CURRENCIES, ZERO_DECIMAL_CURRENCIES } from './money.js';

/** The states a finding can be in (recon_findings.state). */
export const FINDING_STATES = ['open', 'repaired', 'resolved', 'ignored'] as const;
export type FindingState = (typeof FINDING_STATES)[number];

export const FINDING_CATEGORY_NAMES = Object.keys(FINDING_CATEGORY_DEFINITIONS) as FindingCategory[];

/** The list's filters, each null when not set. */
export interface FindingFilter {
  /** Default `open`; null: every state. */
  state: FindingState | null;
  category: FindingCategory | null;
  account: string | null;
  tenant: string | null;
  /** First seen at least this long ago. */
  olderThanMs: number | null;
  /** In major units of each finding's own currency (25.50 is 2550 cents, 25 yen). */
  minAmount: number | null;
  maxAmount: number | null;
}

/** Keyset paging by id, oldest first, as the report pages: after the last id shown, or before the first. */
export interface Paging {
  after: number | null;
  before: number | null;
}

export const PAGE_SIZE = 50;

const MAX_FILTER_TEXT = 200;

/** The filters and paging of a request's query string, and what could not be read in it (shown, not fatal). */
export function parseFindingQuery(query: Readonly<Record<string, unknown>>): {
  filter: FindingFilter;
  paging: Paging;
  problems: string[];
} {
  const problems: string[] = [];
  const text = (name: string): string | null => {
    const value = query[name];
    if (typeof value !== 'string' || value.trim() === '') return null;
    if (value.length > MAX_FILTER_TEXT) {
      problems.push(`${name} is longer than ${MAX_FILTER_TEXT} characters: ignored`);
      return null;
    }
    return value.trim();
  };
  const pick = <T extends string>(name: string, allowed: readonly T[]): T | null => {
    const value = text(name);
    if (value === null || (allowed as readonly string[]).includes(value)) return value as T | null;
    problems.push(`${name} "${value}" is not one of ${allowed.join(', ')}: ignored`);
    return null;
  };
  const stateText = text('state') ?? 'open';
  const state = stateText === 'any' ? null : (pick('state', FINDING_STATES) ?? 'open');
  const age = text('age');
  const olderThanMs = age === null ? null : (parseDuration(age) ?? null);
  if (age !== null && olderThanMs === null) problems.push(`age "${age}" is not a duration such as 1h or 7d: ignored`);
  const amount = (name: string) => {
    const value = text(name);
    const parsed = parseMajorAmount(value ?? undefined);
    if (value !== null && parsed === undefined)
      problems.push(`${name} "${value}" is not an amount such as 25 or 25.50: ignored`);
    return parsed ?? null;
  };
  const id = (name: string) => {
    const value = text(name);
    return value !== null && /^\d{1,18}$/.test(value) ? Number(value) : null;
  };
  return {
    filter: {
      state,
      category: pick('category', FINDING_CATEGORY_NAMES),
      account: text('account'),
      tenant: text('tenant'),
      olderThanMs,
      minAmount: amount('min'),
      maxAmount: amount('max'),
    },
    paging: { after: id('after'), before: id('before') },
    problems,
  };
}

/** The filter as a query string's values: what links to other pages of the same list carry. */
export function filterQuery(filter: FindingFilter): Record<string, string | null> {
  return {
    state: filter.state ?? 'any',
    category: filter.category,
    account: filter.account,
    tenant: filter.tenant,
    age: filter.olderThanMs === null ? null : formatDuration(filter.olderThanMs),
    min: filter.minAmount === null ? null : String(filter.minAmount),
    max: filter.maxAmount === null ? null : String(filter.maxAmount),
  };
}

export interface FindingListRow {
  id: number;
  category: string;
  state: string;
  account: string;
  charge_id: string | null;
  tenant_id: string | null;
  idempotency_key: string | null;
  reference: string | null;
  amount: number | null;
  currency: string | null;
  evidence_at: Date | null;
  first_seen_at: Date;
  closed_by: string | null;
  reason: string | null;
}

/**
 * Each finding with its amount: its charge's (the kept one of a duplicate), else its
 * payment row's, else its claim's request. The amount filters compare in the finding's
 * own currency: a bound in major units times 10^(the currency's exponent).
 */
const FILTERED = `
  FROM recon_findings f
  CROSS JOIN LATERAL (SELECT coalesce(${findingChargeSql('f')}, f.details -> 'effect', f.details #> '{claim,request}') AS m) ch
  CROSS JOIN LATERAL (
    SELECT CASE WHEN jsonb_typeof(ch.m -> 'amount') = 'number' THEN (ch.m ->> 'amount')::bigint END AS amount,
           ch.m ->> 'currency' AS currency,
           CASE WHEN lower(ch.m ->> 'currency') = ANY($8::text[]) THEN 1
                WHEN lower(ch.m ->> 'currency') = ANY($9::text[]) THEN 1000 ELSE 100 END AS per_unit
  ) a
 WHERE ($1::text IS NULL OR f.state = $1)
   AND ($2::text IS NULL OR f.category = $2)
   AND ($3::text IS NULL OR f.account = $3)
   AND ($4::text IS NULL OR f.tenant_id = $4)
   AND ($5::timestamptz IS NULL OR f.first_seen_at <= $5)
   AND ($6::numeric IS NULL OR a.amount >= $6 * a.per_unit)
   AND ($7::numeric IS NULL OR a.amount <= $7 * a.per_unit)`;

function filterArgs(filter: FindingFilter, now: Date, withCategory: boolean): unknown[] {
  return [
    filter.state,
    withCategory ? filter.category : null,
    filter.account,
    filter.tenant,
    filter.olderThanMs === null ? null : new Date(now.getTime() - filter.olderThanMs),
    filter.minAmount,
    filter.maxAmount,
    ZERO_DECIMAL_CURRENCIES,
    THREE_DECIMAL_CURRENCIES,
  ];
}

export interface FindingListPage {
  rows: FindingListRow[];
  /** More findings past the last row / before the first one. */
  hasNext: boolean;
  hasPrevious: boolean;
}

/** One page of the list: at most PAGE_SIZE rows, read by id from the keyset, never by offset. */
export async function readFindingPage(
  db: Queryable,
  filter: FindingFilter,
  paging: Paging,
  now: Date,
): Promise<FindingListPage> {
  const backwards = paging.before !== null && paging.after === null;
  const { rows } = await db.query<FindingListRow>(
    `SELECT f.id, f.category, f.state, f.account, f.charge_id, f.tenant_id, f.idempotency_key, f.reference,
            a.amount, a.currency, ${evidenceAtSql('f')} AS evidence_at, f.first_seen_at, f.closed_by,
            f.details ->> 'reason' AS reason
       ${FILTERED}
        AND ($10::bigint IS NULL OR f.id > $10) AND ($11::bigint IS NULL OR f.id < $11)
      ORDER BY f.id ${backwards ? 'DESC' : 'ASC'}
      LIMIT ${PAGE_SIZE + 1}`,
    [...filterArgs(filter, now, true), paging.after, paging.before],
  );
  const more = rows.length > PAGE_SIZE;
  const page = rows.slice(0, PAGE_SIZE).map((r) => ({ ...r, id: Number(r.id) }));
  if (backwards) page.reverse();
  const paged = paging.after !== null || paging.before !== null;
  return {
    rows: page,
    hasNext: backwards ? true : more,
    hasPrevious: backwards ? more : paged,
  };
}

/** How many findings match, per category: every filter but the category's, so each category's count can be offered. */
export async function countFindings(db: Queryable, filter: FindingFilter, now: Date): Promise<Map<string, number>> {
  const { rows } = await db.query<{ category: string; n: number }>(
    `SELECT f.category, count(*)::int AS n ${FILTERED} GROUP BY f.category ORDER BY f.category`,
    filterArgs(filter, now, false),
  );
  return new Map(rows.map((r) => [r.category, r.n]));
}

/** The accounts to offer in the filter: configured, swept, and the one asked for. */
export async function knownAccounts(db: Queryable, configured: readonly string[]): Promise<string[]> {
  const { rows } = await db.query<{ account: string }>('SELECT DISTINCT account FROM recon_watermarks');
  return [...new Set([...configured, ...rows.map((r) => r.account)])].sort();
}
