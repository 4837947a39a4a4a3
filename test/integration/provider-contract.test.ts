import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStripeProvider } from '../../src/providers/stripe/provider.js';
import {
  isRefundMade,
  REFUND_KEY_METADATA,
  type NormalizedCharge,
  type PaymentProvider,
} from '../../src/sweep/provider.js';
import { startStripeDouble, type StripeDouble } from '../../testkit/stripe-double/index.js';
import { createMemoryProvider, type MemoryChargeSpec } from '../support/memory-provider.js';

/**
 * The provider contract: what the sweep relies on from any PaymentProvider, one suite run
 * against Stripe's (the real SDK against the Stripe double) and the in-memory one
 * (test/support/memory-provider.ts). A new provider passes this suite before the sweep
 * runs on it.
 */

const HOUR = 3_600;
/** Unix seconds: the window the tests list, an hour long. */
const FROM = Date.parse('2026-11-20T10:00:00Z') / 1000;
const TO = FROM + HOUR;
const WINDOW = { from: new Date(FROM * 1000), to: new Date(TO * 1000) };
/** The providers' clock while a test runs: after every charge the tests make. */
const NOW = TO + 6 * HOUR;
const ACCOUNT = 'acct_contract';
const OTHER = 'acct_other';

interface Harness {
  provider: PaymentProvider;
  /** A charge at the provider as a payment leaves it (with its creation events); its id. */
  charge(spec: MemoryChargeSpec): Promise<string>;
  /** Moves the provider's clock (when refunds and their events happen), unix seconds. */
  setNow(seconds: number): void;
}

let double: StripeDouble;
beforeAll(async () => {
  double = await startStripeDouble({ now: new Date(NOW * 1000) });
});
afterAll(async () => {
  await double.close();
});

const providers: Array<{ name: string; open: () => Harness }> = [
  {
    name: 'stripe (the real SDK against the Stripe double)',
    open() {
      double.reset();
      double.clock.set(NOW * 1000);
      const provider = createStripeProvider({ apiKey: 'sk_test_contract', apiBase: double.url, ratePerSecond: 1_000 });
      return {
        provider,
        async charge(spec) {
          const metadata =
            spec.tenantId === undefined
              ? undefined
              : { tenant_id: spec.tenantId, idempotency_key: spec.idempotencyKey ?? '' };
          return double.createCharge(spec.account, {
            amount: spec.amount ?? 1000,
            created: spec.created,
            ...(metadata ? { metadata } : {}),
          }).id;
        },
        setNow: (seconds) => double.clock.set(seconds * 1000),
      };
    },
  },
  {
    name: 'memory (test/support/memory-provider.ts)',
    open() {
      const provider = createMemoryProvider({ now: NOW });
      return {
        provider,
        charge: async (spec) => provider.createCharge(spec).id,
        setNow: (seconds) => {
          provider.now = seconds;
        },
      };
    },
  },
];

async function listAll(
  provider: PaymentProvider,
  account: string,
  window = WINDOW,
): Promise<{ pages: NormalizedCharge[][]; ids: string[] }> {
  const pages: NormalizedCharge[][] = [];
  for await (const page of provider.listCharges(account, window)) {
    expect(page.malformed).toEqual([]);
    pages.push(page.charges);
  }
  return {
    pages,
    ids: pages
      .flat()
      .map((c) => c.id)
      .sort(),
  };
}

const sorted = (ids: Array<string | null>) => [...ids].sort();

describe.each(providers)('provider contract: $name', ({ open }) => {
  it('states its facts: an idempotency window, a page size, a request rate', () => {
    const { facts } = open().provider;
    expect(facts.idempotencyWindowMs).toBeGreaterThan(0);
    expect(Number.isInteger(facts.pageSize) && facts.pageSize >= 1).toBe(true);
    expect(facts.ratePerSecond).toBeGreaterThan(0);
  });

  it('lists exactly the charges created in a window, of that account only', async () => {
    const h = open();
    const inside = [
      await h.charge({ account: ACCOUNT, created: FROM }),
      await h.charge({ account: ACCOUNT, created: FROM + 1_800 }),
      await h.charge({ account: ACCOUNT, created: TO - 1 }),
    ];
    await h.charge({ account: ACCOUNT, created: FROM - 1 });
    await h.charge({ account: ACCOUNT, created: TO });
    await h.charge({ account: OTHER, created: FROM + 60 });
    await h.charge({ account: null, created: FROM + 60 });

    const { ids, pages } = await listAll(h.provider, ACCOUNT);
    expect(ids).toEqual(sorted(inside));
    for (const c of pages.flat()) {
      expect(c.account).toBe(ACCOUNT);
      expect(c.created >= FROM && c.created < TO).toBe(true);
    }
    expect((await listAll(h.provider, 'platform')).ids).toHaveLength(1);
    expect(
      (await listAll(h.provider, ACCOUNT, { from: new Date(TO * 1000), to: new Date((TO + HOUR) * 1000) })).ids,
    ).toHaveLength(1);
  });

  it('pages a window larger than a page: no page over the page size, every charge exactly once', async () => {
    const h = open();
    const count = h.provider.facts.pageSize * 2 + 17;
    const made: string[] = [];
    // Some share a second: paging must not lose or repeat charges of one second.
    for (let i = 0; i < count; i += 1)
      made.push(await h.charge({ account: ACCOUNT, created: FROM + Math.floor(i / 3) }));
    const { pages, ids } = await listAll(h.provider, ACCOUNT);
    expect(pages.length).toBeGreaterThanOrEqual(3);
    for (const page of pages) expect(page.length).toBeLessThanOrEqual(h.provider.facts.pageSize);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(sorted(made));
  });

  it('retrieves charges by id as the listing reads them; unknown ids and other accounts are absent', async () => {
    const h = open();
    const a = await h.charge({
      account: ACCOUNT,
      created: FROM + 10,
      amount: 1234,
      tenantId: 'acme',
      idempotencyKey: 'order-1',
    });
    const b = await h.charge({ account: ACCOUNT, created: FROM + 20 });
    const elsewhere = await h.charge({ account: OTHER, created: FROM + 30 });
    const found = await h.provider.evidence.chargesById(ACCOUNT, [a, b, elsewhere, 'ch_missing000000000000001']);
    expect(sorted(found.map((c) => c.id))).toEqual(sorted([a, b]));
    const listed = (await listAll(h.provider, ACCOUNT)).pages.flat();
    const pick = (c: NormalizedCharge) => ({
      id: c.id,
      account: c.account,
      created: c.created,
      amount: c.amount,
      currency: c.currency,
      status: c.status,
      refunded: c.refunded,
      amountRefunded: c.amountRefunded,
      tenantId: c.tenantId,
      idempotencyKey: c.idempotencyKey,
    });
    const byId = (cs: NormalizedCharge[]) => cs.map(pick).sort((x, y) => x.id.localeCompare(y.id));
    expect(byId(found)).toEqual(byId(listed));
    expect(found.find((c) => c.id === a)).toMatchObject({
      amount: 1234,
      tenantId: 'acme',
      idempotencyKey: 'order-1',
      account: ACCOUNT,
    });
  });

  it('searches charges by key metadata: exactly the charges naming that tenant and key', async () => {
    const h = open();
    const first = await h.charge({ account: ACCOUNT, created: FROM + 10, tenantId: 'acme', idempotencyKey: 'order-7' });
    const again = await h.charge({ account: ACCOUNT, created: FROM + 20, tenantId: 'acme', idempotencyKey: 'order-7' });
    await h.charge({ account: ACCOUNT, created: FROM + 30, tenantId: 'acme', idempotencyKey: 'order-8' });
    await h.charge({ account: ACCOUNT, created: FROM + 40, tenantId: 'globex', idempotencyKey: 'order-7' });
    await h.charge({ account: OTHER, created: FROM + 50, tenantId: 'acme', idempotencyKey: 'order-7' });
    await h.charge({ account: ACCOUNT, created: FROM + 60 });
    const named = await h.provider.evidence.chargesNaming(ACCOUNT, 'acme', 'order-7');
    expect(sorted(named.map((c) => c.id))).toEqual(sorted([first, again]));
    for (const c of named) expect(c).toMatchObject({ tenantId: 'acme', idempotencyKey: 'order-7', account: ACCOUNT });
    expect(await h.provider.evidence.chargesNaming(ACCOUNT, 'acme', 'order-9')).toEqual([]);
  });

  it('refunds: the charge reads as refunded, the refund is listed, and a retry with the same key refunds nothing more', async () => {
    const h = open();
    const id = await h.charge({ account: ACCOUNT, created: FROM + 10, amount: 2500 });
    const request = {
      chargeId: id,
      amount: 2500,
      idempotencyKey: 'sweeper_refund_contract_1',
      metadata: { [REFUND_KEY_METADATA]: 'sweeper_refund_contract_1' },
    };
    const refund = await h.provider.evidence.refund(ACCOUNT, request);
    expect(refund).toMatchObject({
      chargeId: id,
      amount: 2500,
      metadata: { [REFUND_KEY_METADATA]: 'sweeper_refund_contract_1' },
    });
    expect(isRefundMade(refund)).toBe(true);

    const [after] = await h.provider.evidence.chargesById(ACCOUNT, [id]);
    expect(after).toMatchObject({ id, refunded: true, amountRefunded: 2500 });

    const retried = await h.provider.evidence.refund(ACCOUNT, request);
    expect(retried.id).toBe(refund.id);
    const listed = await h.provider.evidence.refundsOf(ACCOUNT, id);
    expect(listed.map((r) => r.id)).toEqual([refund.id]);
    expect((await h.provider.evidence.chargesById(ACCOUNT, [id]))[0]).toMatchObject({ amountRefunded: 2500 });
  });

  it('refunds part of a charge: not refunded yet, the amount refunded is what was asked', async () => {
    const h = open();
    const id = await h.charge({ account: ACCOUNT, created: FROM + 10, amount: 3000 });
    const refund = await h.provider.evidence.refund(ACCOUNT, {
      chargeId: id,
      amount: 1000,
      idempotencyKey: 'sweeper_refund_part',
      metadata: { [REFUND_KEY_METADATA]: 'sweeper_refund_part' },
    });
    expect(refund.amount).toBe(1000);
    expect((await h.provider.evidence.chargesById(ACCOUNT, [id]))[0]).toMatchObject({
      refunded: false,
      amountRefunded: 1000,
    });
  });

  it('reads the changes since a cursor: pointers to the charges changed after it (created, refunded), none before it', async () => {
    const h = open();
    const cursor = FROM + 100;
    const old = await h.charge({ account: ACCOUNT, created: FROM + 10 });
    const fresh = await h.charge({ account: ACCOUNT, created: FROM + 200 });
    await h.charge({ account: OTHER, created: FROM + 300 });
    const refundedAt = FROM + 400;
    h.setNow(refundedAt);
    await h.provider.evidence.refund(ACCOUNT, {
      chargeId: old,
      amount: 1000,
      idempotencyKey: 'sweeper_refund_events',
      metadata: { [REFUND_KEY_METADATA]: 'sweeper_refund_events' },
    });
    h.setNow(NOW);
    const listChanges = h.provider.listChanges;
    if (!listChanges) throw new Error('the provider reads no changes');
    const changed = async (after: number, before: number, overlapSeconds = 0) => {
      const pointers = await listChanges(ACCOUNT, { after, overlapSeconds, before });
      const from = overlapSeconds > 0 ? after - overlapSeconds : after + 1;
      for (const p of pointers) {
        expect(p.problem).toBeUndefined();
        expect(p.created >= from && p.created < before).toBe(true);
      }
      return sorted([...new Set(pointers.map((p) => p.chargeId).filter((c): c is string => c !== null))]);
    };
    // After the cursor: the fresh charge's creation and the old charge's refund.
    expect(await changed(cursor, NOW)).toEqual(sorted([fresh, old]));
    // Up to (not including) the refund's second: only the fresh charge.
    expect(await changed(cursor, refundedAt)).toEqual([fresh]);
    // A cursor at the refund's second: nothing after it.
    expect(await changed(refundedAt, NOW)).toEqual([]);
    // An overlap re-reads behind the cursor: the old charge's creation is back in.
    expect(await changed(cursor, refundedAt, cursor - (FROM + 10))).toEqual(sorted([old, fresh]));
  });
});
