import { describe, expect, it } from 'vitest';
import type { Judgement } from '../../src/sweep/judge/index.js';
import type { NormalizedCharge } from '../../src/sweep/provider.js';
import { tableChecksums } from '../support/checksums.js';
import { ACCOUNTS, historyArb, storesSuccess, unreadableOf, WINDOW } from '../support/histories.js';
import { counts, historyDatabase, PROPERTY_TIMEOUT } from '../support/history-sweeps.js';
import { normalizedTables } from '../support/normalized-tables.js';
import { checkProperty } from '../support/properties.js';

/**
 * The sweep's invariants over random histories, on the real schema and the real sweep
 * (README "How a key is judged"): one account at a time. `npm test` runs the same
 * histories on every run (fixed seeds); `npm run test:deep` runs a thousand or more on new
 * seeds. A failure prints the property, the seed, the path and the shrunk history
 * (test/support/properties.ts says how to replay it and keep it as a regression seed).
 * The three sweep properties: test/integration/sweep-properties*.test.ts.
 */

const db = historyDatabase();

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

/**
 * (i) payments for one order (docs/judgement.md "Duplicate payments for one order"): every
 * open duplicate_effect names live payments for one reference of one account and tenant,
 * each amount and currency of them under two keys or more; one open finding per reference;
 * and every such group of readable charges that lies wholly inside the swept window is
 * found. A charge Stripe returns unreadable is in none: the sweep cannot read its reference
 * or amount, and its only finding is its unattributed_charge (docs/judgement.md "Keys as
 * Stripe holds them").
 */
async function assertDuplicateEffects(
  stripe: NormalizedCharge[],
  unreadable: ReadonlyMap<string, string>,
): Promise<void> {
  const { rows } = await db.pool.query<{ account: string; tenant: string; reference: string; members: string[] }>(
    `SELECT f.account, coalesce(f.tenant_id, '') AS tenant, f.reference, array_agg(fc.charge_id ORDER BY fc.charge_id) AS members
       FROM recon_findings f JOIN recon_finding_charges fc ON fc.finding_id = f.id
      WHERE f.category = 'duplicate_effect' AND f.state = 'open' GROUP BY f.id`,
  );
  const live = (c: NormalizedCharge) => money(c) && c.amountRefunded < c.amount;
  const groupOf = (c: NormalizedCharge) => `${c.account ?? 'platform'}|${c.tenantId ?? ''}|${c.reference ?? ''}`;
  const keyOf = (c: NormalizedCharge) => c.idempotencyKey ?? `own:${c.id}`;
  for (const f of rows) {
    const charges = f.members.map((id) => stripe.find((c) => c.id === id) as NormalizedCharge);
    expect(charges.every(live), 'a duplicate_effect names a charge that is not live').toBe(true);
    expect(
      f.members.filter((id) => unreadable.has(id)),
      'a duplicate_effect names a charge Stripe returns unreadable',
    ).toEqual([]);
    expect(new Set(charges.map(groupOf)), 'a duplicate_effect mixes references').toEqual(
      new Set([`${f.account}|${f.tenant}|${f.reference}`]),
    );
    for (const sum of new Set(charges.map((c) => `${c.amount} ${c.currency}`))) {
      const keys = new Set(charges.filter((c) => `${c.amount} ${c.currency}` === sum).map(keyOf));
      expect(keys.size, `a duplicate_effect group of ${sum} under one key`).toBeGreaterThan(1);
    }
  }
  const references = rows.map((f) => `${f.account}|${f.tenant}|${f.reference}`);
  expect(references.length, 'two open duplicate_effect findings for one reference').toBe(new Set(references).size);
  // Groups that must be found: every live charge of the reference, amount and currency lies in the window.
  const inWindow = (c: NormalizedCharge) =>
    c.created * 1000 >= WINDOW.from.getTime() && c.created * 1000 < WINDOW.to.getTime();
  const bySum = new Map<string, NormalizedCharge[]>();
  for (const c of stripe.filter((x) => x.reference && live(x) && !unreadable.has(x.id)))
    bySum.set(`${groupOf(c)}|${c.amount} ${c.currency}`, [
      ...(bySum.get(`${groupOf(c)}|${c.amount} ${c.currency}`) ?? []),
      c,
    ]);
  for (const [sum, charges] of bySum) {
    if (!charges.every(inWindow) || new Set(charges.map(keyOf)).size < 2) continue;
    expect(
      references,
      `payments ${charges.map((c) => c.id).join(', ')} for one order (${sum}) were not found`,
    ).toContain(sum.split('|').slice(0, 3).join('|'));
  }
}

describe('the sweep over random histories', () => {
  it(
    'never releases a claim a succeeded charge names, never touches another account, accounts for everything once, reruns idle, dry runs count alike',
    async () => {
      await checkProperty('sweep-properties: invariants', { normal: 60, deep: 2_000 }, [historyArb], async (h) => {
        const stripe = await db.reset(h);
        const claimsBefore = (await db.pool.query(`SELECT tenant_id, key, account_id, status FROM idempotency_keys`))
          .rows;
        // (g) a stored success, in whatever shape its writer stored it, is never rewritten (nor touched at all).
        const successes = h.keys.filter((k) => k.claim && storesSuccess(k.claim)).map((k) => [k.tenantId, k.key]);
        const storedRows = async () =>
          (
            await db.pool.query(
              `SELECT tenant_id, key, k::text AS row FROM idempotency_keys k
                WHERE (tenant_id, key) IN (SELECT * FROM unnest($1::text[], $2::text[])) ORDER BY 1, 2`,
              [successes.map((x) => x[0]), successes.map((x) => x[1])],
            )
          ).rows;
        const successesBefore = await storedRows();
        for (const account of ACCOUNTS) {
          const other = ACCOUNTS.find((a) => a !== account) as string;
          const evidence = db.evidence(stripe);
          // (f) a dry run first: it changes nothing, and counts as the real run then does.
          const untouched = await tableChecksums(db.pool);
          const [dry] = await db.run(stripe, evidence, { accounts: [account], dryRun: true });
          expect(await tableChecksums(db.pool), 'a dry run changed a table').toEqual(untouched);
          // (b) account B's rows stay as they are during account A's run.
          const otherBefore = await rowsOf(other);
          const judged: Judgement[] = [];
          const [real] = await db.run(stripe, evidence, { accounts: [account] }, { observe: (j) => judged.push(j) });
          // (h) no charge's content ever fails a run.
          expect([dry?.status, real?.status], 'a run failed on what Stripe returned').toEqual([
            'succeeded',
            'succeeded',
          ]);
          expect(await rowsOf(other), `${account}'s run changed a row of ${other}`).toEqual(otherBefore);
          expect(counts(dry!), 'a dry run counted differently from the real run').toEqual(counts(real!));
          // (d) every judgement gives every object one home.
          judged.forEach(assertOneHomeEach);
          // (e) a rerun repairs nothing and changes no claim, payment or finding state.
          const settled = await normalizedTables(db.pool);
          const [again] = await db.run(stripe, evidence, { accounts: [account] });
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
        expect(await storedRows(), 'a stored success was rewritten').toEqual(successesBefore);
        await assertDuplicateEffects(stripe, unreadableOf(h));
        // (a) no claim released while a succeeded charge in its account names it (readable or not).
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
    PROPERTY_TIMEOUT,
  );
});
