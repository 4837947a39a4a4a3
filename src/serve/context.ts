import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config, ReviewSettings } from '../config.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../log.js';
import type { ProviderEvidence } from '../sweep/provider.js';
import type { ReviewAuth } from './auth.js';
import type { Html } from './html.js';

/** What the review page is given: nothing is reached for globally (ARCHITECTURE.md "I/O is passed in"). */
export interface ReviewDeps {
  pool: Pool;
  config: Config;
  settings: ReviewSettings;
  /** The time of a request: what ages and charts are measured from, and what a write records. */
  clock: () => Date;
  logger: Logger;
  /**
   * Stripe's own word, when STRIPE_API_KEY is set: what a plan's apply re-reads its
   * charges from. Without it the page applies the steps the database can judge alone, and
   * releases and refunds wait for `sweeper apply` (docs/plans.md).
   */
  evidence?: ProviderEvidence | null;
}

/** Who is looking at the page, and how they were recognised. */
export interface Viewer {
  /** The actor recorded on every write they make. */
  name: string;
  /** Named in SWEEPER_UI_RESOLVERS (or the one local user of `--insecure-local`). */
  canResolve: boolean;
  /** `session`: signed in with the token; `proxy`: the auth proxy's header; `local`: `--insecure-local`. */
  via: 'session' | 'proxy' | 'local';
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hook for every request; null: nobody signed in. */
    viewer: Viewer | null;
  }
}

/** Everything a page or action needs to answer one request. */
export interface RouteContext {
  request: FastifyRequest;
  reply: FastifyReply;
  /** Null only on routes open to anyone (the sign-in page, the stylesheet). */
  viewer: Viewer | null;
  deps: ReviewDeps;
  auth: ReviewAuth;
  /** A CSRF token for the forms of this page, bound to the viewer (@fastify/csrf-protection). */
  csrfToken(): string;
}

/** A page: its title and body, laid out with the navigation (layout.ts). */
export interface PageResult {
  kind: 'page';
  title: string;
  body: Html;
  status?: number;
}

/** After a write: where the browser goes next (303, so a reload does not post again). */
export interface RedirectResult {
  kind: 'redirect';
  location: string;
}

/** A static file (the stylesheet, the script). */
export interface AssetResult {
  kind: 'asset';
  contentType: string;
  body: string;
}

export type RouteResult = PageResult | RedirectResult | AssetResult;

/**
 * Who may use a route: `anyone` (the sign-in form and the static files), `reader`
 * (anyone signed in), `resolver` (SWEEPER_UI_RESOLVERS). Every POST route carries a
 * CSRF token whatever its access (routes.ts enforces it, not each handler).
 */
export type Access = 'anyone' | 'reader' | 'resolver';

export interface ReviewRoute {
  method: 'GET' | 'POST';
  /** A Fastify path (`/findings/:id`). */
  path: string;
  access: Access;
  handler(ctx: RouteContext): Promise<RouteResult>;
}

/** One entry of the navigation bar. */
export interface NavEntry {
  label: string;
  path: string;
}

/** Bad input from a request (a filter, a form): answered with its status and the message, never a stack. */
export class RequestProblem extends Error {
  override readonly name = 'RequestProblem';
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}
