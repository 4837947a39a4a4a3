import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAddressList } from '../../src/serve/addresses.js';
import { ROUTES } from '../../src/serve/routes.js';
import { SESSION_COOKIE } from '../../src/serve/session.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import {
  csrfOf,
  reviewApp,
  reviewSettings,
  seedReviewScenario,
  TOKEN,
  Visitor,
  type ReviewScenario,
} from '../support/review.js';

/**
 * Who may do what on the review page, through Fastify's `inject` on a real database:
 * every write route against nobody, a reader, a resolver, a missing or wrong CSRF token,
 * and an auth proxy's header from a trusted and an untrusted address; the session
 * cookie's flags; the refusals of sign-in.
 */
const NOW = new Date('2026-11-10T12:00:00Z');
const PROXY = '10.0.0.5';
const STRANGER = '10.9.9.9';

let db: TestDatabase;
let scenario: ReviewScenario;
let app: FastifyInstance;

beforeAll(async () => {
  db = await createTestDatabase();
  scenario = await seedReviewScenario(db.pool, NOW);
  const proxies = parseAddressList(`${PROXY}, 192.168.0.0/16`);
  if (typeof proxies === 'string') throw new Error(proxies);
  ({ app } = await reviewApp(
    db.pool,
    NOW,
    reviewSettings({ resolvers: ['Alice', 'carol'], trustedHeader: 'x-forwarded-user', trustedProxies: proxies }),
  ));
});
afterAll(async () => {
  await app.close();
  await db.drop();
});

const openIds = () => Object.values(scenario.open).flat();
/** The finding every refused write aims at: it must stay open through them all. */
const witness = () => openIds()[0]!;
let nextFinding = 1;
/** A finding still open, for a write that closes it; never used by another test of this file. */
function freshFinding(): number {
  const id = openIds()[nextFinding++];
  if (id === undefined) throw new Error('the scenario ran out of open findings');
  return id;
}
const stateOf = async (id: number) =>
  (
    await db.pool.query<{ state: string; closed_by: string | null }>(
      'SELECT state, closed_by FROM recon_findings WHERE id = $1',
      [id],
    )
  ).rows[0];
const auditOf = async (id: number) =>
  (
    await db.pool.query<{ actor: string; action: string }>(
      'SELECT actor, action FROM recon_repairs WHERE finding_id = $1',
      [id],
    )
  ).rows;

/** Each write route that changes findings, with the form that would close `id` through it. */
const WRITES: Record<string, (id: number) => { url: string; fields: Record<string, string | string[]> }> = {
  '/findings/:id/close': (id) => ({
    url: `/findings/${id}/close`,
    fields: { action: 'resolve', note: 'checked by hand' },
  }),
  '/findings/close': (id) => ({
    url: '/findings/close',
    fields: { id: [String(id)], action: 'ignore', note: 'known' },
  }),
};

/** The plan writes: their authorization is tested with a plan to approve and apply (serve-plans.test.ts). */
const PLAN_WRITES = ['/plans/:id/apply', '/plans/:id/approve'];
const resolverWrites = ROUTES.filter(
  (r) => r.method === 'POST' && r.access === 'resolver' && !PLAN_WRITES.includes(r.path),
);

describe('the write routes', () => {
  it('are every resolver route of the table, and each has a case here (or in serve-plans.test.ts)', () => {
    expect(resolverWrites.map((r) => r.path).sort()).toEqual(Object.keys(WRITES).sort());
    expect(
      ROUTES.filter((r) => r.method === 'POST' && PLAN_WRITES.includes(r.path)).map((r) => [r.path, r.access]),
    ).toEqual(PLAN_WRITES.map((path) => [path, 'resolver']).reverse());
    // Every POST route of the table is either a resolver's write or the sign-in and sign-out.
    expect(
      ROUTES.filter((r) => r.method === 'POST' && r.access !== 'resolver')
        .map((r) => r.path)
        .sort(),
    ).toEqual(['/signin', '/signout']);
  });

  describe.each(resolverWrites.map((r) => r.path))('POST %s', (path) => {
    const write = WRITES[path]!;

    it('nobody signed in: 401, nothing changes', async () => {
      const id = witness();
      const visitor = new Visitor(app);
      // A CSRF token of a page nobody signed in to, so only the sign-in is missing.
      const { url, fields } = write(id);
      const response = await visitor.post(url, { _csrf: csrfOf((await visitor.get('/signin')).body), ...fields });
      expect(response.statusCode).toBe(401);
      expect(await stateOf(id)).toMatchObject({ state: 'open' });
      expect(await auditOf(id)).toEqual([]);
    });

    it('a reader (signed in, not a resolver): 403, nothing changes, and no form to do it is shown', async () => {
      const id = witness();
      const bob = new Visitor(app);
      expect((await bob.signIn('bob')).statusCode).toBe(303);
      const page = await bob.get(`/findings/${id}`);
      expect(page.body).not.toContain(`action="/findings/${id}/close"`);
      expect((await bob.get('/')).body).not.toContain('action="/findings/close"');
      const { url, fields } = write(id);
      const response = await bob.post(url, { _csrf: csrfOf(page.body), ...fields });
      expect(response.statusCode).toBe(403);
      expect(response.body).toContain('bob may read but not change findings');
      expect(await stateOf(id)).toMatchObject({ state: 'open' });
    });

    it('a resolver without the CSRF token: 403, nothing changes', async () => {
      const id = witness();
      const alice = new Visitor(app);
      await alice.signIn('alice');
      await alice.get('/');
      const { url, fields } = write(id);
      const response = await alice.post(url, fields);
      expect(response.statusCode).toBe(403);
      expect(response.body).toMatch(/CSRF token is missing or wrong/);
      expect(await stateOf(id)).toMatchObject({ state: 'open' });
    });

    it("a resolver with a wrong token (made up, or another person's): 403, nothing changes", async () => {
      const id = witness();
      const alice = new Visitor(app);
      await alice.signIn('alice');
      const mine = csrfOf((await alice.get('/')).body);
      const { url, fields } = write(id);
      expect((await alice.post(url, { _csrf: `${mine.slice(0, -4)}AAAA`, ...fields })).statusCode).toBe(403);
      // Carol is a resolver too; her token is bound to her name, not Alice's.
      const carol = new Visitor(app);
      await carol.signIn('carol');
      const hers = csrfOf((await carol.get('/')).body);
      expect((await alice.post(url, { _csrf: hers, ...fields })).statusCode).toBe(403);
      expect(await stateOf(id)).toMatchObject({ state: 'open' });
    });

    it('a resolver with the token: done, recorded with their name as they signed in', async () => {
      const id = freshFinding();
      const alice = new Visitor(app);
      await alice.signIn('alice');
      const { url, fields } = write(id);
      const response = await alice.submit('/', url, fields);
      expect([200, 303]).toContain(response.statusCode);
      expect(await stateOf(id)).toMatchObject({ closed_by: 'alice' });
      expect(await auditOf(id)).toEqual([{ actor: 'alice', action: expect.stringMatching(/^(resolved|ignored)$/) }]);
    });

    it("the proxy's header from an address that is not a trusted proxy is ignored: 401", async () => {
      const id = witness();
      const forged = new Visitor(app, { remoteAddress: STRANGER, headers: { 'x-forwarded-user': 'alice' } });
      const page = await forged.get('/signin');
      expect(page.body).not.toContain('alice');
      const { url, fields } = write(id);
      const response = await forged.post(url, { _csrf: csrfOf(page.body), ...fields });
      expect(response.statusCode).toBe(401);
      expect(await stateOf(id)).toMatchObject({ state: 'open' });
    });

    it("the proxy's header from a trusted proxy names the actor", async () => {
      const id = freshFinding();
      const viaProxy = new Visitor(app, { remoteAddress: '192.168.4.4', headers: { 'x-forwarded-user': 'Carol' } });
      const { url, fields } = write(id);
      const response = await viaProxy.submit('/', url, fields);
      expect([200, 303]).toContain(response.statusCode);
      expect(await stateOf(id)).toMatchObject({ closed_by: 'Carol' });
    });
  });

  it('sign-out needs its CSRF token too, and ends the session', async () => {
    const alice = new Visitor(app);
    await alice.signIn('alice');
    expect((await alice.post('/signout', {})).statusCode).toBe(403);
    expect((await alice.get('/')).statusCode).toBe(200);
    expect((await alice.submit('/', '/signout', {})).statusCode).toBe(303);
    expect(alice.cookies.has(SESSION_COOKIE)).toBe(false);
    expect((await alice.get('/')).headers.location).toBe('/signin?next=%2F');
  });

  it('the sign-in form needs its CSRF token', async () => {
    const visitor = new Visitor(app);
    await visitor.get('/signin');
    const response = await visitor.post('/signin', { token: TOKEN, name: 'alice' });
    expect(response.statusCode).toBe(403);
    expect(visitor.cookies.has(SESSION_COOKIE)).toBe(false);
  });
});

describe('signing in', () => {
  it('a page asked for without a session goes to the sign-in form, and back after it', async () => {
    const visitor = new Visitor(app);
    const first = await visitor.get('/runs?range=7d');
    expect(first.statusCode).toBe(303);
    expect(first.headers.location).toBe('/signin?next=%2Fruns%3Frange%3D7d');
    const form = await visitor.get(first.headers.location as string);
    expect(form.body).toContain('value="/runs?range=7d"');
    const signedIn = await visitor.post('/signin', {
      _csrf: csrfOf(form.body),
      token: TOKEN,
      name: 'dave',
      next: '/runs?range=7d',
    });
    expect(signedIn.headers.location).toBe('/runs?range=7d');
  });

  it('a wrong token: 401, no session, and the token typed is not shown back', async () => {
    const visitor = new Visitor(app);
    const response = await visitor.submit('/signin', '/signin', { token: 'not-the-token-at-all', name: 'alice' });
    expect(response.statusCode).toBe(401);
    expect(response.body).toContain('That token is not right.');
    expect(response.body).not.toContain('not-the-token-at-all');
    expect(visitor.cookies.has(SESSION_COOKIE)).toBe(false);
  });

  it.each([
    ['sweeper', /the name of the sweep&#39;s own automatic actions/],
    ['   ', /is empty/],
    ['al\u202eice', /control or formatting characters/],
  ])('the name %j is refused', async (name, message) => {
    const visitor = new Visitor(app);
    const response = await visitor.submit('/signin', '/signin', { token: TOKEN, name });
    expect(response.statusCode).toBe(400);
    expect(response.body).toMatch(message);
    expect(visitor.cookies.has(SESSION_COOKIE)).toBe(false);
  });

  it('goes back only to a page of this site', async () => {
    for (const next of ['//evil.example/x', '/\\evil.example', 'https://evil.example/']) {
      const visitor = new Visitor(app);
      const response = await visitor.submit('/signin', '/signin', { token: TOKEN, name: 'alice', next });
      expect(response.headers.location, next).toBe('/');
    }
  });

  it('the session cookie is signed, HttpOnly and SameSite=Lax; Secure when a trusted proxy says the request came over TLS', async () => {
    const cookieOf = (response: { headers: Record<string, unknown> }) =>
      ([response.headers['set-cookie']].flat() as string[]).find((c) => c.startsWith(`${SESSION_COOKIE}=`)) ?? '';
    const plain = cookieOf(await new Visitor(app).signIn('alice'));
    expect(plain).toMatch(/HttpOnly/);
    expect(plain).toMatch(/SameSite=Lax/);
    expect(plain).not.toMatch(/Secure/);
    const viaProxy = cookieOf(
      await new Visitor(app, { remoteAddress: PROXY, headers: { 'x-forwarded-proto': 'https' } }).signIn('alice'),
    );
    expect(viaProxy).toMatch(/; Secure/);
    // The same header from anyone else is not believed.
    const forged = cookieOf(
      await new Visitor(app, { remoteAddress: STRANGER, headers: { 'x-forwarded-proto': 'https' } }).signIn('alice'),
    );
    expect(forged).toMatch(/HttpOnly/);
    expect(forged).not.toMatch(/Secure/);
  });

  it('a session cookie whose name was changed, or that is past its 12 hours, counts for nothing', async () => {
    const alice = new Visitor(app);
    await alice.signIn('bob');
    const value = alice.cookies.get(SESSION_COOKIE)!;
    const [payload, signature] = [value.slice(0, value.lastIndexOf('.')), value.slice(value.lastIndexOf('.'))];
    const claims = JSON.parse(Buffer.from(decodeURIComponent(payload), 'base64url').toString()) as { n: string };
    expect(claims.n).toBe('bob');
    const forged = Buffer.from(JSON.stringify({ ...claims, n: 'alice' })).toString('base64url');
    alice.cookies.set(SESSION_COOKIE, `${forged}${signature}`);
    expect((await alice.get('/')).statusCode).toBe(303);
    // The same token signs the same way in a new process; twelve hours later the cookie has expired.
    const later = await reviewApp(db.pool, new Date(NOW.getTime() + 12 * 3_600_000 + 1), reviewSettings());
    const carol = new Visitor(app);
    await carol.signIn('carol');
    const tomorrow = new Visitor(later.app);
    tomorrow.cookies.set(SESSION_COOKIE, carol.cookies.get(SESSION_COOKIE)!);
    expect((await tomorrow.get('/')).statusCode).toBe(303);
    const sameDay = await reviewApp(db.pool, new Date(NOW.getTime() + 3_600_000), reviewSettings());
    const again = new Visitor(sameDay.app);
    again.cookies.set(SESSION_COOKIE, carol.cookies.get(SESSION_COOKIE)!);
    expect((await again.get('/')).statusCode).toBe(200);
    await later.app.close();
    await sameDay.app.close();
  });

  it('with only an auth proxy, a request without its header is refused (401), not sent to a form', async () => {
    const proxies = parseAddressList(PROXY);
    if (typeof proxies === 'string') throw new Error(proxies);
    const proxied = await reviewApp(
      db.pool,
      NOW,
      reviewSettings({ token: null, trustedHeader: 'x-auth-user', trustedProxies: proxies }),
    );
    const response = await new Visitor(proxied.app, { remoteAddress: PROXY }).get('/');
    expect(response.statusCode).toBe(401);
    expect(response.body).toContain('open this page through the auth proxy');
    const named = await new Visitor(proxied.app, { remoteAddress: PROXY, headers: { 'x-auth-user': 'erin' } }).get('/');
    expect(named.statusCode).toBe(200);
    expect(named.body).toContain('erin');
    expect(named.body).toContain('read-only');
    await proxied.app.close();
  });
});

describe('every answer', () => {
  it('carries a Content-Security-Policy without inline script, and pages are not cached', async () => {
    const alice = new Visitor(app);
    await alice.signIn('alice');
    for (const url of ['/', '/runs', `/findings/${openIds()[0]}`, '/signin', '/nowhere']) {
      const response = await alice.get(url);
      const csp = String(response.headers['content-security-policy']);
      expect(csp, url).toMatch(/script-src 'self'/);
      expect(csp, url).toMatch(/default-src 'none'/);
      expect(csp, url).not.toMatch(/unsafe-inline|unsafe-eval/);
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      if (response.statusCode === 200) expect(response.headers['cache-control']).toBe('no-store');
    }
  });
});

describe('--insecure-local', () => {
  it('needs no sign-in, acts as SWEEPER_ACTOR, says so on every page, and answers only to loopback host names', async () => {
    const local = await reviewApp(db.pool, NOW, reviewSettings({ token: null, resolvers: [], actor: 'frank' }), {
      insecureLocal: true,
    });
    const visitor = new Visitor(local.app, { headers: { host: '127.0.0.1:8080' } });
    const page = await visitor.get('/');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Unauthenticated');
    expect(page.body).toContain('frank');
    const id = freshFinding();
    expect((await visitor.submit('/', `/findings/${id}/close`, { action: 'resolve', note: 'local' })).statusCode).toBe(
      303,
    );
    expect(await stateOf(id)).toMatchObject({ closed_by: 'frank' });
    // A page elsewhere that points its own name at 127.0.0.1 (DNS rebinding) reads nothing.
    const rebound = await new Visitor(local.app, { headers: { host: 'attacker.example:8080' } }).get('/');
    expect(rebound.statusCode).toBe(421);
    expect(rebound.body).not.toContain('frank');
    expect((await new Visitor(local.app, { headers: { host: 'localhost:8080' } }).get('/')).statusCode).toBe(200);
    await local.app.close();
  });
});
