import { resolveFindings, type ClosedFindings } from '../sweep/status.js';
import { RequestProblem, type ReviewRoute, type RouteContext, type RouteResult } from './context.js';
import { findingId } from './finding-page.js';
import { html } from './html.js';
import { localNext } from './session.js';

/**
 * What a resolver may do to open findings: resolve, ignore, or (duplicate_effect and
 * suspected_duplicate) say the charges are not a duplicate, with a note, one finding or
 * many at once. Each finding closed gets its own audit row naming the viewer
 * (resolveFindings). Routes are `resolver` routes: registerRoutes has already checked
 * the viewer, the CSRF token and SWEEPER_UI_RESOLVERS before a handler runs.
 */
export const CLOSE_ACTIONS = {
  resolve: { state: 'resolved', notDuplicate: false, done: 'resolved', verb: 'Resolved' },
  ignore: { state: 'ignored', notDuplicate: false, done: 'ignored', verb: 'Ignored' },
  not_duplicate: { state: 'resolved', notDuplicate: true, done: 'not_duplicate', verb: 'Marked not a duplicate' },
} as const;
export type CloseAction = keyof typeof CLOSE_ACTIONS;

export const MAX_NOTE_LENGTH = 2_000;
/** At most one page of the list at once. */
export const MAX_BULK = 200;

interface CloseForm {
  action: CloseAction;
  note: string;
}

function readForm(body: unknown): CloseForm {
  const form = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const action = typeof form.action === 'string' && form.action in CLOSE_ACTIONS ? (form.action as CloseAction) : null;
  if (action === null) throw new RequestProblem(400, 'Choose resolve, ignore or not a duplicate.');
  const note = typeof form.note === 'string' ? form.note.trim() : '';
  if (note === '') throw new RequestProblem(400, 'Write a note saying why: what was done or decided.');
  if ([...note].length > MAX_NOTE_LENGTH)
    throw new RequestProblem(400, `The note is longer than ${MAX_NOTE_LENGTH} characters.`);
  return { action, note };
}

async function close(ctx: RouteContext, ids: number[], form: CloseForm): Promise<ClosedFindings> {
  const viewer = ctx.viewer;
  if (!viewer) throw new RequestProblem(401, 'Nobody is signed in.');
  const how = CLOSE_ACTIONS[form.action];
  const result = await resolveFindings(ctx.deps.pool, {
    ids,
    note: form.note,
    actor: viewer.name,
    now: ctx.deps.clock(),
    state: how.state,
    notDuplicate: how.notDuplicate,
  });
  ctx.deps.logger.info(
    { actor: viewer.name, action: form.action, closed: result.closed, refused: result.refused.map((r) => r.id) },
    'review page: findings closed',
  );
  return result;
}

async function closeOne(ctx: RouteContext): Promise<RouteResult> {
  const id = findingId((ctx.request.params as { id?: string }).id);
  const form = readForm(ctx.request.body);
  const { refused } = await close(ctx, [id], form);
  const problem = refused[0];
  if (problem) throw new RequestProblem(problem.reason.startsWith('no finding') ? 404 : 409, `${problem.reason}.`);
  return { kind: 'redirect', location: `/findings/${id}?done=${CLOSE_ACTIONS[form.action].done}` };
}

async function closeMany(ctx: RouteContext): Promise<RouteResult> {
  const body = (ctx.request.body ?? {}) as Record<string, unknown>;
  const raw = Array.isArray(body.id) ? body.id : body.id === undefined ? [] : [body.id];
  const ids = raw.filter((v): v is string => typeof v === 'string' && /^\d{1,18}$/.test(v)).map(Number);
  if (ids.length !== raw.length) throw new RequestProblem(400, 'A finding is named by its number.');
  if (ids.length === 0) throw new RequestProblem(400, 'Select the findings to close first.');
  if (ids.length > MAX_BULK) throw new RequestProblem(400, `At most ${MAX_BULK} findings at once.`);
  const form = readForm(body);
  const { closed, refused } = await close(ctx, ids, form);
  const back = localNext(body.back);
  const page = html`<section class="card">
    <h1>${CLOSE_ACTIONS[form.action].verb} ${closed.length} finding${closed.length === 1 ? '' : 's'}</h1>
    ${
      closed.length > 0
        ? html`<p class="notice" role="status">
            ${closed.map((id, i) => html`${i > 0 ? ', ' : ''}<a href="/findings/${id}">#${id}</a>`)}
          </p>`
        : ''
    }
    ${
      refused.length > 0
        ? html`<p>Not changed:</p>
            <ul class="refused">
              ${refused.map((r) => html`<li><a href="/findings/${r.id}">#${r.id}</a>: ${r.reason}</li>`)}
            </ul>`
        : ''
    }
    <p><a href="${back}">Back to the list</a></p>
  </section>`;
  return { kind: 'page', title: 'Findings closed', body: page };
}

export const findingActionRoutes: ReviewRoute[] = [
  { method: 'POST', path: '/findings/:id/close', access: 'resolver', handler: closeOne },
  { method: 'POST', path: '/findings/close', access: 'resolver', handler: closeMany },
];
