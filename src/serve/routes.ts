import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { REVIEW_CSS, REVIEW_JS } from './assets.js';
import type { ReviewAuth } from './auth.js';
import { RequestProblem, type NavEntry, type ReviewDeps, type ReviewRoute, type RouteResult } from './context.js';
import { findingActionRoutes } from './actions.js';
import { findingPageRoutes } from './finding-page.js';
import { findingsListRoutes } from './findings-list.js';
import { layout } from './layout.js';
import { planActionRoutes } from './plan-actions.js';
import { planRoutes, PLANS_NAV } from './plans.js';
import { runsPageRoutes } from './runs-page.js';
import { sessionRoutes } from './session.js';

/**
 * The review page's route table: every page and action, with who may use it. A new
 * page is a module exporting its routes, added here and, when it
 * has a place in the navigation, to NAV. registerRoutes gives every route its checks, so
 * no handler can forget one: a signed-in viewer for `reader` and `resolver` routes, the
 * CSRF token for every POST, a resolver for `resolver` routes.
 */
export const NAV: readonly NavEntry[] = [{ label: 'Findings', path: '/' }, { label: 'Runs', path: '/runs' }, PLANS_NAV];

const assetRoutes: ReviewRoute[] = [
  {
    method: 'GET',
    path: '/static/review.css',
    access: 'anyone',
    handler: async () => ({ kind: 'asset', contentType: 'text/css; charset=utf-8', body: REVIEW_CSS }),
  },
  {
    method: 'GET',
    path: '/static/review.js',
    access: 'anyone',
    handler: async () => ({ kind: 'asset', contentType: 'text/javascript; charset=utf-8', body: REVIEW_JS }),
  },
];

export const ROUTES: readonly ReviewRoute[] = [
  ...findingsListRoutes,
  ...findingPageRoutes,
  ...findingActionRoutes,
  ...runsPageRoutes,
  ...planRoutes,
  ...planActionRoutes,
  ...sessionRoutes,
  ...assetRoutes,
];

/** 401 for nobody signed in: a page is sent to the sign-in form (when there is one), a write is refused. */
function requireViewer(auth: ReviewAuth): preHandlerHookHandler {
  return (request, reply, done) => {
    if (request.viewer) return done();
    if (request.method === 'GET' && auth.token !== null) {
      void reply.redirect(`/signin?next=${encodeURIComponent(request.url)}`, 303);
      return;
    }
    done(
      new RequestProblem(
        401,
        auth.token !== null
          ? 'You are not signed in: sign in first.'
          : 'Nobody is signed in: open this page through the auth proxy in front of it.',
      ),
    );
  };
}

const requireResolver: preHandlerHookHandler = (request, _reply, done) => {
  if (request.viewer?.canResolve) return done();
  done(
    new RequestProblem(
      403,
      `${request.viewer?.name ?? 'You'} may read but not change findings (not in SWEEPER_UI_RESOLVERS).`,
    ),
  );
};

export function registerRoutes(
  app: FastifyInstance,
  routes: readonly ReviewRoute[],
  deps: ReviewDeps,
  auth: ReviewAuth,
) {
  for (const route of routes) {
    const checks: preHandlerHookHandler[] = [];
    if (route.access !== 'anyone') checks.push(requireViewer(auth));
    // After the viewer: the token is bound to who it was issued to.
    if (route.method === 'POST') checks.push(app.csrfProtection);
    if (route.access === 'resolver') checks.push(requireResolver);
    app.route({
      method: route.method,
      url: route.path,
      preHandler: checks,
      handler: async (request, reply) => {
        const result = await route.handler({
          request,
          reply,
          viewer: request.viewer,
          deps,
          auth,
          csrfToken: () => csrfTokenFor(request, reply),
        });
        return send(request, reply, result, auth);
      },
    });
  }
}

const issued = new WeakMap<FastifyRequest, string>();

/**
 * Whom a CSRF token is bound to: the viewer's name, or for nobody signed in (the sign-in
 * form) a value no name can be (names have no control characters, names.ts): the CSRF
 * library refuses an empty one.
 */
export function csrfUser(request: FastifyRequest): string {
  return request.viewer?.name ?? '\u0000';
}

/**
 * One CSRF token per response, bound to the viewer. Issued once: a first visit has no
 * secret cookie yet, and each issue would set a new secret, orphaning the tokens
 * already written into the page.
 */
export function csrfTokenFor(request: FastifyRequest, reply: FastifyReply): string {
  let token = issued.get(request);
  if (token === undefined) {
    token = reply.generateCsrf({ userInfo: csrfUser(request) });
    issued.set(request, token);
  }
  return token;
}

/** A route's result as the HTTP answer. Pages are never cached: they show money and people's decisions. */
export function send(request: FastifyRequest, reply: FastifyReply, result: RouteResult, auth: ReviewAuth) {
  if (result.kind === 'redirect') return reply.redirect(result.location, 303);
  if (result.kind === 'asset') {
    return reply.header('cache-control', 'public, max-age=300').type(result.contentType).send(result.body);
  }
  const page = layout({
    title: result.title,
    body: result.body,
    viewer: request.viewer,
    auth,
    nav: NAV,
    path: request.url.split('?')[0] ?? '/',
    csrfToken: () => csrfTokenFor(request, reply),
  });
  return reply
    .code(result.status ?? 200)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(page.text);
}
