import fc from 'fast-check';
import type { NormalizedCharge } from '../../src/sweep/provider.js';

/**
 * Generators and checks shared by the fuzz tests (test/unit/fuzz.test.ts,
 * test/integration/fuzz-mirror.test.ts); seeds and sizes: test/support/properties.ts.
 */

/** Strings as a hostile upstream would send them: any code point, NULs, lone surrogates, escapes. */
export const hostileString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 20 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '\u0000',
      'a\u0000b',
      '\ud800',
      'x\udfff',
      '\u001b[2J',
      '=HYPERLINK("x")',
      '',
      ' ',
      'usdt',
      'USD',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 300 }) },
);

/** Any JSON value, strings included in their hostile form. */
export const hostileJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.constantFrom(-0, 2 ** 53, -(2 ** 53), 1e21, Number.MAX_SAFE_INTEGER, -500),
    hostileString,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 3 }),
  ),
})).value;

/** 2026-01-01T00:00:00Z; fuzzed windows start here, an hour long. */
export const WINDOW_FROM = 1_767_225_600;
export const WINDOW_TO = WINDOW_FROM + 3_600;
export const NOW = WINDOW_TO + 600;

const FIELDS = [
  'id',
  'created',
  'amount',
  'amount_captured',
  'amount_refunded',
  'currency',
  'status',
  'captured',
  'refunded',
  'disputed',
  'livemode',
  'payment_intent',
  'customer',
  'payment_method',
  'metadata',
] as const;

/** A value a field should never hold, or one at the edge of what it may. */
const wrongValue = fc.oneof(
  { weight: 3, arbitrary: hostileJson },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      0,
      -1,
      -500,
      1_000_000_000,
      NOW + 2 * 86_400,
      WINDOW_FROM * 1000,
      'usdt',
      'refunded',
      'yes',
      '',
    ),
  },
);

const attribution = fc.oneof(
  { weight: 6, arbitrary: fc.stringMatching(/^[\x21-\x7e]{1,40}$/) },
  { weight: 1, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.string({ minLength: 250, maxLength: 300 }) },
);

/**
 * Charges as Stripe sends them, then 0 to 3 fields replaced by something wrong: most
 * are valid (the normaliser's ok path is exercised), every field is broken now and then.
 */
export function chargeObject(
  created: fc.Arbitrary<number> = fc.integer({ min: WINDOW_FROM, max: WINDOW_TO - 1 }),
): fc.Arbitrary<Record<string, unknown>> {
  const valid = fc
    .record({
      id: fc.stringMatching(/^ch_[A-Za-z0-9]{1,24}$/),
      object: fc.constant('charge'),
      created,
      amount: fc.oneof(fc.integer({ min: 1_000, max: 1_000_000 }), fc.constant(Number.MAX_SAFE_INTEGER)),
      amount_captured: fc.integer({ min: 0, max: 1_000 }),
      amount_refunded: fc.integer({ min: 0, max: 1_000 }),
      currency: fc.constantFrom('usd', 'EUR', 'jpy'),
      status: fc.constantFrom('succeeded', 'failed', 'pending'),
      captured: fc.boolean(),
      refunded: fc.boolean(),
      disputed: fc.boolean(),
      livemode: fc.boolean(),
      payment_intent: fc.oneof(
        fc.constant(null),
        fc.stringMatching(/^pi_[A-Za-z0-9]{1,24}$/),
        fc.record({ id: fc.stringMatching(/^pi_[A-Za-z0-9]{1,10}$/) }),
      ),
      customer: fc.oneof(fc.constant(null), fc.stringMatching(/^cus_[A-Za-z0-9]{1,24}$/)),
      payment_method: fc.oneof(fc.constant(null), fc.stringMatching(/^pm_[A-Za-z0-9]{1,24}$/)),
      metadata: fc.record(
        { tenant_id: attribution, idempotency_key: attribution, other: hostileString },
        { requiredKeys: [] },
      ),
    })
    .map((c) => c as Record<string, unknown>);
  const mutations = fc.array(fc.tuple(fc.constantFrom(...FIELDS), wrongValue), { maxLength: 3 });
  return fc
    .tuple(valid, fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, { weight: 2, arbitrary: mutations }))
    .map(([charge, changes]) => {
      const out = { ...charge };
      for (const [name, value] of changes) {
        if (value === undefined) delete out[name];
        else out[name] = value;
      }
      return out;
    });
}

const isWellFormed = (text: string) =>
  !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);

/**
 * Why PostgreSQL would refuse this charge as a `stripe_charges` row (migrations/002_mirror.sql),
 * checked in plain code: NOT NULL columns, text without NUL or lone surrogates
 * (which text and jsonb refuse), bigint ranges, char(3), a timestamptz a Date can hold.
 * Empty when the row would be accepted.
 */
export function schemaProblems(charge: NormalizedCharge): string[] {
  const problems: string[] = [];
  const text = (name: string, value: unknown, nullable: boolean) => {
    if (value === null || value === undefined) {
      if (!nullable) problems.push(`${name} is null`);
      return;
    }
    if (typeof value !== 'string') problems.push(`${name} is not text`);
    else if (value.includes('\u0000') || !isWellFormed(value)) problems.push(`${name} holds a NUL or a lone surrogate`);
  };
  const bigint = (name: string, value: unknown) => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value))
      problems.push(`${name} is not a bigint JavaScript holds exactly`);
  };
  const bool = (name: string, value: unknown) => {
    if (typeof value !== 'boolean') problems.push(`${name} is not a boolean`);
  };
  text('charge_id', charge.id, false);
  text('currency', charge.currency, false);
  if (typeof charge.currency === 'string' && charge.currency.length > 3)
    problems.push('currency is longer than char(3)');
  text('status', charge.status, false);
  for (const [name, value] of [
    ['payment_intent_id', charge.paymentIntent],
    ['customer', charge.customer],
    ['payment_method', charge.paymentMethod],
    ['tenant_id', charge.tenantId],
    ['idempotency_key', charge.idempotencyKey],
  ] as const) {
    text(name, value, true);
  }
  bigint('amount', charge.amount);
  bigint('amount_captured', charge.amountCaptured);
  bigint('amount_refunded', charge.amountRefunded);
  bigint('created', charge.created);
  if (Number.isNaN(new Date(charge.created * 1000).getTime())) problems.push('created is not a time');
  for (const name of ['captured', 'refunded', 'disputed', 'livemode'] as const) bool(name, charge[name]);
  return problems;
}

/** What the sweep itself promises beyond the schema (docs/judgement.md "Bad input and a hostile upstream"). */
export function ruleProblems(charge: NormalizedCharge, now: number): string[] {
  const problems: string[] = [];
  if (!/^[\x21-\x7e]{1,255}$/.test(charge.id)) problems.push('id');
  if (!/^[a-z]{3}$/.test(charge.currency)) problems.push('currency');
  if (charge.amount < 0) problems.push('amount < 0');
  if (charge.amountRefunded < 0 || charge.amountRefunded > charge.amount) problems.push('amount_refunded out of range');
  if (charge.amountCaptured < 0 || charge.amountCaptured > charge.amount) problems.push('amount_captured out of range');
  if (charge.created < 1_262_304_000 || charge.created > now + 86_400) problems.push('created out of range');
  // docs/judgement.md "Keys as Stripe holds them": 1-500 characters, no control character,
  // lone surrogate or U+241F (the finding subject's separator).
  const keyLike = (v: string) =>
    [...v].length >= 1 &&
    [...v].length <= 500 &&
    isWellFormed(v) &&
    ![...v].some((ch) => {
      const code = ch.codePointAt(0) ?? 0;
      return code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x241f;
    });
  if (charge.tenantId !== null && !keyLike(charge.tenantId)) problems.push('tenant');
  if (charge.idempotencyKey !== null && !keyLike(charge.idempotencyKey)) problems.push('key');
  return problems;
}
