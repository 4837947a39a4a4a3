import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { silentLogger } from '../../src/log.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import type { Judgement } from '../../src/sweep/judge/index.js';
import { sweep, sweepOptions, type SweepOptions, type SweepReport } from '../../src/sweep/sweep.js';
import { tableChecksums } from '../support/checksums.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { atDepth } from '../support/depth.js';
import { checkProperty } from '../support/properties.js';
import {
  ACCOUNTS,
  describeHistory,
  historyArb,
  NOW,
  SLICE_MS,
  stripeChargesOf,
  WINDOW,
  writeHistory,
  type History,
} from '../support/histories.js';
import { normalizedTables } from '../support/normalized-tables.js';
import { emptySweepTables, memoryChargeSource, memoryEvidence, IDEMPOTENCY_WINDOW_MS } from '../support/scenario.js';

/**
 * The sweep's invariants over random histories, on the real schema and the real sweep
 * (README "How a key is judged"). `npm test` runs the same two hundred histories on every
 * run (fixed seeds); `npm run test:deep` runs thousands on new seeds. A failure prints the
 * property, the seed, the path and the shrunk history (test/support/properties.ts says how
 * to replay it and how to keep it as a regression seed).
 */

/** Cases of the first property at depth; the two others run half as many (each does twice its work). */
const DEEP_RUNS = 1_000;
/** No case is slow: the bound only stops a run that hangs, at either depth. */
const TIMEOUT = atDepth({ normal: 600_000, deep: 3 * 3_600_000 });

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 6 });
  await ensureDayPartitions(db.pool, { from: '2026-11-01', to: '2026-11-15' });
});
afterAll(async () => {
  await db.drop();
});

async function reset(h: History): Promise<NormalizedCharge[]> {
  await emptySweepTables(db.pool);
  const stripe = stripeChargesOf(h);
  await writeHistory(db.pool, h, stripe);
  return stripe;
}

type Evidence = ReturnType<typeof memoryEvidence>;

function run(
  stripe: NormalizedCharge[],
  evidence: Evidence,
  options: Partial<SweepOptions> & { accounts: string[] },
  extra: {
    observe?: (j: Judgement) => void;
    faultPoint?: (name: string) => void;
  } = {},
): Promise<SweepReport[]> {
  return sweep(
    {
      pool: db.pool,
      listCharges: memoryChargeSource(() => stripe),
      evidence,
      idempotencyWindowMs: IDEMPOTENCY_WINDOW_MS,
      clock: () => NOW,
      logger: silentLogger(),
      ...(extra.observe ? { observeJudgement: extra.observe } : {}),
      ...(extra.faultPoint ? { faultPoint: extra.faultPoint } : {}),
    },
    sweepOptions({ mode: 'backfill', window: WINDOW, sliceMs: SLICE_MS, resume: false, ...options }),
  );
}

const rowsOf = async (account: string) => {
  const id = account === 'platform' ? null : account;
  const q = async (sql: string) => (await db.pool.query(sql, [id, account])).rows;
  return {
    claims: await q(
      `SELECT * FROM idempotency_keys WHERE account_id IS NOT DISTINCT FROM $1 AND $2::text IS NOT NULL ORDER BY tenant_id, key`,
    ),
    payments: await q(
      `SELECT * FROM payments WHERE account_id IS NOT DISTINCT FROM $1 AND $2::text IS NOT NULL ORDER BY charge_id`,
    ),
    findings: await q(
      `SELECT * FROM recon_findings WHERE account = $2 AND $1::text IS NOT DISTINCT FROM $1 ORDER BY id`,
    ),
    mirror: await q(
      `SELECT * FROM stripe_charges WHERE account = $2 AND $1::text IS NOT DISTINCT FROM $1 ORDER BY charge_id`,
    ),
  };
};

const money = (c: NormalizedCharge) => c.status === 'succeeded' || c.status === 'pending';
const counts = (r: SweepReport) => ({
  findings: r.findings,
  repaired: r.repaired,
  unreconciled: r.unreconciled,
  deferred: r.deferred_keys,
});

/** (d): within one judgement, every claim, charge and payment row it judged has exactly one home. */
function assertOneHomeEach(j: Judgement): void {
  const homes = new Map<string, string[]>();
  const put = (what: string, where: string) => homes.set(what, [...(homes.get(what) ?? []), where]);
  for (const id of j.matched) put(`charge ${id}`, 'matched');
  for (const id of j.quiet.charges) put(`charge ${id}`, 'quiet');
  for (const id of j.quiet.claims) put(`claim ${id}`, 'quiet');
  for (const f of j.findings) {
    for (const id of f.covers.charges) put(`charge ${id}`, f.category);
    for (const id of f.covers.effects) put(`effect ${id}`, f.category);
    for (const id of f.covers.claims) put(`claim ${id}`, f.category);
  }
  const twice = [...homes].filter(
    ([, where]) => new Set(where).size > 1 || (where.length > 1 && where[0] !== 'matched' && where[0] !== 'quiet'),
  );
  expect(twice, 'an object judged into two places').toEqual([]);
}

describe('the sweep over random histories', () => {
  it(
    'never releases a claim a succeeded charge names, never touches another account, accounts for everything once, reruns idle, dry runs count alike',
    async () => {
      await checkProperty('sweep-properties: invariants', { normal: 100, deep: DEEP_RUNS }, [historyArb], async (h) => {
        const stripe = await reset(h);
        const claimsBefore = (await db.pool.query(`SELECT tenant_id, key, account_id, status FROM idempotency_keys`))
          .rows;
        for (const account of ACCOUNTS) {
          const other = ACCOUNTS.find((a) => a !== account) as string;
          const evidence = memoryEvidence(() => stripe);
          // (f) a dry run first: it changes nothing, and counts as the real run then does.
          const untouched = await tableChecksums(db.pool);
          const [dry] = await run(stripe, evidence, { accounts: [account], dryRun: true });
          expect(await tableChecksums(db.pool), 'a dry run changed a table').toEqual(untouched);
          // (b) account B's rows stay as they are during account A's run.
          const otherBefore = await rowsOf(other);
          const judged: Judgement[] = [];
          const [real] = await run(stripe, evidence, { accounts: [account] }, { observe: (j) => judged.push(j) });
          expect(await rowsOf(other), `${account}'s run changed a row of ${other}`).toEqual(otherBefore);
          expect(counts(dry!), 'a dry run counted differently from the real run').toEqual(counts(real!));
          // (d) every judgement gives every object one home.
          judged.forEach(assertOneHomeEach);
          // (e) a rerun repairs nothing and changes no claim, payment or finding state.
          const settled = await normalizedTables(db.pool);
          const [again] = await run(stripe, evidence, { accounts: [account] });
          expect(
            Object.values(again!.repaired).every((n) => n === 0),
            'a rerun repaired something',
          ).toBe(true);
          const rerun = await normalizedTables(db.pool);
          expect({ claims: rerun.claims, payments: rerun.payments, findings: rerun.findings }).toEqual({
            claims: settled.claims,
            payments: settled.payments,
            findings: settled.findings,
          });
        }
        // (a) no claim released while a succeeded charge in its account names it.
        const after = (await db.pool.query(`SELECT tenant_id, key, account_id, status FROM idempotency_keys`)).rows;
        for (const claim of after) {
          const was = claimsBefore.find((c) => c.tenant_id === claim.tenant_id && c.key === claim.key);
          if (claim.status !== 'released' || was?.status === 'released') continue;
          const naming = stripe.filter(
            (c) =>
              money(c) &&
              c.account === claim.account_id &&
              c.tenantId === claim.tenant_id &&
              c.idempotencyKey === claim.key,
          );
          expect(naming, `claim ${claim.tenant_id}/${claim.key} released although Stripe has a charge for it`).toEqual(
            [],
          );
        }
      });
    },
    TIMEOUT,
  );

  it(
    'a slice judged in parts (SWEEPER_BATCH_CHARGES) ends exactly as judged whole: tables, counts, charges scanned, dry runs too',
    async () => {
      await checkProperty(
        'sweep-properties: parts',
        { normal: 50, deep: DEEP_RUNS / 2 },
        [historyArb, fc.integer({ min: 1, max: 3 })],
        async (h, batchCharges) => {
          const outcome = async (options: Partial<SweepOptions>) => {
            const stripe = await reset(h);
            const reports = await run(
              stripe,
              memoryEvidence(() => stripe),
              { accounts: [...ACCOUNTS], ...options },
            );
            return {
              counts: reports.map((r) => ({ ...counts(r), scanned: r.charges_scanned, status: r.status })),
              tables: await normalizedTables(db.pool),
            };
          };
          const whole = await outcome({ batchCharges: 1_000_000 });
          const parts = await outcome({ batchCharges });
          expect(parts.counts, 'counts differ when slices are judged in parts').toEqual(whole.counts);
          expect(parts.tables, 'tables differ when slices are judged in parts').toEqual(whole.tables);
          // A dry run of both accounts at once, whole or in parts (one transaction, the overlay
          // carried from part to part and from account to account), counts as the real run of
          // both, and leaves the tables as they were.
          const dryWhole = await outcome({ batchCharges: 1_000_000, dryRun: true });
          const dryParts = await outcome({ batchCharges, dryRun: true });
          expect(dryWhole.counts, 'a dry run of both accounts counted differently from the real run').toEqual(
            whole.counts,
          );
          expect(dryParts.counts, 'a dry run in parts counted differently').toEqual(dryWhole.counts);
          expect(dryParts.tables, 'a dry run in parts left other tables').toEqual(dryWhole.tables);
        },
      );
    },
    TIMEOUT,
  );

  it(
    '--refund-duplicates never refunds the kept charge nor one differing from it, and POSTs at most once per extra across runs and kills',
    async () => {
      const faults = fc.array(
        fc.record({
          slice: fc.integer({ min: 0, max: 2 }),
          // A slice judged in parts (batchCharges below): which part's phase.
          part: fc.integer({ min: 0, max: 2 }),
          phase: fc.constantFrom('listed', 'ingested', 'judged', 'repaired', 'before-commit', 'committed', 'verified'),
          refundCrash: fc.constantFrom('none', 'before', 'after'),
        }),
        { maxLength: 3 },
      );
      await checkProperty(
        'sweep-properties: refund duplicates',
        { normal: 50, deep: DEEP_RUNS / 2 },
        [historyArb, faults, fc.constantFrom(1_000_000, 1, 2)],
        async (h, crashes, batchCharges) => {
          const stripe = await reset(h);
          const evidence = memoryEvidence(() => stripe);
          const posts = new Map<string, number>();
          const refund = evidence.refund.bind(evidence);
          evidence.refund = async (account, request) => {
            posts.set(request.chargeId, (posts.get(request.chargeId) ?? 0) + 1);
            return refund(account, request);
          };
          for (const crash of [...crashes, null]) {
            if (crash?.refundCrash === 'before') evidence.refundFails.next = 1;
            evidence.refundFails.afterStripeRefunded = crash?.refundCrash === 'after';
            if (crash?.refundCrash === 'after') evidence.refundFails.next = 1;
            await run(
              stripe,
              evidence,
              { accounts: [...ACCOUNTS], refundDuplicates: true, batchCharges },
              {
                faultPoint: (name) => {
                  if (!crash) return;
                  const whole = `slice:${crash.slice}:${crash.phase}`;
                  if (name === whole || name === `slice:${crash.slice}.${crash.part}:${crash.phase}`)
                    throw new Error(`killed at ${name}`);
                },
              },
            ).catch((error: unknown) => {
              if (crash === null) throw error;
            });
            evidence.refundFails.next = 0;
          }
          const refunded = new Set(evidence.refunds.map((r) => r.chargeId));
          expect(
            [...posts].filter(([, n]) => n > 1),
            'a charge refunded by more than one POST',
          ).toEqual([]);
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
    TIMEOUT,
  );
});

export { describeHistory };
