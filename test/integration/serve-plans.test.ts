import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { makePlan, requirePlan } from '../../src/plans/index.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { copyOf, PLAN_NOW, planOptions, seedPlanHistory } from '../support/plans.js';
import { reviewApp, reviewSettings, Visitor } from '../support/review.js';
import { memoryEvidence, memorySweepDeps } from '../support/scenario.js';

/**
 * The review page's plan pages and their two writes (src/serve/plans.ts,
 * plan-actions.ts): who may approve and apply (resolvers; never the author approving),
 * the CSRF token on both, and an apply without Stripe's word leaving releases and refunds.
 */
let db: TestDatabase;
let stripe: NormalizedCharge[];
let withStripe: FastifyInstance;
let withoutStripe: FastifyInstance;
let evidence: ReturnType<typeof memoryEvidence>;
const settings = reviewSettings({ resolvers: ['alice', 'bob'] });

beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 4 });
  await ensureDayPartitions(db.pool, { from: '2026-11-01', to: '2026-11-15' });
  stripe = copyOf(await seedPlanHistory(db.pool));
  evidence = memoryEvidence(() => stripe);
  ({ app: withStripe } = await reviewApp(db.pool, PLAN_NOW, settings, { evidence }));
  ({ app: withoutStripe } = await reviewApp(db.pool, PLAN_NOW, settings));
});
afterAll(async () => {
  await withStripe.close();
  await withoutStripe.close();
  await db.drop();
});

const plan = async (author: string) =>
  (
    await makePlan(
      memorySweepDeps(db.pool, () => stripe, PLAN_NOW, { evidence }),
      planOptions(),
      {
        author,
        now: PLAN_NOW,
      },
    )
  ).body;
const states = async (id: string) => [...(await requirePlan(db.pool, id)).steps.values()].map((s) => s.state);
const signedIn = async (app: FastifyInstance, name: string) => {
  const v = new Visitor(app);
  expect((await v.signIn(name)).statusCode).toBe(303);
  return v;
};

describe('plans on the review page', () => {
  it('applies without Stripe’s word what the database can judge; releases and refunds wait', async () => {
    const first = await plan('alice');
    const bob = await signedIn(withoutStripe, 'bob');
    const page = await bob.get(`/plans/${first.id}`);
    expect(page.body).toContain('this page has no STRIPE_API_KEY');
    const applied = await bob.submit(`/plans/${first.id}`, `/plans/${first.id}/apply`, { action: 'apply' });
    expect(applied.statusCode, applied.body).toBe(303);
    expect(applied.headers.location).toBe(`/plans/${first.id}?done=applied`);
    expect(await states(first.id)).toEqual([
      'applied',
      'applied',
      'planned',
      'applied',
      'applied',
      'applied',
      'planned',
    ]);
    const after = await bob.get(`/plans/${first.id}?done=applied`);
    // Each waiting step says why, in its row (not only in the audit's details).
    const row = (step: number) => new RegExp(`data-step="${step}"[^]*?class="reason">([^<]*)<`).exec(after.body)?.[1];
    expect(row(3)).toMatch(/applied only on Stripe&#39;s own word/);
    expect(row(7)).toMatch(/awaits approval by someone other than alice/);
    expect(row(1)?.trim()).toBe('');
  });

  it('lets only a resolver other than the author approve, only with the CSRF token; then applies the refund', async () => {
    const second = await plan('alice');
    expect(second.steps.map((s) => s.kind)).toEqual(['release_claim', 'refund_duplicates']);
    const list = await (await signedIn(withStripe, 'carol')).get('/plans');
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain(`data-plan="${second.id}"`);

    // Nobody signed in: 401 (with a token of the sign-in page, so only the sign-in is missing).
    const nobody = new Visitor(withStripe);
    for (const action of ['approve', 'apply'])
      expect((await nobody.submit('/signin', `/plans/${second.id}/${action}`, {})).statusCode).toBe(401);
    // A reader (not in SWEEPER_UI_RESOLVERS) sees no form and is refused both writes.
    const carol = await signedIn(withStripe, 'carol');
    expect((await carol.get(`/plans/${second.id}`)).body).not.toContain(`action="/plans/${second.id}/approve"`);
    for (const action of ['approve', 'apply'])
      expect((await carol.submit(`/plans/${second.id}`, `/plans/${second.id}/${action}`, {})).statusCode).toBe(403);
    // The author is told, and refused if they post anyway.
    const alice = await signedIn(withStripe, 'Alice');
    expect((await alice.get(`/plans/${second.id}`)).body).toContain('You made this plan');
    const own = await alice.submit(`/plans/${second.id}`, `/plans/${second.id}/approve`, {});
    expect(own.statusCode).toBe(403);
    expect(own.body).toMatch(/cannot approve it: four eyes on money need a second person/);
    // Without the CSRF token nothing happens.
    const bob = await signedIn(withStripe, 'bob');
    for (const action of ['approve', 'apply'])
      expect((await bob.post(`/plans/${second.id}/${action}`, { action })).statusCode).toBe(403);
    expect((await requirePlan(db.pool, second.id)).approvedBy).toBeNull();

    // Applied before approval: the release only.
    await bob.submit(`/plans/${second.id}`, `/plans/${second.id}/apply`, { action: 'apply' });
    expect(await states(second.id)).toEqual(['applied', 'planned']);
    expect(evidence.calls.refundPosts).toBe(0);
    const approved = await bob.submit(`/plans/${second.id}`, `/plans/${second.id}/approve`, { action: 'approve' });
    expect(approved.headers.location).toBe(`/plans/${second.id}?done=approved`);
    await alice.submit(`/plans/${second.id}`, `/plans/${second.id}/apply`, { action: 'apply' });
    expect(await states(second.id)).toEqual(['applied', 'applied']);
    expect(evidence.calls.refundPosts).toBe(1);
    const { rows } = await db.pool.query(`SELECT action, actor FROM recon_plan_events WHERE plan_id = $1 ORDER BY id`, [
      second.id,
    ]);
    expect(rows.map((r: { action: string; actor: string }) => `${r.action}:${r.actor}`)).toEqual([
      'planned:alice',
      'applied:bob',
      'approved:bob',
      'applied:Alice',
    ]);
    const page = (await bob.get(`/plans/${second.id}`)).body;
    expect(page).toContain('Every step is decided');
    expect(page).not.toContain(`action="/plans/${second.id}/approve"`);
  });

  it('answers 404 for a plan that is not there or an id that is not one', async () => {
    const bob = await signedIn(withStripe, 'bob');
    expect((await bob.get('/plans/plan_20200101T000000Z_00000000')).statusCode).toBe(404);
    expect((await bob.get('/plans/nonsense%27')).statusCode).toBe(404);
  });
});
