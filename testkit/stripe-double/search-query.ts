/**
 * A subset of Stripe's search query language, for charges: clauses `field:value`
 * (exact), `field~value` (substring), `field>n`, `<`, `>=`, `<=` (numbers), `-` in
 * front to negate, `metadata['key']:'value'` (and `:null` for "no such key"), joined by
 * `AND` or by `OR` (Stripe refuses a mix). Fields: amount, created, currency, customer,
 * disputed, refunded, status, metadata.
 */
import type { ChargeRecord } from './charge-store.js';

type Op = ':' | '~' | '>' | '<' | '>=' | '<=';
type Value = string | number | null;

interface Clause {
  negate: boolean;
  /** `metadata` clauses carry their key. */
  field: string;
  key?: string;
  op: Op;
  value: Value;
}

export interface ChargeQuery {
  join: 'AND' | 'OR';
  clauses: Clause[];
}

export class SearchQueryError extends Error {}

const NUMERIC = new Set(['amount', 'created']);
const TEXT = new Set(['currency', 'customer', 'status']);
const BOOLEAN = new Set(['disputed', 'refunded']);

export function parseChargeQuery(text: string): ChargeQuery {
  const parser = new Parser(text);
  const query: ChargeQuery = { join: 'AND', clauses: [parser.clause()] };
  let join: 'AND' | 'OR' | undefined;
  while (!parser.done()) {
    const word = parser.joiner();
    if (join && word !== join) throw new SearchQueryError('Mixing AND and OR in one query is not supported.');
    join = word;
    query.clauses.push(parser.clause());
  }
  query.join = join ?? 'AND';
  return query;
}

export function matchesCharge(query: ChargeQuery, charge: ChargeRecord): boolean {
  const results = query.clauses.map((clause) => matchClause(clause, charge) !== clause.negate);
  return query.join === 'AND' ? results.every(Boolean) : results.some(Boolean);
}

function matchClause(clause: Clause, charge: ChargeRecord): boolean {
  const { field, op, value } = clause;
  if (field === 'metadata') {
    const actual = charge.metadata[clause.key as string];
    if (value === null) return actual === undefined;
    if (actual === undefined) return false;
    return op === '~' ? actual.toLowerCase().includes(String(value).toLowerCase()) : actual === String(value);
  }
  if (NUMERIC.has(field)) {
    const actual = field === 'amount' ? charge.amount : charge.created;
    const n = Number(value);
    if (op === '>') return actual > n;
    if (op === '<') return actual < n;
    if (op === '>=') return actual >= n;
    if (op === '<=') return actual <= n;
    return actual === n;
  }
  if (BOOLEAN.has(field)) {
    const actual = field === 'disputed' ? charge.disputed : charge.amount > 0 && charge.amountRefunded >= charge.amount;
    return String(actual) === String(value).toLowerCase();
  }
  const actual =
    (field === 'currency' ? charge.currency : field === 'customer' ? charge.customer : charge.status) ?? '';
  const wanted = String(value ?? '').toLowerCase();
  return op === '~' ? actual.toLowerCase().includes(wanted) : actual.toLowerCase() === wanted;
}

class Parser {
  private at = 0;

  constructor(private readonly text: string) {
    this.skipSpace();
    if (this.done()) throw new SearchQueryError('The query is empty.');
  }

  done(): boolean {
    return this.at >= this.text.length;
  }

  joiner(): 'AND' | 'OR' {
    const match = /^(AND|OR)\s+/.exec(this.text.slice(this.at));
    if (!match) throw new SearchQueryError(`Expected AND or OR at position ${this.at} of the query.`);
    this.at += match[0].length;
    return match[1] as 'AND' | 'OR';
  }

  clause(): Clause {
    const negate = this.text[this.at] === '-';
    if (negate) this.at += 1;
    const rest = this.text.slice(this.at);
    let field: string;
    let key: string | undefined;
    if (rest.startsWith('metadata[')) {
      this.at += 'metadata['.length;
      key = this.quoted();
      if (this.text[this.at] !== ']')
        throw new SearchQueryError(`Expected ] after the metadata key at position ${this.at}.`);
      this.at += 1;
      field = 'metadata';
    } else {
      const name = /^[a-z_.]+/.exec(rest)?.[0];
      if (!name) throw new SearchQueryError(`Expected a field at position ${this.at} of the query.`);
      this.at += name.length;
      field = name;
      if (!NUMERIC.has(field) && !TEXT.has(field) && !BOOLEAN.has(field)) {
        throw new SearchQueryError(`Field '${field}' is an unsupported search field for resource charges.`);
      }
    }
    const op = /^(>=|<=|:|~|>|<)/.exec(this.text.slice(this.at))?.[0] as Op | undefined;
    if (!op) throw new SearchQueryError(`Expected an operator (: ~ > < >= <=) after '${field}'.`);
    this.at += op.length;
    const value = this.value();
    if (
      (op === '>' || op === '<' || op === '>=' || op === '<=') &&
      (!NUMERIC.has(field) || typeof value !== 'number')
    ) {
      throw new SearchQueryError(`The operator ${op} needs a numeric field and a number.`);
    }
    if (op === '~' && (typeof value !== 'string' || value.length < 3)) {
      throw new SearchQueryError('A substring match (~) needs a quoted value of at least 3 characters.');
    }
    this.skipSpace();
    return { negate, field, ...(key === undefined ? {} : { key }), op, value };
  }

  private value(): Value {
    const quote = this.text[this.at];
    if (quote === "'" || quote === '"') return this.quoted();
    const token = /^[^\s]+/.exec(this.text.slice(this.at))?.[0];
    if (!token) throw new SearchQueryError(`Expected a value at position ${this.at} of the query.`);
    this.at += token.length;
    if (token === 'null') return null;
    if (/^-?\d+(\.\d+)?$/.test(token)) return Number(token);
    return token;
  }

  private quoted(): string {
    const quote = this.text[this.at];
    if (quote !== "'" && quote !== '"')
      throw new SearchQueryError(`Expected a quoted string at position ${this.at} of the query.`);
    let out = '';
    for (let i = this.at + 1; i < this.text.length; i += 1) {
      const c = this.text[i] as string;
      if (c === '\\' && i + 1 < this.text.length) {
        out += this.text[i + 1];
        i += 1;
      } else if (c === quote) {
        this.at = i + 1;
        return out;
      } else {
        out += c;
      }
    }
    throw new SearchQueryError('A quoted string in the query is not closed.');
  }

  private skipSpace(): void {
    while (this.at < this.text.length && /\s/.test(this.text[this.at] as string)) this.at += 1;
  }
}
