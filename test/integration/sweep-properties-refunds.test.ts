import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { ACCOUNTS, historyWithExtrasArb } from '../support/histories.js';
import { historyDatabase, PROPERTY_TIMEOUT } from '../support/history-sweeps.js';
import { checkProperty } from '../support/properties.js';

/**
 * The sweep's invariants over random histories, on the real schema and the real sweep
 * (README "How a key is judged"): refunding duplicates across runs and kills. `npm test` runs the same
 * histories on every run (fixed seeds); `npm run test:deep` runs a thousand or more on new
 * seeds. A failure prints the property, the seed, the path and the shrunk history
 * (test/support/properties.ts says how to replay it and keep it as a regression seed).
 * The three sweep properties: test/integration/sweep-properties*.test.ts.
 */

const db = historyDatabase();

describe('the sweep over random histories', () => {
  it(
    '--refund-duplicates never refunds the kept charge nor one differing from it, and never POSTs a refund Stripe already made, across runs and kills',
    async () => {
      const faults = fc.array(
        fc.record({
          slice: fc.integer({ min: 0, max: 2 }),
          // A slice judged in parts (batchCharges below): which part's phase.
          part: fc.integer({ min: 0, max: 2 }),
          // 'refund-posted': killed once a refund POST has returned, before the outbox records it.
          phase: fc.constantFrom(
            'listed',
            'ingested',
            'judged',
            'repaired',
            'before-commit',
            'committed',
            'verified',
            'refund-posted',
          ),
          refundCrash: fc.constantFrom('none', 'before', 'after'),
        }),
        { maxLength: 3 },
      );
      await checkProperty(
        'sweep-properties: refund duplicates',
        { normal: 50, deep: 1_000 },
        [historyWithExtrasArb, faults, fc.constantFrom(1_000_000, 1, 2)],
        async (h, crashes, batchCharges) => {
          const stripe = await db.reset(h);
          const evidence = db.evidence(stripe);
          // docs/judgement.md "Refunds: the outbox": a refund already made is never POSTed again.
          // A POST Stripe never received (refundCrash 'before') leaves its intent open, and the
          // next run POSTs it with the same key: only a POST once Stripe holds the refund counts.
          const postedAgain = new Map<string, number>();
          const refund = evidence.refund.bind(evidence);
          evidence.refund = async (account, request) => {
            if (evidence.refunds.some((r) => r.chargeId === request.chargeId))
              postedAgain.set(request.chargeId, (postedAgain.get(request.chargeId) ?? 0) + 1);
            return refund(account, request);
          };
          for (const crash of [...crashes, null]) {
            if (crash?.refundCrash === 'before') evidence.refundFails.next = 1;
            evidence.refundFails.afterStripeRefunded = crash?.refundCrash === 'after';
            if (crash?.refundCrash === 'after') evidence.refundFails.next = 1;
            await db
              .run(
                stripe,
                evidence,
                { accounts: [...ACCOUNTS], refundDuplicates: true, batchCharges },
                {
                  faultPoint: (name) => {
                    if (!crash) return;
                    if (crash.phase === 'refund-posted' && /^refund:.*:posted$/.test(name))
                      throw new Error(`killed at ${name}`);
                    const whole = `slice:${crash.slice}:${crash.phase}`;
                    if (name === whole || name === `slice:${crash.slice}.${crash.part}:${crash.phase}`)
                      throw new Error(`killed at ${name}`);
                  },
                },
              )
              .catch((error: unknown) => {
                if (crash === null) throw error;
              });
            evidence.refundFails.next = 0;
          }
          const refunded = new Set(evidence.refunds.map((r) => r.chargeId));
          expect([...postedAgain], 'a refund POSTed again after Stripe had made it').toEqual([]);
          expect(evidence.refunds.length).toBe(refunded.size);
          for (const id of refunded) {
            const extra = stripe.find((c) => c.id === id) as NormalizedCharge;
            const kept = stripe.filter(
              (c) =>
                c.id !== id &&
                !refunded.has(c.id) &&
                c.account === extra.account &&
                c.tenantId === extra.tenantId &&
                c.idempotencyKey === extra.idempotencyKey &&
                c.status === 'succeeded' &&
                c.amount === extra.amount &&
                c.currency === extra.currency &&
                c.customer === extra.customer &&
                c.paymentMethod === extra.paymentMethod &&
                (c.created < extra.created || (c.created === extra.created && c.id < extra.id)),
            );
            expect(kept.length, `refunded ${id} without an identical, earlier charge kept for its key`).toBeGreaterThan(
              0,
            );
          }
        },
      );
    },
    PROPERTY_TIMEOUT,
  );
});
