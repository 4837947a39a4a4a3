import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import fastifyHelmet from '@fastify/helmet';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { isLoopbackHost } from './addresses.js';
import { identify, type ReviewAuth } from './auth.js';
import { RequestProblem, type ReviewDeps } from './context.js';
import { problemBody } from './layout.js';
import { csrfUser, registerRoutes, ROUTES, send } from './routes.js';

/** The CSRF secret's cookie (@fastify/csrf-protection, double-submit with a signed cookie). */
export const CSRF_COOKIE = 'sweeper_csrf';

/**
 * The review page as a Fastify instance, not yet listening: `inject` drives it in the
 * tests, `startReviewServer` (index.ts) listens. Fastify parses HTTP; @fastify/cookie
 * signs and reads cookies, @fastify/formbody reads forms, @fastify/csrf-protection
 * issues and checks the CSRF tokens, @fastify/helmet sets the security headers with a
 * Content-Security-Policy that allows no inline script or style.
 */
export async function createReviewServer(deps: ReviewDeps, auth: ReviewAuth): Promise<FastifyInstance> {
  // Typed as Fastify's logger interface, which pino's logger implements: the instance's type stays the default.
  const logger: FastifyBaseLogger = deps.logger.child({ component: 'serve' });
  const app = Fastify({
    loggerInstance: logger,
    // Each write is logged by its action, with its actor; page views are not worth a line each.
    logController: new LogController({ disableRequestLogging: true }),
    // X-Forwarded-Proto and -For are believed only from SWEEPER_UI_TRUSTED_PROXIES.
    trustProxy: (address: string) => auth.isTrustedProxy(address),
    bodyLimit: 256 * 1024,
  });
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        objectSrc: ["'none'"],
      },
    },
    // Served over plain HTTP on a loopback address too: HSTS is the TLS terminator's to send.
    strictTransportSecurity: false,
    referrerPolicy: { policy: 'same-origin' },
  });
  await app.register(fastifyCookie, { secret: auth.cookieSecret });
  await app.register(fastifyFormbody);
  await app.register(fastifyCsrf, {
    cookieKey: CSRF_COOKIE,
    cookieOpts: { path: '/', sameSite: 'lax', httpOnly: true, signed: true, secure: 'auto' },
    getUserInfo: csrfUser,
    csrfOpts: { hmacKey: auth.csrfKey },
  });
  app.decorateRequest('viewer', null);
  app.addHook('onRequest', async (request, reply) => {
    // A page without authentication answers only to a loopback name: a web page elsewhere
    // cannot point a name of its own at 127.0.0.1 (DNS rebinding) and read it. Plain
    // text, without the page around it: nothing of the page is shown to that origin.
    if (auth.localActor !== null && !isLoopbackHost(request.hostname)) {
      return reply
        .code(421)
        .type('text/plain; charset=utf-8')
        .send('This unauthenticated page answers only to localhost and loopback addresses.\n');
    }
    request.viewer = identify(request, auth, deps.clock());
  });
  app.setErrorHandler((error: FastifyError | RequestProblem, request, reply) => {
    const status =
      error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) request.log.error({ err: error }, 'review page: request failed');
    return send(
      request,
      reply,
      { kind: 'page', title: 'Problem', body: problemBody(status, messageOf(error, status)), status },
      auth,
    );
  });
  app.setNotFoundHandler((request, reply) =>
    send(
      request,
      reply,
      { kind: 'page', title: 'Not found', body: problemBody(404, 'There is no such page.'), status: 404 },
      auth,
    ),
  );
  registerRoutes(app, ROUTES, deps, auth);
  return app;
}

function messageOf(error: FastifyError | RequestProblem, status: number): string {
  if (status === 500) return 'Something went wrong on the server; its log says what.';
  if ('code' in error && typeof error.code === 'string' && error.code.startsWith('FST_CSRF_')) {
    return 'This form is out of date or did not come from this page (its CSRF token is missing or wrong): reload the page and try again.';
  }
  return error.message;
}
