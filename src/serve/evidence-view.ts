import type { ChargeEvidence, FindingEvidence, Row } from './finding-evidence.js';
import { instant } from './format.js';
import { html, type Html } from './html.js';
import { formatMoney } from './money.js';
import { dashboardPaymentUrl } from './stripe-links.js';

/**
 * A finding's evidence side by side: one column per thing (the claim, each payment row,
 * each charge as the mirror holds it, else as the finding's details summarise it), one
 * row per fact they share (tenant, key, reference, amount, currency, status, when). A
 * fact whose columns disagree is marked, which is usually the finding.
 */
interface Column {
  kind: 'claim' | 'payment' | 'charge';
  title: Html;
  row: Row;
}

interface Fact {
  label: string;
  /** The column's value of the fact, or undefined when the column has no such fact. */
  read: (c: Column) => unknown;
  /** Compared across the columns: a difference is marked. */
  compare?: boolean;
}

const field =
  (claim: string | null, payment: string | null, charge: string | null) =>
  (c: Column): unknown => {
    const name = c.kind === 'claim' ? claim : c.kind === 'payment' ? payment : charge;
    return name === null ? undefined : c.row[name];
  };

const FACTS: readonly Fact[] = [
  { label: 'charge', read: field(null, 'charge_id', 'charge_id') },
  { label: 'account', read: field('account', 'account', 'account'), compare: true },
  { label: 'tenant', read: field('tenant_id', 'tenant_id', 'tenant_id'), compare: true },
  { label: 'key', read: field('key', 'idempotency_key', 'idempotency_key') },
  { label: 'reference', read: field('reference', 'reference', 'reference'), compare: true },
  { label: 'amount', read: field('amount', 'amount', 'amount'), compare: true },
  { label: 'refunded', read: field(null, 'amount_refunded', 'amount_refunded'), compare: true },
  { label: 'currency', read: field('currency', 'currency', 'currency'), compare: true },
  { label: 'status', read: field('status', 'status', 'status') },
  { label: 'disputed', read: field(null, 'disputed', 'disputed'), compare: true },
  { label: 'created', read: field('created_at', 'created_at', 'created') },
  { label: 'payment intent', read: field(null, 'payment_intent_id', 'payment_intent_id') },
  { label: 'stored answer', read: (c) => (c.kind === 'claim' ? answer(c.row) : undefined) },
  { label: 'attempt', read: field('attempt', null, null) },
  { label: 'customer', read: field(null, null, 'customer') },
  { label: 'payment method', read: field(null, null, 'payment_method') },
  { label: 'card', read: field(null, null, 'card_fingerprint') },
  { label: 'livemode', read: field(null, null, 'livemode') },
  { label: 'read from Stripe', read: field(null, null, 'fetched_at') },
];

function answer(claim: Row): string | undefined {
  if (claim.response_status === null || claim.response_status === undefined) return undefined;
  return `${String(claim.response_status as number)}${claim.response_outcome ? ` ${String(claim.response_outcome as string)}` : ''}`;
}

/** A charge's mirror row, or its summary in the details under the mirror's names. */
function chargeRow(c: ChargeEvidence): Row {
  if (c.mirror) return c.mirror;
  const s = c.summary ?? {};
  return {
    charge_id: c.id,
    account: s.account,
    created: s.created,
    amount: s.amount,
    amount_refunded: s.amount_refunded,
    currency: s.currency,
    status: s.status,
    disputed: s.disputed,
    payment_intent_id: s.payment_intent,
    customer: s.customer,
    payment_method: s.payment_method,
  };
}

function chargeTitle(c: ChargeEvidence, account: string): Html {
  const row = chargeRow(c);
  const url = dashboardPaymentUrl({
    id: c.id,
    account: typeof row.account === 'string' ? row.account : account,
    paymentIntent: typeof row.payment_intent_id === 'string' ? row.payment_intent_id : null,
    livemode: typeof row.livemode === 'boolean' ? row.livemode : null,
  });
  return html`Charge <span class="sub">${c.role}${c.mirror ? '' : ', from the details: not in the mirror'}</span><br />
    <a href="${url}" target="_blank" rel="noopener noreferrer" data-dashboard="${c.id}">${c.id} ↗</a>
    ${row.livemode === false ? html`<span class="small">test mode</span>` : ''}`;
}

function shown(value: unknown, fact: Fact, currency: unknown): Html | string {
  if (value === undefined) return '';
  if (value === null || value === '') return html`<span class="none">—</span>`;
  if (value instanceof Date) return instant(value);
  if (/^(amount|refunded)$/.test(fact.label) && typeof value === 'number')
    return formatMoney(value, typeof currency === 'string' ? currency : null);
  if (fact.label === 'created' && typeof value === 'string') return instant(value);
  return typeof value === 'object' ? JSON.stringify(value) : String(value as string | number | boolean);
}

export function evidenceTable(e: FindingEvidence): Html {
  const columns: Column[] = [
    ...(e.claim ? [{ kind: 'claim' as const, title: html`Claim`, row: e.claim }] : []),
    ...e.payments.map((p) => ({
      kind: 'payment' as const,
      title: html`Payment row <span class="sub">#${String(p.id)}</span>`,
      row: p,
    })),
    ...e.charges.map((c) => ({ kind: 'charge' as const, title: chargeTitle(c, e.finding.account), row: chargeRow(c) })),
  ];
  const absent = [
    ...(e.claim ? [] : ['no claim for this key']),
    ...(e.payments.length > 0 ? [] : ['no payment row']),
    ...(e.charges.length > 0 ? [] : ['no charge']),
  ];
  const rows = FACTS.map((fact) => {
    const values = columns.map((c) => fact.read(c));
    if (values.every((v) => v === undefined || v === null)) return '';
    const present = values.filter((v) => v !== undefined && v !== null).map((v) => String(v).toLowerCase());
    const differs = Boolean(fact.compare) && new Set(present).size > 1;
    return html`<tr${differs ? html` class="differs"` : ''}><th scope="row">${fact.label}${differs ? html` <span class="badge open">differs</span>` : ''}</th>
      ${columns.map((c, i) => html`<td class="mono">${shown(values[i], fact, c.row.currency)}</td>`)}</tr>`;
  });
  return html`${absent.length > 0 ? html`<p class="none">${absent.join('; ')}.</p>` : ''}
  ${
    columns.length === 0
      ? ''
      : html`<div class="scroll">
          <table class="evidence-table">
            <thead>
              <tr>
                <th></th>
                ${columns.map((c) => html`<th class="${c.kind}">${c.title}</th>`)}
              </tr>
            </thead>
            <tbody>
              ${rows}
            </tbody>
          </table>
        </div>`
  }`;
}
