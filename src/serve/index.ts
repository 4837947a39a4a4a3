import type { FastifyInstance } from 'fastify';
import type { ReviewAuth } from './auth.js';
import type { ReviewDeps } from './context.js';
import { createReviewServer } from './server.js';

/**
 * `sweeper serve`: the review page (docs/review.md). A library: the CLI (and the demo)
 * pass the pool, the configuration, the clock and the logger, and stop it with `close`.
 */
export type { ReviewDeps, Viewer } from './context.js';
export { reviewAuth, type ReviewAuth } from './auth.js';
export { createReviewServer } from './server.js';

export interface ListenOptions {
  host: string;
  /** 0: any free port (the address says which). */
  port: number;
}

export interface RunningReviewServer {
  /** Where it listens, such as http://127.0.0.1:8080/. */
  url: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

/** Builds the server with the authentication `reviewAuth` decided, and listens. */
export async function startReviewServer(
  deps: ReviewDeps,
  auth: ReviewAuth,
  options: ListenOptions,
): Promise<RunningReviewServer> {
  const app = await createReviewServer(deps, auth);
  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const host = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  return { url: `http://${host}:${port}/`, app, close: () => app.close() };
}

/** How the page authenticates, for the log line at start (never the token itself). */
export function authDescription(auth: ReviewAuth): string {
  if (auth.localActor !== null) return `none (--insecure-local, acting as ${auth.localActor})`;
  const ways = [
    ...(auth.token !== null ? ['token sign-in'] : []),
    ...(auth.header !== null ? [`the ${auth.header} header from trusted proxies`] : []),
  ];
  return ways.join(' or ');
}
