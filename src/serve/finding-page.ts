import { RUNBOOK } from '../sweep/runbook.js';
import { AUTOMATIC_ACTOR } from './names.js';
import { DUPLICATE_SET_CATEGORIES } from '../sweep/status.js';
import { RequestProblem, type ReviewRoute, type RouteContext, type RouteResult, type Viewer } from './context.js';
import {
  readFindingEvidence,
  type AuditRow,
  type ChargeEvidence,
  type FindingEvidence,
  type Row,
} from './finding-evidence.js';
import { instant, stateBadge, tableHead } from './format.js';
import { html, type Html } from './html.js';
import { formatMoney } from './money.js';
import { evidenceTable } from './evidence-view.js';

/**
 * One finding: why it is open and what to do, its evidence side by side (claim, payment
 * rows, each charge as the mirror holds it now and as the sweep saw it, refunds), links
 * to the Stripe dashboard, the audit trail telling the sweep's automatic actions from
 * people's, and for a resolver the form to close it.
 */
const DONE: Record<string, string> = {
  resolved: 'Resolved.',
  ignored: 'Ignored.',
  not_duplicate: 'Marked not a duplicate: this set of charges is not raised again.',
};

const JSON_SHOWN = 4_000;

async function findingPage(ctx: RouteContext): Promise<RouteResult> {
  const id = findingId((ctx.request.params as { id?: string }).id);
  const evidence = await readFindingEvidence(ctx.deps.pool, id);
  if (!evidence) throw new RequestProblem(404, `There is no finding #${id}.`);
  const f = evidence.finding;
  const done = DONE[String((ctx.request.query as Record<string, unknown>).done)];
  const runbook = (RUNBOOK as Record<string, (typeof RUNBOOK)[keyof typeof RUNBOOK] | undefined>)[f.category];
  const reason = typeof f.details.reason === 'string' ? f.details.reason : (runbook?.means ?? '');
  const body = html` <p><a href="/">← Findings</a></p>
    <h1>#${f.id} ${f.category} ${stateBadge(f.state)}</h1>
    ${done ? html`<p class="notice" role="status">${done}</p>` : ''}
    <div class="why">
      <section class="card">
        <h2>Why</h2>
        <p class="reason-text">${reason}</p>
        ${facts(evidence)}
      </section>
      <section class="card">
        <h2>What to do</h2>
        <p>${runbook?.person ?? ''}</p>
        ${runbook ? html`<p class="small">The sweeper: ${runbook.sweeper}.</p>` : ''}
        ${f.state === 'open' ? actionForm(ctx, evidence) : closedFacts(evidence)}
      </section>
    </div>
    <h2>Evidence</h2>
    ${evidenceTable(evidence)}
    ${
      evidence.refunds.length > 0
        ? html`<h3>Refunds by the sweeper</h3>
            ${refundsTable(evidence.refunds)}`
        : ''
    }
    <details class="all-columns">
      <summary>Every column of these rows</summary>
      <div class="evidence">
        ${evidence.claim ? rowCard('Claim', evidence.claim) : ''}
        ${evidence.payments.map((p) => rowCard('Payment row', p))} ${evidence.charges.map((c) => chargeCard(c))}
      </div>
    </details>
    <h2>Audit trail</h2>
    ${auditTable(evidence.audit)}
    <details>
      <summary>The finding's details as recorded</summary>
      <pre>${json(f.details)}</pre>
    </details>`;
  return { kind: 'page', title: `#${f.id} ${f.category}`, body };
}

export function findingId(text: string | undefined): number {
  if (text === undefined || !/^\d{1,18}$/.test(text))
    throw new RequestProblem(404, 'A finding is named by its number.');
  return Number(text);
}

function facts(e: FindingEvidence): Html {
  const f = e.finding;
  return html`<dl class="facts">
    <dt>account</dt>
    <dd class="mono">${f.account}</dd>
    <dt>tenant</dt>
    <dd class="mono">${f.tenant_id ?? '—'}</dd>
    <dt>key</dt>
    <dd class="mono">${f.idempotency_key ?? '—'}</dd>
    ${
      f.reference
        ? html`<dt>reference</dt>
            <dd class="mono">${f.reference}</dd>`
        : ''
    }
    <dt>subject</dt>
    <dd class="mono">${f.subject}</dd>
    <dt>first seen</dt>
    <dd>${instant(f.first_seen_at)} <span class="small">run ${f.first_seen_run}</span></dd>
    <dt>last seen</dt>
    <dd>${instant(f.last_seen_at)} <span class="small">run ${f.last_seen_run}</span></dd>
  </dl>`;
}

function closedFacts(e: FindingEvidence): Html {
  const f = e.finding;
  return html`<dl class="facts">
    <dt>closed</dt>
    <dd>${instant(f.closed_at)}</dd>
    <dt>by</dt>
    <dd>${f.closed_by ? actorBadge(f.closed_by, null) : '—'}</dd>
    <dt>note</dt>
    <dd>${f.note ?? '—'}</dd>
  </dl>`;
}

function actionForm(ctx: RouteContext, e: FindingEvidence): Html {
  const viewer: Viewer | null = ctx.viewer;
  if (!viewer?.canResolve) return html`<p class="small">Only the people in SWEEPER_UI_RESOLVERS close findings.</p>`;
  const duplicate = (DUPLICATE_SET_CATEGORIES as readonly string[]).includes(e.finding.category);
  return html`<form
    method="post"
    action="/findings/${e.finding.id}/close"
    class="actions"
    aria-label="close this finding"
  >
    <input type="hidden" name="_csrf" value="${ctx.csrfToken()}" />
    <label class="stack"
      >Note (recorded with your name, ${viewer.name})
      <textarea name="note" maxlength="2000" required placeholder="what was done or decided"></textarea>
    </label>
    <div class="buttons">
      <button type="submit" name="action" value="resolve">Resolve</button>
      <button type="submit" name="action" value="ignore" class="secondary">Ignore</button>
      ${duplicate ? html`<button type="submit" name="action" value="not_duplicate" class="secondary">Not a duplicate</button>` : ''}
    </div>
  </form>`;
}

/** A row of any table as a list of its fields: times as instants, amounts with their currency, objects as JSON. */
function rowFacts(row: Row): Html {
  const currency = typeof row.currency === 'string' ? row.currency : null;
  return html`<dl class="facts">
    ${Object.entries(row).map(([key, value]) => {
      let shown: Html | string;
      if (value instanceof Date) shown = instant(value);
      else if (value === null || value === undefined) shown = html`<span class="none">—</span>`;
      else if (typeof value === 'object') shown = html`<pre>${json(value)}</pre>`;
      else if (typeof value === 'number' && /amount/.test(key)) shown = formatMoney(value, currency);
      else shown = String(value as string | number | boolean);
      return html`<dt>${key}</dt>
        <dd class="mono">${shown}</dd>`;
    })}
  </dl>`;
}

function rowCard(title: string, row: Row): Html {
  return html`<section class="card">
    <h3>${title}</h3>
    ${rowFacts(row)}
  </section>`;
}

function chargeCard(c: ChargeEvidence): Html {
  return html`<section class="card">
    <h3>Charge <span class="mono">${c.id}</span> <span class="sub">${c.role}</span></h3>
    ${c.mirror ? rowFacts(c.mirror) : html`<p class="none">not in the mirror (older than the retention, or never listed)</p>`}
    ${
      c.summary
        ? html`<h3>As the sweep saw it when it judged</h3>
            ${rowFacts(c.summary)}`
        : ''
    }
  </section>`;
}

function refundsTable(refunds: readonly Row[]): Html {
  return html`<table class="refunds">
    ${tableHead(['charge refunded', 'kept charge', 'amount', 'state', 'Stripe refund', 'when', 'why'], { numeric: ['amount'] })}
    <tbody>
      ${refunds.map(
        (r) =>
          html`<tr>
            <td class="mono">${String(r.charge_id)}</td>
            <td class="mono">${String(r.kept_charge_id)}</td>
            <td class="num">${formatMoney(Number(r.amount), String(r.currency))}</td>
            <td>${String(r.state)}</td>
            <td class="mono">${r.stripe_refund_id ? String(r.stripe_refund_id as string) : '—'}</td>
            <td>${instant(r.updated_at as Date)}</td>
            <td>${r.reason ? String(r.reason as string) : ''}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function actorBadge(actor: string, runId: string | null): Html {
  return actor === AUTOMATIC_ACTOR
    ? html`<span class="badge automatic">automatic</span>
        sweeper${runId ? html` <span class="small">run ${runId}</span>` : ''}`
    : html`<span class="badge person">person</span> ${actor}`;
}

function auditTable(audit: readonly AuditRow[]): Html {
  if (audit.length === 0) return html`<p class="none card">Nothing was done to this finding yet.</p>`;
  return html`<table class="audit">
    ${tableHead(['when', 'who', 'what', 'before', 'after'])}
    <tbody>
      ${audit.map(
        (a) =>
          html`<tr class="${a.actor === AUTOMATIC_ACTOR ? 'automatic' : 'person'}">
            <td>${instant(a.at)}</td>
            <td>${actorBadge(a.actor, a.run_id)}</td>
            <td>${a.action}</td>
            <td class="mono">${compact(a.before)}</td>
            <td class="mono">${compact(a.after)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function json(value: unknown): string {
  const text = String(JSON.stringify(value, null, 2) as string | undefined);
  return text.length > JSON_SHOWN
    ? `${text.slice(0, JSON_SHOWN)}\n… (${text.length - JSON_SHOWN} more characters)`
    : text;
}

function compact(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = String(JSON.stringify(value) as string | undefined);
  return text.length > 400 ? `${text.slice(0, 400)}…` : text;
}

export const findingPageRoutes: ReviewRoute[] = [
  { method: 'GET', path: '/findings/:id', access: 'reader', handler: findingPage },
];
