import fc from 'fast-check';
import { describe, it } from 'vitest';
import {
  judgeRefunds,
  type RefundClaimFact,
  type RefundFacts,
  type RefundRowFact,
  type RefundStatus,
  type StripeRefundFact,
} from '../../src/sweep/judge/refunds.js';
import type { Finding } from '../../src/sweep/judge/index.js';
import { checkProperty } from '../support/properties.js';

/**
 * docs/judgement.md "Refunds the application makes" as invariants over random histories:
 * refunds at Stripe (some naming a claim, some not, some failed or canceled later), refund
 * rows (some naming refunds Stripe never made, some in another state or amount) and refund
 * claims as the library and other writers leave them (in flight, completed with a Refund
 * object, a refusal, released). Each refund is judged into one place at most; the repairs,
 * applied, leave nothing more to repair; and the order Stripe lists in changes nothing.
 */

const NOW = new Date('2026-11-10T12:00:00Z');
const MIN = 60_000;
const ago = (m: number) => new Date(NOW.getTime() - m * MIN);
const ctx = { now: NOW, providerIdempotencyWindowMs: 24 * 60 * MIN };
const STATUSES: RefundStatus[] = ['pending', 'succeeded', 'succeeded', 'failed', 'canceled'];
const KEYS = ['k0', 'k1', 'k2', 'k3'];

const refundArb = (i: number): fc.Arbitrary<StripeRefundFact> =>
  fc
    .record({
      id: fc.constant(`re_${i}`),
      chargeId: fc.constantFrom('ch_1', 'ch_2'),
      created: fc.integer({ min: 1, max: 48 * 60 }).map(ago),
      amount: fc.constantFrom(500, 1000),
      currency: fc.constant('usd'),
      status: fc.constantFrom(...STATUSES),
      failureReason: fc.constantFrom(null, 'unknown'),
      tenantId: fc.constant('t'),
      key: fc.constantFrom<string | null>(...KEYS, null),
    })
    .map((r) => (r.key === null ? { ...r, tenantId: null } : r));

const claimArb = (key: string): fc.Arbitrary<RefundClaimFact> =>
  fc.record({
    tenantId: fc.constant('t'),
    key: fc.constant(key),
    attempt: fc.integer({ min: 1, max: 3 }),
    status: fc.constantFrom<RefundClaimFact['status']>('in_flight', 'completed', 'released'),
    lockedUntil: fc.constantFrom<Date | null>(ago(-5), ago(5), null),
    createdAt: fc.constantFrom(ago(30), ago(30 * 60)),
    answerRefundId: fc.constantFrom<string | null>(null, 're_0', 're_1', 're_2', 're_ghost'),
    responseOutcome: fc.constantFrom<string | null>('success', 'success', 'rejected', null),
  });

/** A history: Stripe's refunds, the rows and the claims other code left. */
const historyArb = fc
  .record({
    refunds: fc.tuple(refundArb(0), refundArb(1), refundArb(2), refundArb(3)).chain((all) => fc.subarray(all)),
    claims: fc.subarray(KEYS).chain((keys) => fc.tuple(...keys.map(claimArb))),
    rowIds: fc.subarray(['re_0', 're_1', 're_2', 're_3', 're_ghost']),
    rowTwist: fc.array(fc.constantFrom('same', 'same', 'status', 'amount'), { minLength: 5, maxLength: 5 }),
  })
  .map(({ refunds, claims, rowIds, rowTwist }): RefundFacts => {
    const byId = new Map(refunds.map((r) => [r.id, r]));
    const rows: RefundRowFact[] = rowIds.map((id, i) => {
      const at = byId.get(id);
      const twist = rowTwist[i];
      return {
        refundId: id,
        chargeId: at?.chargeId ?? 'ch_1',
        tenantId: at?.tenantId ?? 't',
        key: at?.key ?? null,
        amount: (at?.amount ?? 700) + (twist === 'amount' ? 1 : 0),
        currency: 'usd',
        status:
          twist === 'status' ? (at?.status === 'succeeded' ? 'pending' : 'succeeded') : (at?.status ?? 'succeeded'),
        createdAt: at?.created ?? ago(60),
      };
    });
    return { refunds, later: [], rows, claims: [...claims], missing: missingOf(refunds, rows, claims) };
  });

/** What reading by id would answer: every row's or stored answer's refund Stripe does not list. */
function missingOf(
  refunds: StripeRefundFact[],
  rows: RefundRowFact[],
  claims: readonly RefundClaimFact[],
): Set<string> {
  const listed = new Set(refunds.map((r) => r.id));
  const named = [
    ...rows.map((r) => r.refundId),
    ...claims.flatMap((c) => (c.answerRefundId ? [c.answerRefundId] : [])),
  ];
  return new Set(named.filter((id) => !listed.has(id)));
}

/** The repairs as refund-repairs.ts makes them, on the facts. */
function applyRepairs(facts: RefundFacts, findings: Finding[]): RefundFacts {
  const rows = facts.rows.map((r) => ({ ...r }));
  const claims = facts.claims.map((c) => ({ ...c }));
  for (const f of findings) {
    const repair = f.repair;
    if (repair?.kind === 'record_refund') {
      const r = repair.refund;
      rows.push({
        refundId: r.id,
        chargeId: r.chargeId,
        tenantId: r.tenantId,
        key: r.key,
        amount: r.amount,
        currency: r.currency,
        status: r.status,
        createdAt: r.created,
      });
      const claim =
        repair.claim && claims.find((c) => c.key === repair.claim?.key && c.attempt === repair.claim.attempt);
      if (claim) Object.assign(claim, { status: 'completed', answerRefundId: r.id, responseOutcome: 'success' });
    } else if (repair?.kind === 'update_refund') {
      const row = rows.find((r) => r.refundId === repair.refundId);
      if (row) row.status = repair.to;
    } else if (repair?.kind === 'release_claim') {
      const claim = claims.find((c) => c.key === repair.claim.key);
      if (claim) claim.status = 'released';
    }
  }
  return { ...facts, rows, claims, missing: missingOf(facts.refunds, rows, claims) };
}

const named = (findings: Finding[]) => findings.map((f) => `${f.category} ${f.subject}`).sort();

describe('judging the refunds the application makes, over random histories', () => {
  it('one place per refund; repairs applied leave nothing to repair; the listing order changes nothing', async () => {
    await checkProperty(
      'refund-judge-properties: refunds',
      { normal: 300, deep: 5000 },
      [historyArb, fc.boolean()],
      (facts, reverse) => {
        const first = judgeRefunds(facts, ctx);
        const subjects = named(first.findings).map((n) => n.split(' ')[1]);
        if (new Set(subjects).size !== subjects.length)
          throw new Error(`judged into two places: ${named(first.findings).join(', ')}`);
        for (const id of first.matched)
          if (subjects.includes(id)) throw new Error(`${id} is both matched and a finding`);
        const reordered = judgeRefunds(
          { ...facts, refunds: reverse ? [...facts.refunds].reverse() : facts.refunds },
          ctx,
        );
        if (named(reordered.findings).join() !== named(first.findings).join())
          throw new Error('the listing order changed the judgement');
        const second = judgeRefunds(applyRepairs(facts, first.findings), ctx);
        const again = second.findings.filter((f) => f.repair);
        if (again.length > 0) throw new Error(`a second judgement repairs again: ${named(again).join(', ')}`);
        const before = new Set(named(first.findings));
        for (const n of named(second.findings))
          if (!before.has(n)) throw new Error(`a new finding after the repairs: ${n}`);
      },
    );
  });
});
