import type { FastifyRequest } from 'fastify';
import { tokenMatches } from './auth.js';
import type { ReviewRoute, RouteContext, RouteResult } from './context.js';
import { html, type Html } from './html.js';
import { personName } from './names.js';

/**
 * Signing in with SWEEPER_UI_TOKEN: a form asks for the shared token and the person's
 * name; the answer is a session cookie naming them, signed by @fastify/cookie (with a key
 * derived from the token, auth.ts), HttpOnly, SameSite=Lax, and Secure when the request
 * came over TLS (directly, or as a trusted proxy's X-Forwarded-Proto says). The name
 * is the actor of every write the person makes.
 */
export const SESSION_COOKIE = 'sweeper_session';

/** How long a sign-in lasts: a working day, then the form again. */
export const SESSION_HOURS = 12;

const MAX_NEXT_LENGTH = 2_000;

interface SessionValue {
  /** The person's name. */
  n: string;
  /** Expiry, epoch milliseconds: the signature covers it, so it cannot be stretched. */
  e: number;
}

/** The person a valid, unexpired session cookie names, or null. */
export function readSession(request: FastifyRequest, now: Date): string | null {
  const raw = request.cookies[SESSION_COOKIE];
  if (!raw) return null;
  const unsigned = request.unsignCookie(raw);
  if (!unsigned.valid) return null;
  let value: Partial<SessionValue>;
  try {
    value = JSON.parse(Buffer.from(unsigned.value, 'base64url').toString('utf8')) as Partial<SessionValue>;
  } catch {
    return null;
  }
  if (typeof value.n !== 'string' || typeof value.e !== 'number' || value.e <= now.getTime()) return null;
  const checked = personName(value.n);
  return 'name' in checked ? checked.name : null;
}

/** Where to go after signing in: a path of this site only, never another origin (`//evil`, `/\evil`). */
export function localNext(next: unknown): string {
  if (typeof next !== 'string' || next.length > MAX_NEXT_LENGTH) return '/';
  return /^\/(?![/\\])[^\s]*$/.test(next) ? next : '/';
}

function signInForm(ctx: RouteContext, next: string, problem: string | null): Html {
  if (ctx.auth.token === null) {
    return html`<section class="card narrow">
      <h1>Sign in</h1>
      <p>This page is signed in through the auth proxy in front of it: open it through the proxy.</p>
    </section>`;
  }
  return html`<section class="card narrow">
    <h1>Sign in</h1>
    <p>Ask whoever runs sweeper for the review page's token. Your name is recorded on every change you make.</p>
    ${problem ? html`<p class="problem" role="alert">${problem}</p>` : ''}
    <form method="post" action="/signin" class="stack">
      <input type="hidden" name="_csrf" value="${ctx.csrfToken()}" />
      <input type="hidden" name="next" value="${next}" />
      <label>Token <input type="password" name="token" autocomplete="current-password" required /></label>
      <label>Your name <input type="text" name="name" autocomplete="name" maxlength="100" required /></label>
      <button type="submit">Sign in</button>
    </form>
  </section>`;
}

function field(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | null | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

async function signIn(ctx: RouteContext): Promise<RouteResult> {
  const { request, reply, auth } = ctx;
  const next = localNext(field(request.body, 'next'));
  if (auth.token === null) return { kind: 'page', title: 'Sign in', body: signInForm(ctx, next, null), status: 404 };
  const checked = personName(field(request.body, 'name'));
  if (!tokenMatches(field(request.body, 'token'), auth.token)) {
    // Neither the token typed nor the name is logged: either may be a secret typed in the wrong box.
    ctx.deps.logger.warn({ ip: request.ip }, 'review page: sign-in refused (wrong token)');
    return { kind: 'page', title: 'Sign in', body: signInForm(ctx, next, 'That token is not right.'), status: 401 };
  }
  if ('problem' in checked) {
    const body = signInForm(ctx, next, `Your name ${checked.problem}.`);
    return { kind: 'page', title: 'Sign in', body, status: 400 };
  }
  const expires = ctx.deps.clock().getTime() + SESSION_HOURS * 3_600_000;
  const value: SessionValue = { n: checked.name, e: expires };
  reply.setCookie(SESSION_COOKIE, Buffer.from(JSON.stringify(value)).toString('base64url'), {
    signed: true,
    httpOnly: true,
    sameSite: 'lax',
    secure: 'auto',
    path: '/',
    maxAge: SESSION_HOURS * 3_600,
  });
  ctx.deps.logger.info({ actor: checked.name, ip: request.ip }, 'review page: signed in');
  return { kind: 'redirect', location: next };
}

export const sessionRoutes: ReviewRoute[] = [
  {
    method: 'GET',
    path: '/signin',
    access: 'anyone',
    handler: async (ctx) => {
      if (ctx.viewer) return { kind: 'redirect', location: '/' };
      const next = localNext((ctx.request.query as Record<string, unknown>).next);
      return { kind: 'page', title: 'Sign in', body: signInForm(ctx, next, null) };
    },
  },
  { method: 'POST', path: '/signin', access: 'anyone', handler: signIn },
  {
    method: 'POST',
    path: '/signout',
    access: 'reader',
    handler: async ({ reply }) => {
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
      return { kind: 'redirect', location: '/signin' };
    },
  },
];
