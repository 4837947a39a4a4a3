import { describe, expect, it } from 'vitest';
import {
  DEFAULT_METADATA_KEYS,
  normalizeCharge,
  pageCursorOf,
  type MetadataKeys,
} from '../../src/providers/stripe/normalize.js';

/** 2026-03-10T12:00:00Z, the charge's own time; "now" is an hour later. */
const CREATED = 1_773_144_000;
const NOW = CREATED + 3_600;

const charge = (overrides: Record<string, unknown> = {}) => ({
  id: 'ch_1',
  object: 'charge',
  created: CREATED,
  amount: 1999,
  amount_captured: 1999,
  amount_refunded: 500,
  currency: 'USD',
  status: 'succeeded',
  captured: true,
  refunded: false,
  disputed: true,
  payment_intent: 'pi_1',
  customer: 'cus_1',
  payment_method: 'pm_1',
  metadata: { tenant_id: 'tenant-a', idempotency_key: 'order-1', other: 'x' },
  livemode: false,
  ...overrides,
});

const normalize = (raw: unknown, account: string | null = null, keys: MetadataKeys = DEFAULT_METADATA_KEYS) =>
  normalizeCharge(raw, account, keys, NOW);

function problemOf(raw: unknown): string {
  const result = normalize(raw, 'acct_1');
  if (result.ok) throw new Error(`expected ${JSON.stringify(raw)} to be malformed`);
  return result.malformed.problem;
}

describe('normalizeCharge', () => {
  it('flattens what reconciliation needs', () => {
    expect(normalize(charge(), 'acct_1')).toEqual({
      ok: true,
      charge: {
        id: 'ch_1',
        account: 'acct_1',
        created: CREATED,
        amount: 1999,
        amountCaptured: 1999,
        amountRefunded: 500,
        currency: 'usd',
        status: 'succeeded',
        captured: true,
        refunded: false,
        disputed: true,
        paymentIntent: 'pi_1',
        customer: 'cus_1',
        paymentMethod: 'pm_1',
        tenantId: 'tenant-a',
        idempotencyKey: 'order-1',
        reference: null,
        cardFingerprint: null,
        livemode: false,
      },
    });
  });

  it('reads the id of an expanded payment intent', () => {
    const result = normalize(charge({ payment_intent: { id: 'pi_x', object: 'payment_intent' } }));
    expect(result.ok && result.charge.paymentIntent).toBe('pi_x');
    expect(result.ok && result.charge.account).toBeNull();
  });

  it('uses the configured metadata names', () => {
    const result = normalize(charge({ metadata: { t: 'tenant-b', k: 'key-b' } }), null, {
      tenantId: 't',
      idempotencyKey: 'k',
    });
    expect(result.ok && [result.charge.tenantId, result.charge.idempotencyKey]).toEqual(['tenant-b', 'key-b']);
  });

  it('reads keys as Stripe holds them: accents, CJK, spaces, up to 500 characters, byte for byte', () => {
    for (const [tenant, key] of [
      ['Société Générale', 'commande-éèà-1'],
      ['租户', '订单-２０２６-１'],
      ['acme', 'k'.repeat(500)],
      ['t'.repeat(500), 'e\u0301'], // a combining accent stays as written, not normalised to é
    ]) {
      const result = normalize(charge({ metadata: { tenant_id: tenant, idempotency_key: key } }));
      expect(result.ok && [result.charge.tenantId, result.charge.idempotencyKey]).toEqual([tenant, key]);
    }
  });

  it('gives null attribution when metadata is absent or empty, and never reads inherited names', () => {
    const none = normalize(charge({ metadata: undefined, payment_intent: null }));
    expect(none.ok && [none.charge.tenantId, none.charge.idempotencyKey, none.charge.paymentIntent]).toEqual([
      null,
      null,
      null,
    ]);
    const empty = normalize(charge({ metadata: { tenant_id: '' } }));
    expect(empty.ok && empty.charge.tenantId).toBeNull();
    const inherited = normalize(charge({ metadata: {} }), null, {
      tenantId: '__proto__',
      idempotencyKey: 'constructor',
    });
    expect(inherited.ok && [inherited.charge.tenantId, inherited.charge.idempotencyKey]).toEqual([null, null]);
  });

  it('fills fields older API versions lack', () => {
    const result = normalize(charge({ amount_captured: undefined, amount_refunded: undefined, livemode: undefined }));
    expect(result.ok && [result.charge.amountCaptured, result.charge.amountRefunded, result.charge.livemode]).toEqual([
      1999,
      0,
      false,
    ]);
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
    const result = normalize(raw, 'acct_1');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.malformed.problem).toContain(problem);
      expect(result.malformed.account).toBe('acct_1');
      expect(result.malformed.id).toBe(field === 'id' ? null : 'ch_1');
    }
  });

  it('lists every problem of a charge at once', () => {
    expect(normalize({ id: 'ch_2', created: 'yesterday', status: 'refunded' })).toEqual({
      ok: false,
      malformed: {
        id: 'ch_2',
        account: null,
        problem:
          'created is not a whole number of seconds ("yesterday"), missing amount, missing currency, unknown status "refunded"',
      },
    });
  });

  it('reports something that is not an object', () => {
    expect(normalize(null)).toEqual({
      ok: false,
      malformed: { id: null, account: null, problem: 'not an object (null)' },
    });
    expect(normalize([charge()])).toEqual({
      ok: false,
      malformed: { id: null, account: null, problem: 'not an object (an array)' },
    });
  });
});

describe('normalizeCharge refuses what the mirror would refuse, naming the charge and why', () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'a NUL in the tenant',
      { metadata: { tenant_id: 'acme\u0000', idempotency_key: 'k' } },
      /metadata\[tenant_id\] is not 1-500 characters without control characters/,
    ],
    [
      'a NUL in the key',
      { metadata: { tenant_id: 'acme', idempotency_key: 'order\u00001' } },
      /metadata\[idempotency_key\] is not 1-500 characters without control characters/,
    ],
    [
      'an ANSI escape in the key',
      { metadata: { tenant_id: 'acme', idempotency_key: '\u001b[31mred' } },
      /metadata\[idempotency_key\]/,
    ],
    [
      "a tenant of 501 characters (above Stripe's limit)",
      { metadata: { tenant_id: 't'.repeat(501), idempotency_key: 'k' } },
      /metadata\[tenant_id\]/,
    ],
    [
      'a key of 501 characters',
      { metadata: { tenant_id: 't', idempotency_key: 'k'.repeat(501) } },
      /metadata\[idempotency_key\]/,
    ],
    [
      'a key holding U+241F, which joins tenant and key in a subject',
      { metadata: { tenant_id: 't', idempotency_key: 'a\u241fb' } },
      /metadata\[idempotency_key\]/,
    ],
    [
      'a key with a lone surrogate',
      { metadata: { tenant_id: 't', idempotency_key: 'order-\ud800' } },
      /metadata\[idempotency_key\]/,
    ],
    [
      'a key with a C1 control character',
      { metadata: { tenant_id: 't', idempotency_key: 'order\u0085' } },
      /metadata\[idempotency_key\]/,
    ],
    [
      'a tenant that is not text',
      { metadata: { tenant_id: 42, idempotency_key: 'k' } },
      /metadata\[tenant_id\] is not a string \(number\)/,
    ],
    [
      'metadata that is not an object',
      { metadata: 'tenant=acme' },
      /metadata is not an object \(a string of 11 characters\)/,
    ],
    [
      'a lone surrogate in the key',
      { metadata: { tenant_id: 't', idempotency_key: 'k\ud800' } },
      /metadata\[idempotency_key\]/,
    ],
    ['a negative amount', { amount: -500 }, /amount -500 is negative/],
    ['a fractional amount', { amount: 19.99 }, /amount is not a whole number of minor units \(19\.99\)/],
    ['an amount beyond 2^53', { amount: 2 ** 60 }, /amount is not a whole number/],
    ['an amount that is text', { amount: '1999' }, /amount is not a whole number of minor units \("1999"\)/],
    ['currency usdt', { currency: 'usdt' }, /currency "usdt" is not three letters/],
    ['currency with a digit', { currency: 'us1' }, /currency "us1" is not three letters/],
    ['a negative amount_refunded', { amount_refunded: -1 }, /amount_refunded -1 is negative/],
    ['amount_refunded above the amount', { amount_refunded: 2000 }, /amount_refunded 2000 is above the amount 1999/],
    ['amount_captured above the amount', { amount_captured: 5000 }, /amount_captured 5000 is above the amount 1999/],
    ['a negative amount_captured', { amount_captured: -5 }, /amount_captured -5 is negative/],
    ['created 0', { created: 0 }, /created 0 is not after 1970/],
    ['created negative', { created: -86_400 }, /created -86400 is not after 1970/],
    ['created in milliseconds', { created: CREATED * 1000 }, /beyond the year 3000: milliseconds, not seconds/],
    [
      'created a year ahead',
      { created: NOW + 365 * 86_400 },
      /more than a day ahead of now \(2026-03-10T13:00:00\.000Z\)/,
    ],
    ['created before Stripe existed', { created: 1_000_000_000 }, /before Stripe existed/],
    ['an id with a NUL', { id: 'ch_\u00001' }, /id is not 1-255 printable ASCII characters without spaces/],
    ['an id that is a number', { id: 12 }, /id is not a string \(number\)/],
    ['a payment_intent with a NUL', { payment_intent: 'pi_\u0000' }, /payment_intent is not an id/],
    ['a customer that is an array', { customer: ['cus_1'] }, /customer is not an id/],
    ['captured as text', { captured: 'yes' }, /captured is not a boolean \("yes"\)/],
    ['an unknown status', { status: 'refunded' }, /unknown status "refunded"/],
  ])('%s', (_name, overrides, problem) => {
    expect(problemOf(charge(overrides))).toMatch(problem);
  });

  it('keeps the id only when it can be stored, so a finding can name it', () => {
    const named = normalize(charge({ currency: 'usdt' }));
    expect(!named.ok && named.malformed.id).toBe('ch_1');
    const unnamed = normalize(charge({ id: 'ch\u0000x', currency: 'usdt' }));
    expect(!unnamed.ok && unnamed.malformed.id).toBeNull();
  });

  it('accepts the edges of every range', () => {
    const edges = normalize(
      charge({ amount: 0, amount_captured: 0, amount_refunded: 0, created: NOW + 86_400, currency: 'EUR' }),
    );
    expect(edges.ok).toBe(true);
    const full = normalize(
      charge({
        amount_refunded: 1999,
        metadata: { tenant_id: 't'.repeat(255), idempotency_key: ' ~'.repeat(127) + 'k' },
      }),
    );
    expect(full.ok).toBe(true);
  });

  it('never echoes a long value into the problem (it may be a secret an upstream sent back)', () => {
    const secret = 'sk_test_EchoedBackByAHostileUpstream';
    const problem = problemOf(charge({ currency: secret, status: secret, amount: secret }));
    expect(problem).not.toContain(secret);
    expect(problem).toContain('a string of 36 characters');
  });
});

describe('pageCursorOf', () => {
  it('reads id and created even from a malformed charge', () => {
    expect(pageCursorOf({ id: 'ch_1', created: 5 })).toEqual({ id: 'ch_1', created: 5 });
    expect(pageCursorOf({ id: 'ch_1' })).toEqual({ id: 'ch_1', created: null });
    expect(pageCursorOf('x')).toEqual({ id: null, created: null });
    expect(pageCursorOf({ id: 'ch 1', created: 5 })).toEqual({ id: null, created: 5 });
  });
});
