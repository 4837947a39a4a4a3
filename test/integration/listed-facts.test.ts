import { describe, expect, it } from 'vitest';
import type { PoolClient } from 'pg';
import type { ChargeFact, EffectFact, SliceFacts } from '../../src/sweep/facts.js';
import { loadSliceFacts } from '../../src/sweep/facts-sql.js';
import { factsFromListing } from '../../src/sweep/listed-facts.js';
import { copyCharges } from '../../src/sweep/mirror-copy.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { ACCOUNTS, historyArb, SLICE_MS, unreadableOf, WINDOW } from '../support/histories.js';
import { historyDatabase, PROPERTY_TIMEOUT } from '../support/history-sweeps.js';
import { checkProperty } from '../support/properties.js';
import { charge } from '../support/scenario.js';

/**
 * A slice judged from its listing (src/sweep/listed-facts.ts) is judged on the same facts
 * as one gathered from the mirror (facts-sql.ts): over random histories, in other writers'
 * shapes too, each slice's listing is landed and both gathers are compared, field by field.
 */

const db = historyDatabase();
const MARGIN_MS = 5 * 60_000;

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byCharge = (a: EffectFact, b: EffectFact) => (a.chargeId < b.chargeId ? -1 : a.chargeId > b.chargeId ? 1 : 0);
const view = (c: ChargeFact) => ({ ...c, disputeStatus: c.disputeStatus ?? null, recordedIn: c.recordedIn ?? null });

/** The facts in one order, so two gathers that read alike compare equal. */
function canonical(f: SliceFacts) {
  return {
    identities: [...f.identities]
      .map((i) => ({ ...i, charges: i.charges.map(view).sort(byId), effects: [...i.effects].sort(byCharge) }))
      .sort((a, b) => (`${a.tenantId} ${a.key}` < `${b.tenantId} ${b.key}` ? -1 : 1)),
    looseCharges: f.looseCharges
      .map((l) => ({ ...l, charge: view(l.charge) }))
      .sort((a, b) => byId(a.charge, b.charge)),
    looseEffects: [...f.looseEffects].sort((a, b) => byCharge(a.effect, b.effect)),
    references: (f.outcomes?.references ?? [])
      .map((g) => ({ ...g, charges: g.charges.map(view).sort(byId) }))
      .sort((a, b) => (`${a.tenantId} ${a.reference}` < `${b.tenantId} ${b.reference}` ? -1 : 1)),
    suspects: (f.outcomes?.suspects ?? []).map((c) => ({ ...view(c), recordedIn: null })).sort(byId),
    verdicts: (f.outcomes?.verdicts ?? []).map((v) => [...v].sort()).sort(),
  };
}

async function inRolledBack<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    return await fn(client);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

describe('a slice judged from its listing', () => {
  it(
    'has the same facts as one gathered from the mirror, for every slice of random histories',
    async () => {
      let fromListing = 0;
      await checkProperty('listed-facts: same facts', { normal: 60, deep: 500 }, [historyArb], async (h) => {
        const stripe = await db.reset(h);
        const unreadable = unreadableOf(h);
        for (const account of ACCOUNTS) {
          for (let at = WINDOW.from.getTime(); at < WINDOW.to.getTime(); at += SLICE_MS) {
            const slice = { from: new Date(at), to: new Date(Math.min(at + SLICE_MS, WINDOW.to.getTime())) };
            const listed = { from: new Date(at - MARGIN_MS), to: new Date(slice.to.getTime() + MARGIN_MS) };
            const charges: NormalizedCharge[] = stripe.filter(
              (c) =>
                (c.account ?? 'platform') === account &&
                !unreadable.has(c.id) &&
                c.created * 1000 >= listed.from.getTime() &&
                c.created * 1000 < listed.to.getTime(),
            );
            const fetchedAt = new Date(WINDOW.to.getTime() + at / 1000);
            const options = { storedAnswer: null, suspectWindowMs: 10 * 60_000 };
            await inRolledBack(async (client) => {
              await copyCharges(client, charges, fetchedAt);
              const memory = await factsFromListing(
                client,
                account,
                { slice, listed },
                { charges, fetchedAt },
                options,
              );
              const mirror = await loadSliceFacts(client, account, slice, listed, options);
              if (memory === null) return;
              fromListing += 1;
              expect(canonical(memory)).toEqual(canonical(mirror));
            });
          }
        }
      });
      // Most slices land in an empty window: the listing's path is the one compared.
      expect(fromListing).toBeGreaterThan(0);
    },
    PROPERTY_TIMEOUT,
  );
});

describe('a slice whose mirror holds more than its listing read', () => {
  const slice = { from: new Date('2026-11-10T03:00:00Z'), to: new Date('2026-11-10T04:00:00Z') };
  const at = (minutes: number) => Math.floor(slice.from.getTime() / 1000) + minutes * 60;
  const listedAt = new Date('2026-11-10T11:00:00Z');
  const options = { storedAnswer: null, suspectWindowMs: 0 };
  const base = { tenantId: 't1', currency: 'usd', status: 'succeeded' as const };

  it('reads a listed charge’s dispute as the mirror’s gather does', async () => {
    await db.reset({ keys: [], loose: [] });
    const charges = [charge({ ...base, id: 'ch_disputed', created: at(5), idempotencyKey: 'k1', disputed: true })];
    await inRolledBack(async (client) => {
      await copyCharges(client, charges, listedAt);
      await client.query(
        `INSERT INTO stripe_disputes (account, dispute_id, charge_id, status, as_of, stage, event_id)
         VALUES ('platform', 'dp_1', 'ch_disputed', 'needs_response', $1, 1, 'evt_1'),
                ('platform', 'dp_2', 'ch_disputed', 'won', $2, 2, 'evt_2')`,
        [new Date('2026-11-10T05:00:00Z'), new Date('2026-11-10T06:00:00Z')],
      );
      const memory = await factsFromListing(
        client,
        'platform',
        { slice, listed: slice },
        { charges, fetchedAt: listedAt },
        options,
      );
      const mirror = await loadSliceFacts(client, 'platform', slice, slice, options);
      expect(memory?.identities[0]?.charges[0]?.disputeStatus).toBe('won');
      expect(canonical(memory as SliceFacts)).toEqual(canonical(mirror));
    });
  });

  it('is gathered from the mirror when a newer read of a listed charge is there, or a charge the listing lacks', async () => {
    await db.reset({ keys: [], loose: [] });
    const listed = [
      charge({ ...base, id: 'ch_a', created: at(5), idempotencyKey: 'k1' }),
      charge({ ...base, id: 'ch_b', created: at(6), idempotencyKey: 'k2' }),
    ];
    await inRolledBack(async (client) => {
      // A newer read of ch_b (Stripe's own word) landed first: the listing's older one does not overwrite it.
      await copyCharges(
        client,
        [{ ...listed[1]!, amountRefunded: 100, refunded: true }],
        new Date(listedAt.getTime() + 1),
      );
      await copyCharges(client, listed, listedAt);
      const part = { slice, listed: slice };
      expect(
        await factsFromListing(client, 'platform', part, { charges: listed, fetchedAt: listedAt }, options),
      ).toBeNull();
    });
    await inRolledBack(async (client) => {
      // A charge an earlier read landed that this listing did not return (it could not read it).
      await copyCharges(client, [charge({ ...base, id: 'ch_c', created: at(7), idempotencyKey: 'k3' })], new Date(0));
      await copyCharges(client, listed, listedAt);
      const part = { slice, listed: slice };
      expect(
        await factsFromListing(client, 'platform', part, { charges: listed, fetchedAt: listedAt }, options),
      ).toBeNull();
    });
  });
});
