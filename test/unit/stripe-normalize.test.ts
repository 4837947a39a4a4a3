import { describe, expect, it } from 'vitest';
import { normalizeCharge, pageCursorOf } from '../../src/stripe/normalize.js';

const charge = (overrides: Record<string, unknown> = {}) => ({
  id: 'ch_1',
  object: 'charge',
  created: 1_773_144_000,
  amount: 1999,
  amount_captured: 1999,
  amount_refunded: 500,
  currency: 'USD',
  status: 'succeeded',
  captured: true,
  refunded: false,
  disputed: true,
  payment_intent: 'pi_1',
  metadata: { tenant_id: 'tenant-a', idempotency_key: 'order-1', other: 'x' },
  livemode: false,
  ...overrides,
});

describe('normalizeCharge', () => {
  it('flattens what reconciliation needs', () => {
    expect(normalizeCharge(charge(), 'acct_1')).toEqual({
      ok: true,
      charge: {
        id: 'ch_1',
        account: 'acct_1',
        created: 1_773_144_000,
        amount: 1999,
        amountCaptured: 1999,
        amountRefunded: 500,
        currency: 'usd',
        status: 'succeeded',
        captured: true,
        refunded: false,
        disputed: true,
        paymentIntent: 'pi_1',
        tenantId: 'tenant-a',
        idempotencyKey: 'order-1',
        livemode: false,
      },
    });
  });

  it('reads the id of an expanded payment intent', () => {
    const result = normalizeCharge(charge({ payment_intent: { id: 'pi_x', object: 'payment_intent' } }), null);
    expect(result.ok && result.charge.paymentIntent).toBe('pi_x');
    expect(result.ok && result.charge.account).toBeNull();
  });

  it('uses the configured metadata names', () => {
    const result = normalizeCharge(charge({ metadata: { t: 'tenant-b', k: 'key-b' } }), null, { tenantId: 't', idempotencyKey: 'k' });
    expect(result.ok && [result.charge.tenantId, result.charge.idempotencyKey]).toEqual(['tenant-b', 'key-b']);
  });

  it('gives null attribution when metadata is absent or empty', () => {
    const none = normalizeCharge(charge({ metadata: undefined, payment_intent: null }), null);
    expect(none.ok && [none.charge.tenantId, none.charge.idempotencyKey, none.charge.paymentIntent]).toEqual([null, null, null]);
    const empty = normalizeCharge(charge({ metadata: { tenant_id: '' } }), null);
    expect(empty.ok && empty.charge.tenantId).toBeNull();
  });

  it('fills fields older API versions lack', () => {
    const result = normalizeCharge(charge({ amount_captured: undefined, amount_refunded: undefined, livemode: undefined }), null);
    expect(result.ok && [result.charge.amountCaptured, result.charge.amountRefunded, result.charge.livemode]).toEqual([1999, 0, false]);
  });

  it.each([
    ['id', 'missing id'],
    ['created', 'missing created'],
    ['amount', 'missing amount'],
    ['currency', 'missing currency'],
    ['status', 'missing status'],
  ])('reports a charge without %s instead of dropping it', (field, problem) => {
    const raw: Record<string, unknown> = charge();
    delete raw[field];
    const result = normalizeCharge(raw, 'acct_1');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.malformed.problem).toContain(problem);
      expect(result.malformed.account).toBe('acct_1');
      expect(result.malformed.id).toBe(field === 'id' ? null : 'ch_1');
    }
  });

  it('lists every problem of a charge at once', () => {
    const result = normalizeCharge({ id: 'ch_2', created: 'yesterday', status: 'refunded' }, null);
    expect(result).toEqual({
      ok: false,
      malformed: { id: 'ch_2', account: null, problem: 'missing created, missing amount, missing currency, unknown status "refunded"' },
    });
  });

  it('reports something that is not an object', () => {
    expect(normalizeCharge(null, null)).toEqual({ ok: false, malformed: { id: null, account: null, problem: 'not an object (null)' } });
  });
});

describe('pageCursorOf', () => {
  it('reads id and created even from a malformed charge', () => {
    expect(pageCursorOf({ id: 'ch_1', created: 5 })).toEqual({ id: 'ch_1', created: 5 });
    expect(pageCursorOf({ id: 'ch_1' })).toEqual({ id: 'ch_1', created: null });
    expect(pageCursorOf('x')).toEqual({ id: null, created: null });
  });
});
