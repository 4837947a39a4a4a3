import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { DEFAULT_METADATA_KEYS, normalizeCharge } from '../../src/providers/stripe/normalize.js';

/** 2026-12-01: after the fixture's charge was made. */
const NOW = 1_796_083_200;

describe('a full Stripe charge object', () => {
  it('normalises: expanded payment_intent, upper-level fields ignored, metadata read by name', async () => {
    const raw = JSON.parse(
      await readFile(new URL('../../fixtures/stripe/charge-partially-refunded-disputed.json', import.meta.url), 'utf8'),
    );
    expect(normalizeCharge(raw, 'acct_1Fixture', DEFAULT_METADATA_KEYS, NOW)).toEqual({
      ok: true,
      charge: {
        id: 'ch_3QfixtureRefundDisp01',
        account: 'acct_1Fixture',
        created: 1_764_547_200,
        amount: 4200,
        amountCaptured: 4200,
        amountRefunded: 1200,
        currency: 'eur',
        status: 'succeeded',
        captured: true,
        refunded: false,
        disputed: true,
        paymentIntent: 'pi_3QfixtureRefundDisp01',
        customer: 'cus_RfixtureCustomer1',
        paymentMethod: 'pm_1QfixtureCard0001',
        tenantId: 'acme',
        idempotencyKey: 'order-1',
        reference: null,
        cardFingerprint: null,
        livemode: false,
      },
    });
    expect(normalizeCharge(raw, null, { tenantId: 'cart', idempotencyKey: 'nope' }, NOW)).toMatchObject({
      ok: true,
      charge: { tenantId: 'c_991', idempotencyKey: null },
    });
  });
});
