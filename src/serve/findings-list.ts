import { DUPLICATE_SET_CATEGORIES } from '../sweep/status.js';
import type { ReviewRoute, RouteContext, RouteResult, Viewer } from './context.js';
import {
  countFindings,
  FINDING_CATEGORY_NAMES,
  FINDING_STATES,
  filterQuery,
  knownAccounts,
  parseFindingQuery,
  readFindingPage,
  type FindingFilter,
  type FindingListPage,
  type FindingListRow,
} from './findings-query.js';
import { ago, stateBadge, tableHead } from './format.js';
import { html, localUrl, type Html } from './html.js';
import { formatMoney } from './money.js';

/**
 * The findings list, the page everyone lands on: open findings by default, filters
 * (category, state, account, tenant, age, amount), the count per category under the
 * other filters, keyset pages of PAGE_SIZE, and for resolvers checkboxes to close many
 * at once (actions.ts).
 */
const AGES = ['', '1h', '1d', '7d', '30d'] as const;

async function findingsPage(ctx: RouteContext): Promise<RouteResult> {
  const { deps } = ctx;
  const now = deps.clock();
  const { filter, paging, problems } = parseFindingQuery(ctx.request.query as Record<string, unknown>);
  const [page, counts, accounts] = await Promise.all([
    readFindingPage(deps.pool, filter, paging, now),
    countFindings(deps.pool, filter, now),
    knownAccounts(deps.pool, deps.config.accounts),
  ]);
  const body = html` <h1>Findings</h1>
    ${filterForm(filter, accounts)} ${problems.map((p) => html`<p class="problem">${p}</p>`)}
    ${countChips(filter, counts)}
    ${
      page.rows.length === 0
        ? html`<p class="none card">No finding matches these filters.</p>`
        : listTable(ctx, page, now)
    }
    ${pager(page, filter)}`;
  return { kind: 'page', title: 'Findings', body };
}

function filterForm(filter: FindingFilter, accounts: readonly string[]): Html {
  const option = (value: string, label: string, selected: boolean) =>
    html`<option value="${value}" ${selected ? html` selected` : ''}>${label}</option>`;
  const q = filterQuery(filter);
  return html`<form method="get" action="/" class="filters card" aria-label="filters">
    <label
      >Category
      <select name="category">
        ${option('', 'any', filter.category === null)}
        ${FINDING_CATEGORY_NAMES.map((c) => option(c, c, filter.category === c))}
      </select></label
    >
    <label
      >State
      <select name="state">
        ${FINDING_STATES.map((s) => option(s, s, filter.state === s))} ${option('any', 'any', filter.state === null)}
      </select></label
    >
    <label
      >Account
      <select name="account">
        ${option('', 'any', filter.account === null)}
        ${[...new Set([...accounts, ...(filter.account ? [filter.account] : [])])].map((a) =>
          option(a, a, filter.account === a),
        )}
      </select></label
    >
    <label>Tenant <input type="text" name="tenant" value="${filter.tenant ?? ''}" placeholder="tenant id" /></label>
    <label
      >First seen
      <select name="age">
        ${AGES.map((a) => option(a, a === '' ? 'any time' : `over ${a} ago`, (q.age ?? '') === a))}
      </select></label
    >
    <label>Amount from <input type="text" class="amount" name="min" value="${q.min ?? ''}" placeholder="0.00" /></label>
    <label>to <input type="text" class="amount" name="max" value="${q.max ?? ''}" placeholder="any" /></label>
    <button type="submit">Filter</button>
    <a href="/">Clear</a>
  </form>`;
}

function countChips(filter: FindingFilter, counts: ReadonlyMap<string, number>): Html {
  const total =
    filter.category === null ? [...counts.values()].reduce((a, b) => a + b, 0) : (counts.get(filter.category) ?? 0);
  const q = filterQuery(filter);
  const chips = [...counts.entries()].map(
    ([category, n]) =>
      html`<a
        class="chip"
        href="${localUrl('/', { ...q, category })}"
        ${filter.category === category ? html` aria-current="true"` : ''}
        >${category}<strong>${n}</strong></a
      >`,
  );
  return html`<div class="counts" data-total="${total}">
    <span><strong>${total}</strong> ${filter.state ?? ''} finding${total === 1 ? '' : 's'} match</span>${chips}
  </div>`;
}

function listTable(ctx: RouteContext, page: FindingListPage, now: Date): Html {
  const viewer = ctx.viewer;
  const selectable = Boolean(viewer?.canResolve) && page.rows.some((r) => r.state === 'open');
  const table = html`<table class="findings">
    ${tableHead(['#', 'category', 'state', 'account', 'tenant', 'key / reference', 'amount', 'first seen', 'reason'], { numeric: ['amount'], lead: selectable ? html`<input type="checkbox" data-select-all aria-label="select every open finding on this page" />` : undefined })}
    <tbody>
      ${page.rows.map((row) => listRow(row, selectable, now))}
    </tbody>
  </table>`;
  if (!selectable || !viewer) return table;
  // Back to this very page of the list once they are closed.
  const back = ctx.request.url;
  return html`<form method="post" action="/findings/close" aria-label="close many">
    <input type="hidden" name="_csrf" value="${ctx.csrfToken()}" />
    <input type="hidden" name="back" value="${back}" />
    ${table} ${bulkActions(viewer, page.rows)}
  </form>`;
}

function listRow(row: FindingListRow, selectable: boolean, now: Date): Html {
  const box =
    row.state === 'open'
      ? html`<input type="checkbox" name="id" value="${row.id}" aria-label="select finding ${row.id}" />`
      : '';
  return html`<tr data-finding="${row.id}">
    ${selectable ? html`<td>${box}</td>` : ''}
    <td><a href="/findings/${row.id}">#${row.id}</a></td>
    <td>${row.category}</td>
    <td>${stateBadge(row.state)}</td>
    <td class="mono">${row.account}</td>
    <td class="mono">${row.tenant_id ?? ''}</td>
    <td class="mono">
      ${row.idempotency_key ?? ''}${row.reference ? html`<div class="small">ref ${row.reference}</div>` : ''}
    </td>
    <td class="num">${row.amount === null ? '' : formatMoney(Number(row.amount), row.currency)}</td>
    <td title="${row.first_seen_at.toISOString()}">${ago(row.first_seen_at, now)}</td>
    <td class="reason">${row.reason ?? ''}</td>
  </tr>`;
}

function bulkActions(viewer: Viewer, rows: readonly FindingListRow[]): Html {
  const duplicates = rows.some((r) => (DUPLICATE_SET_CATEGORIES as readonly string[]).includes(r.category));
  return html`<div class="bulk card">
    <label class="stack"
      >Note for the selected findings (recorded with your name, ${viewer.name})
      <textarea name="note" maxlength="2000" required placeholder="what was done or decided"></textarea>
    </label>
    <button type="submit" name="action" value="resolve">Resolve selected</button>
    <button type="submit" name="action" value="ignore" class="secondary">Ignore selected</button>
    ${duplicates ? html`<button type="submit" name="action" value="not_duplicate" class="secondary">Not a duplicate</button>` : ''}
  </div>`;
}

function pager(page: FindingListPage, filter: FindingFilter): Html {
  const q = filterQuery(filter);
  const first = page.rows[0];
  const last = page.rows[page.rows.length - 1];
  return html`<nav class="pager" aria-label="pages">
    ${page.hasPrevious && first ? html`<a href="${localUrl('/', { ...q, before: first.id })}" rel="prev">← earlier</a>` : ''}
    ${page.hasPrevious ? html`<a href="${localUrl('/', q)}">first page</a>` : ''}
    ${page.hasNext && last ? html`<a href="${localUrl('/', { ...q, after: last.id })}" rel="next">later →</a>` : ''}
  </nav>`;
}

export const findingsListRoutes: ReviewRoute[] = [
  { method: 'GET', path: '/', access: 'reader', handler: findingsPage },
  { method: 'GET', path: '/findings', access: 'reader', handler: findingsPage },
];
