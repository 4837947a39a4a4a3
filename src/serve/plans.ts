import {
  listPlans,
  loadPlan,
  PLAN_ID_PATTERN,
  planEvents,
  type EvidenceEntry,
  type PlanEvent,
  type PlanStep,
  type PlanSummary,
  type StoredPlan,
} from '../plans/index.js';
import { sameName } from './names.js';
import { RequestProblem, type NavEntry, type ReviewRoute, type RouteContext, type RouteResult } from './context.js';
import { instant, stateBadge, tableHead } from './format.js';
import { html, localUrl, type Html } from './html.js';
import { formatMoney } from './money.js';
import { parseBefore } from './runs-page.js';

/**
 * Saved plans (docs/plans.md): the list, newest first, and one plan's steps with the
 * evidence each read, its state (planned, applied, refused and why), the plan's audit,
 * and for a resolver the forms to approve it (a second person: never its author) and to
 * apply it (their routes: plan-actions.ts).
 */
export const PLANS_NAV: NavEntry = { label: 'Plans', path: '/plans' };

const PAGE = 50;

async function plansList(ctx: RouteContext): Promise<RouteResult> {
  const before = parseBefore((ctx.request.query as Record<string, unknown>).before);
  const plans = await listPlans(ctx.deps.pool, { limit: PAGE + 1, before });
  const shown = plans.slice(0, PAGE);
  const last = shown[shown.length - 1];
  const body = html`<h1>Plans</h1>
    <p class="small">
      Made by <code>sweeper run --plan FILE</code> or <code>sweeper backfill … --plan FILE</code>: every step a run
      would take, with the evidence it read. Applied step by step where that evidence is unchanged; refunds only once
      someone other than the plan's author approved it.
    </p>
    ${shown.length === 0 ? html`<p class="none card">No plan was made yet.</p>` : plansTable(shown)}
    ${
      plans.length > PAGE && last
        ? html`<p>
            <a href="${localUrl('/plans', { before: `${last.createdAt.toISOString()}|${last.id}` })}">Older plans</a>
          </p>`
        : ''
    }`;
  return { kind: 'page', title: 'Plans', body };
}

function plansTable(plans: readonly PlanSummary[]): Html {
  return html`<table class="plans">
    ${tableHead(
      ['plan', 'made', 'by', 'mode', 'accounts', 'steps', 'moving money', 'approved by', 'applied', 'refused'],
      {
        numeric: ['steps', 'moving money', 'applied', 'refused'],
      },
    )}
    <tbody>
      ${plans.map(
        (p) =>
          html`<tr data-plan="${p.id}">
            <td class="mono"><a href="/plans/${p.id}">${p.id}</a></td>
            <td>${instant(p.createdAt)}</td>
            <td>${p.author}</td>
            <td>${p.mode}</td>
            <td class="mono">${p.accounts.join(', ')}</td>
            <td class="num">${p.steps}</td>
            <td class="num">${p.moneySteps}</td>
            <td>${p.approvedBy ?? (p.moneySteps > 0 ? html`<span class="badge open">awaiting</span>` : '—')}</td>
            <td class="num">${p.applied}</td>
            <td class="num">${p.refused}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** A plan id from the path: anything else is no plan (404), never a query with it. */
export function planIdParam(ctx: RouteContext): string {
  const id = (ctx.request.params as { id?: string }).id ?? '';
  if (!PLAN_ID_PATTERN.test(id))
    throw new RequestProblem(404, 'A plan is named by its id, such as plan_20261201T041500Z_3fa9c2d1.');
  return id;
}

const DONE: Record<string, string> = {
  approved: 'Approved: its refunds are made by the next apply.',
  applied: 'Applied: each step below says what became of it.',
};

async function planPage(ctx: RouteContext): Promise<RouteResult> {
  const id = planIdParam(ctx);
  const plan = await loadPlan(ctx.deps.pool, id);
  if (!plan) throw new RequestProblem(404, `There is no plan ${id} in this database.`);
  const events = await planEvents(ctx.deps.pool, id);
  const done = DONE[String((ctx.request.query as Record<string, unknown>).done)];
  const body = html`<p><a href="/plans">← Plans</a></p>
    <h1 class="mono">${plan.id}</h1>
    ${done ? html`<p class="notice" role="status">${done}</p>` : ''}
    <div class="why">
      <section class="card">
        <h2>The plan</h2>
        ${planFacts(plan)}
      </section>
      <section class="card">
        <h2>What to do</h2>
        ${planForms(ctx, plan)}
      </section>
    </div>
    <h2>Steps</h2>
    ${stepsTable(plan, waiting(events))}
    <h2>Audit trail</h2>
    ${eventsTable(events)}`;
  return { kind: 'page', title: plan.id, body };
}

function planFacts(plan: StoredPlan): Html {
  const money = plan.body.steps.filter((s) => s.moves_money).length;
  return html`<dl class="facts">
    <dt>made by</dt>
    <dd>${plan.author}</dd>
    <dt>made</dt>
    <dd>${instant(plan.createdAt)}</dd>
    <dt>mode</dt>
    <dd>${plan.body.mode}</dd>
    <dt>accounts</dt>
    <dd class="mono">${plan.body.accounts.join(', ')}</dd>
    <dt>steps</dt>
    <dd>${plan.body.steps.length}, ${money} moving money</dd>
    <dt>approved</dt>
    <dd class="approval">
      ${
        plan.approvedBy
          ? html`by ${plan.approvedBy}, ${instant(plan.approvedAt)}`
          : money > 0
            ? html`<span class="badge open">awaiting a second person</span>`
            : 'not needed: no step moves money'
      }
    </dd>
    <dt>digest</dt>
    <dd class="mono small">${plan.digest}</dd>
  </dl>`;
}

function planForms(ctx: RouteContext, plan: StoredPlan): Html {
  const viewer = ctx.viewer;
  const open = [...plan.steps.values()].filter((s) => s.state === 'planned').length;
  const money = plan.body.steps.filter((s) => s.moves_money).length;
  if (!viewer?.canResolve)
    return html`<p class="small">Only the people in SWEEPER_UI_RESOLVERS approve and apply plans.</p>`;
  const csrf = html`<input type="hidden" name="_csrf" value="${ctx.csrfToken()}" />`;
  const approve =
    money === 0 || plan.approvedBy !== null
      ? ''
      : sameName(viewer.name, plan.author)
        ? html`<p class="small own-plan">
            You made this plan: someone else approves its ${money} step(s) moving money (four eyes on money).
          </p>`
        : html`<form method="post" action="/plans/${plan.id}/approve" class="actions" aria-label="approve this plan">
            ${csrf}
            <p>Approve the ${money} step(s) moving money, as ${viewer.name}, the second person after ${plan.author}.</p>
            <div class="buttons"><button type="submit" name="action" value="approve">Approve</button></div>
          </form>`;
  const apply =
    open === 0
      ? html`<p class="small">Every step is decided: applying again applies nothing.</p>`
      : html`<form method="post" action="/plans/${plan.id}/apply" class="actions" aria-label="apply this plan">
          ${csrf}
          <p>
            Apply the ${open} step(s) still planned, as ${viewer.name}: each whose evidence is unchanged; the others are
            refused and named.
            ${ctx.deps.evidence ? '' : html`<span class="small">Releases and refunds wait for <code>sweeper apply</code>: this page has no STRIPE_API_KEY to re-read Stripe with.</span>`}
          </p>
          <div class="buttons"><button type="submit" name="action" value="apply">Apply</button></div>
        </form>`;
  return html`${approve}${apply}`;
}

/** Why each step still planned waits, as the last apply said (its audit row's details). */
function waiting(events: readonly PlanEvent[]): Map<number, string> {
  const last = events.filter((e) => e.action === 'applied').pop();
  const pending = Array.isArray(last?.details.pending) ? (last.details.pending as unknown[]) : [];
  return new Map(
    pending.flatMap((p) => {
      const { step, reason } = (p ?? {}) as { step?: unknown; reason?: unknown };
      return typeof step === 'number' && typeof reason === 'string' ? [[step, reason] as const] : [];
    }),
  );
}

function stepsTable(plan: StoredPlan, waits: ReadonlyMap<number, string>): Html {
  return html`<table class="steps">
    ${tableHead(['step', 'account', 'category', 'subject', 'action', 'state', 'why', 'evidence'])}
    <tbody>
      ${plan.body.steps.map((s) => {
        const stored = plan.steps.get(s.step);
        const state = stored?.state ?? 'planned';
        return html`<tr data-step="${s.step}" data-state="${state}" class="${s.moves_money ? 'money' : ''}">
          <td class="num">${s.step}</td>
          <td class="mono">${s.account}</td>
          <td>${s.category}</td>
          <td class="mono">
            ${stored?.findingId ? html`<a href="/findings/${stored.findingId}">${subject(s)}</a>` : subject(s)}
          </td>
          <td>${s.action}${s.moves_money ? html` <span class="badge open">moves money</span>` : ''}${refunds(s)}</td>
          <td>${stateBadge(state)}</td>
          <td class="reason">
            ${stored?.reason ?? (state === 'planned' ? (waits.get(s.step) ?? '') : '')}${stored?.decidedBy ? html` <span class="small">by ${stored.decidedBy}, ${instant(stored.decidedAt)}</span>` : ''}
          </td>
          <td>${evidenceList(s.evidence)}</td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

/** A subject as people read it: a tenant and key with a slash, a charge by its id. */
function subject(step: PlanStep): string {
  return step.subject.replace('\u241f', '/');
}

function refunds(step: PlanStep): Html | string {
  if (!step.refunds || step.refunds.length === 0) return '';
  return html`<ul class="plain small">
    ${step.refunds.map(
      (r) =>
        html`<li>
          refund <span class="mono">${r.charge_id}</span> ${formatMoney(r.amount, r.currency)}, key
          <span class="mono">${r.idempotency_key}</span>
        </li>`,
    )}
  </ul>`;
}

function evidenceList(evidence: readonly EvidenceEntry[]): Html {
  return html`<details>
    <summary>${evidence.length} object(s)</summary>
    <ul class="plain small">
      ${evidence.map(
        (e) =>
          html`<li>
            ${e.object} <span class="mono">${e.id}</span>:
            ${
              e.after_step !== undefined
                ? `as step ${e.after_step} leaves it`
                : e.version === null || e.version === undefined
                  ? 'absent'
                  : html`version <span class="mono" title="${e.version}">${e.version.slice(0, 12)}</span>`
            }
          </li>`,
      )}
    </ul>
  </details>`;
}

function eventsTable(events: readonly PlanEvent[]): Html {
  if (events.length === 0) return html`<p class="none card">Nothing was done with this plan yet.</p>`;
  return html`<table class="audit plan-audit">
    ${tableHead(['when', 'who', 'what', 'details'])}
    <tbody>
      ${events.map(
        (e) =>
          html`<tr class="person" data-action="${e.action}">
            <td>${instant(e.at)}</td>
            <td><span class="badge person">person</span> ${e.actor}</td>
            <td>${e.action}</td>
            <td class="mono small">${compact(e.details)}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function compact(value: unknown): string {
  const text = String(JSON.stringify(value) as string | undefined);
  return text.length > 600 ? `${text.slice(0, 600)}…` : text;
}

export const planRoutes: ReviewRoute[] = [
  { method: 'GET', path: '/plans', access: 'reader', handler: plansList },
  { method: 'GET', path: '/plans/:id', access: 'reader', handler: planPage },
];
