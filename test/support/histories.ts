import fc from 'fast-check';
import { downstreamKey } from '../../src/claims/keys.js';
import type { Queryable } from '../../src/db/pool.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { charge } from './scenario.js';

/**
 * Random payment histories for property tests, written through the real schema: two
 * accounts, two tenants, a few keys; claims in every state, with and without a
 * recorded request; charges and payment rows in any order in time (before the claim
 * too), amounts equal and different, declines and retries, duplicates, refunds and
 * disputes, payment rows Stripe never saw, charges with no metadata.
 */

export const NOW = new Date('2026-11-10T12:00:00Z');
export const WINDOW = { from: new Date('2026-11-10T02:00:00Z'), to: new Date('2026-11-10T11:00:00Z') };
/** Three slices over the window: enough to judge keys across slice edges, cheap enough for hundreds of histories. */
export const SLICE_MS = 3 * 3_600_000;
export const ACCOUNTS = ['platform', 'acct_1B'] as const;
const TENANTS = ['t1', 't2'] as const;
const KEYS = ['k1', 'k2', 'k3'] as const;
const MIN = 60_000;

export interface ChargeSeed {
  id: string;
  account: (typeof ACCOUNTS)[number];
  minutesAgo: number;
  amount: number;
  currency: string;
  status: 'succeeded' | 'failed' | 'pending';
  refund: 'none' | 'partial' | 'full';
  disputed: boolean;
  customer: string;
  paymentMethod: string;
  metadata: boolean;
  /**
   * Stripe returns it unreadable wherever it returns it: a listing, a lookup by id, a
   * search (a charge created outside the window reaches the sweep through the re-reads only).
   */
  unreadable: boolean;
  /** The business reference its metadata names (SWEEPER_METADATA_REFERENCE_KEY): a few orders, or none. */
  reference: string | null;
}

export interface PaymentSeed {
  chargeId: string;
  account: (typeof ACCOUNTS)[number];
  /** The row's own idea of the amount: the charge's, or another. */
  amountDelta: number;
  status: 'succeeded' | 'failed' | 'pending' | 'as_charge';
  minutesAgo: number;
  named: boolean;
}

export interface ClaimSeedH {
  account: (typeof ACCOUNTS)[number];
  status: 'in_flight' | 'in_flight_live' | 'completed' | 'released';
  minutesAgo: number;
  request: { amount: number; currency: string } | null;
  /**
   * The stored answer, in the shapes writers store: the library's (`success`, `declined`,
   * `pending_action`), a `charge` field with no outcome, a body naming nothing, a Stripe
   * Charge object, a PaymentIntent (succeeded, or still requiring action), a writer's own
   * `201 {state: paid}`, a stored 503.
   */
  outcome:
    | 'success'
    | 'declined'
    | 'pending_action'
    | 'legacy_2xx'
    | 'legacy_2xx_no_charge'
    | 'stripe_charge'
    | 'payment_intent'
    | 'payment_intent_action'
    | 'custom_paid'
    | 'transient_503';
  namesCharge: number | null;
}

export interface KeyHistory {
  tenantId: string;
  key: string;
  claim: ClaimSeedH | null;
  charges: ChargeSeed[];
  payments: PaymentSeed[];
}

export interface History {
  keys: KeyHistory[];
  /** Charges with no metadata. */
  loose: ChargeSeed[];
}

const account = fc.constantFrom(...ACCOUNTS);
const amount = fc.constantFrom(1000, 1000, 1000, 2000, 100);

const chargeSeed = (id: string) =>
  fc.record({
    id: fc.constant(id),
    account,
    minutesAgo: fc.integer({ min: 20, max: 900 }),
    amount,
    currency: fc.constantFrom('usd', 'usd', 'usd', 'eur'),
    status: fc.constantFrom('succeeded', 'succeeded', 'succeeded', 'failed', 'pending'),
    refund: fc.constantFrom('none', 'none', 'none', 'partial', 'full'),
    disputed: fc.constantFrom(false, false, false, true),
    customer: fc.constantFrom('cus_1', 'cus_1', 'cus_2'),
    paymentMethod: fc.constantFrom('pm_1', 'pm_1', 'pm_2'),
    metadata: fc.constantFrom(true, true, true, true, false),
    unreadable: fc.constantFrom(false, false, false, false, false, false, false, true),
    reference: fc.constantFrom(null, null, 'ord_1', 'ord_2'),
  }) as fc.Arbitrary<ChargeSeed>;

const paymentSeed = (chargeId: string, acct: (typeof ACCOUNTS)[number]) =>
  fc.record({
    chargeId: fc.constant(chargeId),
    account: fc.constantFrom(acct, acct, acct, ...ACCOUNTS),
    amountDelta: fc.constantFrom(0, 0, 0, 0, 1),
    status: fc.constantFrom('as_charge', 'as_charge', 'as_charge', 'succeeded', 'failed'),
    minutesAgo: fc.integer({ min: 20, max: 900 }),
    named: fc.constantFrom(true, true, true, false),
  }) as fc.Arbitrary<PaymentSeed>;

const claimSeed = (chargeCount: number) =>
  fc.record({
    account,
    status: fc.constantFrom('in_flight', 'in_flight', 'in_flight_live', 'completed', 'completed', 'released'),
    minutesAgo: fc.integer({ min: 30, max: 900 }),
    request: fc.option(fc.record({ amount, currency: fc.constantFrom('usd', 'usd', 'eur') }), { freq: 4 }),
    outcome: fc.constantFrom(
      'success',
      'success',
      'declined',
      'pending_action',
      'legacy_2xx',
      'legacy_2xx_no_charge',
      'stripe_charge',
      'payment_intent',
      'payment_intent_action',
      'custom_paid',
      'transient_503',
    ),
    namesCharge: chargeCount === 0 ? fc.constant(null) : fc.option(fc.integer({ min: 0, max: chargeCount - 1 })),
  }) as fc.Arbitrary<ClaimSeedH>;

const keyHistory = (tenantId: string, key: string) =>
  fc
    .integer({ min: 0, max: 3 })
    .chain((n) => {
      const ids = Array.from({ length: n }, (_, i) => `ch_${tenantId}_${key}_${i}`);
      return fc.record({
        tenantId: fc.constant(tenantId),
        key: fc.constant(key),
        claim: fc.option(claimSeed(n), { freq: 3 }),
        charges: fc.tuple(...ids.map(chargeSeed)),
        payments: fc.tuple(
          ...ids.map((id) => fc.option(paymentSeed(id, 'platform'), { freq: 2 })),
          fc.option(paymentSeed(`ch_ghost_${tenantId}_${key}`, 'platform'), { freq: 6 }),
        ),
      });
    })
    .map((k) => ({
      ...k,
      // A payment row records its charge in the charge's account unless the seed says otherwise.
      payments: (k.payments.filter(Boolean) as PaymentSeed[]).map((p) => {
        const c = (k.charges as ChargeSeed[]).find((x) => x.id === p.chargeId);
        return c && p.account === 'platform' ? { ...p, account: c.account } : p;
      }),
    })) as fc.Arbitrary<KeyHistory>;

export const historyArb: fc.Arbitrary<History> = fc.record({
  keys: fc
    .tuple(...TENANTS.flatMap((t) => KEYS.map((k) => fc.option(keyHistory(t, k), { freq: 2 }))))
    .map((ks) => ks.filter(Boolean) as KeyHistory[]),
  loose: fc
    .array(
      chargeSeed('x').map((c) => ({ ...c, metadata: false })),
      { maxLength: 2 },
    )
    .map((cs) => cs.map((c, i) => ({ ...c, id: `ch_loose_${i}` }))),
});

/**
 * Histories where a key or two also hold an extra charge like their first (same account,
 * amount, currency, customer and card), created inside the swept window: mostly `untouched`
 * (both succeeded, unrefunded, undisputed, readable; the claim, if any, on their account
 * and asking for their amount), which `--refund-duplicates` refunds. historyArb alone makes
 * one in about two hundred histories, too few for the refund property to reach the outbox.
 */
export const historyWithExtrasArb: fc.Arbitrary<History> = fc
  .tuple(
    historyArb,
    fc.array(
      fc.record({
        key: fc.nat(),
        minutesAgo: fc.integer({ min: 70, max: 590 }),
        untouched: fc.constantFrom(true, true, false),
      }),
      { minLength: 1, maxLength: 2 },
    ),
  )
  .map(([h, extras]) => ({ ...h, keys: withExtras(h.keys, extras) }));

function withExtras(
  given: readonly KeyHistory[],
  extras: ReadonlyArray<{ key: number; minutesAgo: number; untouched: boolean }>,
): KeyHistory[] {
  const keys = given.map((k) => ({ ...k, charges: [...k.charges] }));
  const untouched = {
    status: 'succeeded',
    refund: 'none',
    disputed: false,
    metadata: true,
    unreadable: false,
  } as const;
  for (const extra of extras) {
    const k = keys[extra.key % Math.max(keys.length, 1)];
    const first = k?.charges[0];
    if (!k || !first) continue;
    const source = extra.untouched ? { ...first, ...untouched } : first;
    k.charges[0] = source;
    k.charges.push({ ...source, id: `ch_${k.tenantId}_${k.key}_${k.charges.length}`, minutesAgo: extra.minutesAgo });
    if (extra.untouched && k.claim) {
      const request = k.claim.request && { amount: source.amount, currency: source.currency };
      k.claim = { ...k.claim, account: source.account, request };
    }
  }
  return keys;
}

/** The history's charges as Stripe holds them (the memory sources list and search these). */
export function stripeChargesOf(h: History): NormalizedCharge[] {
  const out: NormalizedCharge[] = [];
  const add = (c: ChargeSeed, tenantId: string | null, key: string | null) => {
    const refunded = c.status === 'succeeded' ? (c.refund === 'full' ? c.amount : c.refund === 'partial' ? 1 : 0) : 0;
    out.push(
      charge({
        id: c.id,
        account: c.account === 'platform' ? null : c.account,
        created: Math.floor((NOW.getTime() - c.minutesAgo * MIN) / 1000),
        amount: c.amount,
        amountCaptured: c.status === 'succeeded' ? c.amount : 0,
        amountRefunded: refunded,
        currency: c.currency,
        status: c.status,
        captured: c.status === 'succeeded',
        refunded: refunded >= c.amount,
        disputed: c.status === 'succeeded' && c.disputed,
        customer: c.customer,
        paymentMethod: c.paymentMethod,
        tenantId: c.metadata ? tenantId : null,
        idempotencyKey: c.metadata ? key : null,
        // Histories written before references existed have none.
        reference: c.reference ?? null,
      }),
    );
  };
  for (const k of h.keys) for (const c of k.charges) add(c, k.tenantId, k.key);
  for (const c of h.loose) add(c, null, null);
  return out;
}

export async function writeHistory(db: Queryable, h: History, stripe: NormalizedCharge[]): Promise<void> {
  const byId = new Map(stripe.map((c) => [c.id, c]));
  for (const k of h.keys) {
    if (k.claim) await insertClaim(db, k, k.claim);
    for (const p of k.payments) await insertPayment(db, p, byId.get(p.chargeId) ?? null, k.tenantId, k.key);
  }
}

async function insertClaim(db: Queryable, k: KeyHistory, c: ClaimSeedH): Promise<void> {
  const created = new Date(NOW.getTime() - c.minutesAgo * MIN);
  const status = c.status === 'in_flight_live' ? 'in_flight' : c.status;
  const lockedUntil =
    status !== 'in_flight'
      ? null
      : c.status === 'in_flight_live'
        ? new Date(NOW.getTime() + 5 * MIN)
        : new Date(created.getTime() + 2 * MIN);
  const named = c.namesCharge === null ? null : (k.charges[c.namesCharge]?.id ?? null);
  let responseStatus: number | null = null;
  let body: unknown = null;
  let outcome: string | null = null;
  if (status === 'completed') {
    switch (c.outcome) {
      case 'success':
        [responseStatus, body, outcome] = [
          200,
          { object: 'charge_result', charge: named ?? `ch_named_${k.key}` },
          'success',
        ];
        break;
      case 'declined':
        [responseStatus, body, outcome] = [402, { error: { type: 'card_error', charge: named } }, 'declined'];
        break;
      case 'pending_action':
        [responseStatus, body, outcome] = [202, { object: 'charge_result', charge: null }, 'pending_action'];
        break;
      case 'legacy_2xx':
        [responseStatus, body, outcome] = [201, { charge: named ?? `ch_named_${k.key}` }, null];
        break;
      case 'legacy_2xx_no_charge':
        [responseStatus, body, outcome] = [200, {}, null];
        break;
      case 'stripe_charge':
        [responseStatus, body, outcome] = [
          200,
          { id: named ?? `ch_named_${k.key}`, object: 'charge', status: 'succeeded', amount: 1000, currency: 'usd' },
          null,
        ];
        break;
      case 'payment_intent':
        [responseStatus, body, outcome] = [
          200,
          { id: `pi_${k.key}`, object: 'payment_intent', status: 'succeeded', latest_charge: named },
          null,
        ];
        break;
      case 'payment_intent_action':
        [responseStatus, body, outcome] = [
          200,
          { id: `pi_${k.key}`, object: 'payment_intent', status: 'requires_action', latest_charge: null },
          null,
        ];
        break;
      case 'custom_paid':
        [responseStatus, body, outcome] = [201, { id: `order_${k.key}`, state: 'paid' }, null];
        break;
      case 'transient_503':
        [responseStatus, body, outcome] = [503, { error: 'upstream unavailable' }, null];
        break;
    }
  }
  await db.query(
    `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, attempt, downstream_key, account_id,
                                   response_status, response_body, response_outcome, amount, currency, created_at, completed_at, updated_at)
     VALUES ($1, $2, 'fp', $3, $4, 1, $5, $6, $7, $8, $9, $10, $11, $12, $13, $12)`,
    [
      k.tenantId,
      k.key,
      status,
      lockedUntil,
      downstreamKey(k.tenantId, k.key),
      c.account === 'platform' ? null : c.account,
      responseStatus,
      body === null ? null : JSON.stringify(body),
      outcome,
      c.request?.amount ?? null,
      c.request?.currency ?? null,
      created,
      status === 'completed' ? created : null,
    ],
  );
}

async function insertPayment(
  db: Queryable,
  p: PaymentSeed,
  c: NormalizedCharge | null,
  tenantId: string,
  key: string,
): Promise<void> {
  const status = p.status === 'as_charge' ? (c?.status ?? 'succeeded') : p.status;
  await db.query(
    `INSERT INTO payments (charge_id, tenant_id, idempotency_key, payment_intent_id, account_id, amount, currency, status,
                           amount_refunded, disputed, created_at, updated_at)
     VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, $8, $9, $10, $10) ON CONFLICT (charge_id) DO NOTHING`,
    [
      p.chargeId,
      p.named ? tenantId : null,
      p.named ? key : null,
      p.account === 'platform' ? null : p.account,
      (c?.amount ?? 1000) + p.amountDelta,
      c?.currency ?? 'usd',
      status,
      0,
      false,
      c ? new Date(c.created * 1000) : new Date(NOW.getTime() - p.minutesAgo * MIN),
    ],
  );
}

/** Whether a claim seed's stored answer says success (docs/judgement.md "Stored answers"): such an answer is never rewritten. */
export function storesSuccess(c: ClaimSeedH): boolean {
  return (
    c.status === 'completed' &&
    ['success', 'legacy_2xx', 'legacy_2xx_no_charge', 'stripe_charge', 'payment_intent', 'custom_paid'].includes(
      c.outcome,
    )
  );
}

/** The charges Stripe returns unreadable, by id: the problem. */
export function unreadableOf(h: History): Map<string, string> {
  const problem = 'metadata[idempotency_key] is not 1-500 characters without control characters';
  return new Map(
    [...h.keys.flatMap((k) => k.charges), ...h.loose].filter((c) => c.unreadable).map((c) => [c.id, problem]),
  );
}

/** A compact description of a history for a failure message: what a person reads to rebuild it. */
export function describeHistory(h: History): string {
  return JSON.stringify(h, null, 1);
}
