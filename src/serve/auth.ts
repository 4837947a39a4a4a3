import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { ReviewSettings } from '../config.js';
import { ConfigError } from '../errors.js';
import { addressMatcher, isLoopbackHost } from './addresses.js';
import type { Viewer } from './context.js';
import { personName, sameName } from './names.js';
import { readSession } from './session.js';

/**
 * How the review page knows who is looking (docs/review.md "Signing in"):
 * - `token`: SWEEPER_UI_TOKEN, a sign-in form, then a signed session cookie naming the person;
 * - `header`: SWEEPER_UI_TRUSTED_HEADER from an auth proxy in SWEEPER_UI_TRUSTED_PROXIES
 *   (both may be set: the header wins when it comes from a trusted proxy);
 * - `local`: `--insecure-local` on a loopback address, one user, no sign-in.
 */
export interface ReviewAuth {
  token: string | null;
  header: string | null;
  /** Whether an address is one of SWEEPER_UI_TRUSTED_PROXIES. */
  isTrustedProxy: (address: string | undefined) => boolean;
  /** `--insecure-local`'s one actor; null when the page authenticates. */
  localActor: string | null;
  resolvers: readonly string[];
  /** Signs session cookies: derived from the token (rotating it signs everyone out), else random per process. */
  cookieSecret: string;
  /** Binds CSRF tokens to the person they were issued to. */
  csrfKey: string;
}

/**
 * The authentication `sweeper serve` runs with, or a ConfigError (exit 64, one line
 * saying what to set) when there is none and `--insecure-local` does not allow that.
 */
export function reviewAuth(
  settings: ReviewSettings,
  options: { insecureLocal: boolean; host: string; osUser: string },
): ReviewAuth {
  const authenticated = settings.token !== null || settings.trustedHeader !== null;
  if (!authenticated && !options.insecureLocal) {
    throw new ConfigError(
      'sweeper serve needs authentication: set SWEEPER_UI_TOKEN (a shared sign-in token), or SWEEPER_UI_TRUSTED_HEADER ' +
        'and SWEEPER_UI_TRUSTED_PROXIES (an auth proxy in front); or, on this machine only, pass --insecure-local',
    );
  }
  if (!authenticated && !isLoopbackHost(options.host)) {
    throw new ConfigError(
      `--insecure-local serves only a loopback address (127.0.0.1, ::1, localhost), not --host ${options.host}: ` +
        'set SWEEPER_UI_TOKEN or SWEEPER_UI_TRUSTED_HEADER to serve other machines',
    );
  }
  let localActor: string | null = null;
  if (!authenticated) {
    const checked = personName(settings.actor ?? options.osUser);
    // The OS user may be `sweeper` (the service account): the page still needs a person's name.
    if ('problem' in checked)
      throw new ConfigError(`--insecure-local: the OS user's name ${checked.problem}: set SWEEPER_ACTOR to your name`);
    localActor = checked.name;
  }
  const derive = (label: string) =>
    settings.token === null
      ? randomBytes(32).toString('hex')
      : createHmac('sha256', settings.token).update(`sweeper serve: ${label}`).digest('hex');
  return {
    token: settings.token,
    header: settings.trustedHeader,
    isTrustedProxy: addressMatcher(settings.trustedProxies),
    localActor,
    resolvers: settings.resolvers,
    cookieSecret: derive('session cookies'),
    csrfKey: derive('csrf tokens'),
  };
}

/** The token typed at sign-in against SWEEPER_UI_TOKEN, in constant time whatever their lengths. */
export function tokenMatches(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export function canResolve(auth: ReviewAuth, name: string): boolean {
  // The one local user resolves unless SWEEPER_UI_RESOLVERS says who may.
  if (auth.localActor !== null && auth.resolvers.length === 0) return true;
  return auth.resolvers.some((r) => sameName(r, name));
}

/** Who sent this request, or null. The header counts only from a trusted proxy's own address (the socket's peer). */
export function identify(request: FastifyRequest, auth: ReviewAuth, now: Date): Viewer | null {
  const viewer = (name: string, via: Viewer['via']): Viewer => ({ name, via, canResolve: canResolve(auth, name) });
  if (auth.localActor !== null) return viewer(auth.localActor, 'local');
  if (auth.header !== null && auth.isTrustedProxy(request.socket.remoteAddress)) {
    const value = request.headers[auth.header];
    if (typeof value === 'string') {
      const checked = personName(value);
      return 'name' in checked ? viewer(checked.name, 'proxy') : null;
    }
  }
  if (auth.token !== null) {
    const name = readSession(request, now);
    if (name !== null) return viewer(name, 'session');
  }
  return null;
}
