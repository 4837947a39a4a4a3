import { describe, expect, it } from 'vitest';
import { stepVerdict, type StepView } from '../../src/plans/decide.js';
import { canonicalJson, planDigest, readPlanFile, type EvidenceEntry, type PlanStep } from '../../src/plans/format.js';

/** What an apply decides for one step (src/plans/decide.ts), from what it knows, without a database. */
const NOW = new Date('2026-11-10T12:00:00Z');
const claim: EvidenceEntry = { object: 'claim', id: 'acme/k', tenant_id: 'acme', key: 'k', version: 'v-claim' };
const charge: EvidenceEntry = { object: 'charge', id: 'ch_1', account: 'platform', version: 'v-charge' };

function step(over: Partial<PlanStep> = {}): PlanStep {
  return {
    step: 2,
    batch: 1,
    batch_name: 'slice:0',
    account: 'platform',
    category: 'claim_without_effect',
    subject: 'acme\u241fk',
    kind: 'complete_claim',
    action: 'complete_claim',
    moves_money: false,
    evidence: [claim, charge],
    finding: {},
    ...over,
  };
}

function view(over: Partial<StepView> & { versions?: Record<string, string | null | undefined> } = {}): StepView {
  const versions = over.versions ?? {};
  return {
    now: NOW,
    planId: 'plan_x',
    author: 'alice',
    approved: false,
    stripesWord: true,
    stateOf: () => 'planned',
    current: (e) => (e.id in versions ? versions[e.id] : e.version),
    namingNow: () => [],
    ...over,
  };
}

describe('stepVerdict', () => {
  it('applies a step whose evidence is as it was', () => {
    expect(stepVerdict(step(), view())).toEqual({ kind: 'apply' });
  });

  it('refuses a step whose claim or charge moved, naming each', () => {
    const verdict = stepVerdict(step(), view({ versions: { 'acme/k': 'v2', ch_1: null } }));
    expect(verdict).toEqual({
      kind: 'refuse',
      reason: 'its evidence moved since the plan: claim acme/k changed; charge ch_1 is no longer at Stripe',
    });
  });

  it('counts an object nothing newer is known of (undefined) as unchanged, and a new one as moved', () => {
    expect(stepVerdict(step(), view({ versions: { ch_1: undefined } }))).toEqual({ kind: 'apply' });
    const absent = step({ evidence: [{ object: 'payment', id: 'ch_1', version: null }] });
    expect(stepVerdict(absent, view({ versions: { ch_1: 'v' } }))).toMatchObject({
      kind: 'refuse',
      reason: expect.stringMatching(/the payment row of ch_1 exists now/),
    });
  });

  it('leaves a refund until approved, and a release or refund without Stripe’s word', () => {
    const refund = step({ kind: 'refund_duplicates', moves_money: true });
    expect(stepVerdict(refund, view())).toMatchObject({
      kind: 'pending',
      reason: expect.stringMatching(/other than alice/),
    });
    expect(stepVerdict(refund, view({ approved: true }))).toEqual({ kind: 'apply' });
    expect(stepVerdict(refund, view({ approved: true, stripesWord: false }))).toMatchObject({ kind: 'pending' });
    expect(stepVerdict(step({ kind: 'release_claim' }), view({ stripesWord: false }))).toMatchObject({
      kind: 'pending',
    });
  });

  it('refuses a release past Stripe’s idempotency window, or whose key a charge now names', () => {
    const release = step({ kind: 'release_claim', release_by: '2026-11-10T11:59:59Z' });
    expect(stepVerdict(release, view())).toMatchObject({
      kind: 'refuse',
      reason: expect.stringMatching(/idempotency window/),
    });
    const named = stepVerdict(step({ kind: 'release_claim' }), view({ namingNow: () => ['ch_9'] }));
    expect(named).toMatchObject({ kind: 'refuse', reason: expect.stringMatching(/ch_9 now names the key at Stripe/) });
  });

  it('follows the step whose write it read: waits for it, and is refused with it', () => {
    const after = step({ evidence: [{ ...claim, version: undefined, after_step: 1 }] });
    expect(stepVerdict(after, view())).toMatchObject({ kind: 'pending', reason: 'it waits for step 1' });
    expect(stepVerdict(after, view({ stateOf: () => 'refused' }))).toMatchObject({ kind: 'refuse' });
    expect(stepVerdict(after, view({ stateOf: () => 'applied' }))).toEqual({ kind: 'apply' });
  });
});

describe('plan files', () => {
  it('digests the content, not its layout or key order', () => {
    expect(canonicalJson({ b: 1, a: [{ d: null, c: 'x' }] })).toBe('{"a":[{"c":"x","d":null}],"b":1}');
    const plan = { format: 'sweeper-plan/1', id: 'plan_x', steps: [], author: 'alice' };
    const file = JSON.stringify({
      digest: planDigest(plan),
      plan: { author: 'alice', steps: [], id: 'plan_x', format: 'sweeper-plan/1' },
    });
    expect(readPlanFile(file, 'f').plan.id).toBe('plan_x');
    expect(() => readPlanFile(file.replace('alice', 'mallory'), 'f')).toThrow(/altered/);
  });
});
