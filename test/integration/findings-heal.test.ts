import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeHealedFindings } from '../../src/sweep/findings-store.js';
import type { Finding } from '../../src/sweep/judge/types.js';
import { createTestDatabase, explaining, type TestDatabase } from '../support/db.js';

/**
 * Open findings about subjects a batch judged and no longer finds are closed as healed
 * by the sweeper (findings-store.ts, closeHealedFindings), found from the subjects
 * through their own index (recon_findings_open_subject), never from every open finding of the account.
 * Only those: a finding still found, one about a subject not judged, another account's,
 * and one a person already closed are left as they were.
 */

const ACCOUNT = 'acct_heal1';
const OTHER = 'acct_heal2';
const NOW = new Date('2026-11-30T12:00:00Z');
let db: TestDatabase;

async function finding(
  account: string,
  category: string,
  subject: string,
  state = 'open',
  closedBy: string | null = null,
) {
  await db.pool.query(
    `INSERT INTO recon_findings (category, account, subject, charge_id, state, details, first_seen_run, last_seen_run,
                                 first_seen_at, last_seen_at, closed_at, closed_by)
     VALUES ($1, $2, $3, NULL, $4, '{}', 'run_seed', 'run_seed', $5, $5, $6, $7)`,
    [category, account, subject, state, NOW, closedBy ? NOW : null, closedBy],
  );
}

/** A finding as the judgement reports one still found: only its category and subject matter here. */
const stillFound = (category: string, subject: string) => ({ category, subject }) as unknown as Finding;

async function states() {
  const { rows } = await db.pool.query<{
    account: string;
    category: string;
    subject: string;
    state: string;
    closed_by: string | null;
    last_seen_run: string;
    note: string | null;
  }>(
    `SELECT account, category, subject, state, closed_by, last_seen_run, note FROM recon_findings ORDER BY account, category, subject`,
  );
  return rows;
}

describe('closing healed findings', () => {
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });
  beforeEach(async () => {
    await db.pool.query('TRUNCATE recon_findings CASCADE');
  });

  it("an unreadable charge's finding heals only once Stripe returns that charge readable, not from the mirror's older read", async () => {
    await finding(ACCOUNT, 'unattributed_charge', 'ch_poisoned');
    await db.pool.query(`UPDATE recon_findings SET details = '{"malformed": "amount -500 is negative"}'`);
    const close = (freshlyRead: string[]) =>
      closeHealedFindings(db.pool, {
        account: ACCOUNT,
        runId: 'run_2',
        now: NOW,
        judgedSubjects: ['ch_poisoned'],
        findings: [],
        freshlyRead,
      });
    expect(await close([])).toBe(0);
    expect(await close(['ch_other'])).toBe(0);
    expect(await close(['ch_poisoned'])).toBe(1);
    expect((await states())[0]).toMatchObject({ state: 'resolved', closed_by: 'sweeper' });
  });

  it('closes exactly the open findings of judged subjects it no longer finds, and says how many', async () => {
    await finding(ACCOUNT, 'amount_mismatch', 'healed-key');
    await finding(ACCOUNT, 'status_drift', 'ch_two'); // healed
    await finding(ACCOUNT, 'amount_mismatch', 'ch_two'); // same subject, still found
    await finding(ACCOUNT, 'unattributed_charge', 'ch_not_judged');
    await finding(ACCOUNT, 'amount_mismatch', 'ch_person', 'resolved', 'alice');
    await finding(ACCOUNT, 'status_drift', 'ch_repaired', 'repaired', 'sweeper');
    await finding(OTHER, 'amount_mismatch', 'healed-key'); // another account's

    const closed = await closeHealedFindings(db.pool, {
      account: ACCOUNT,
      runId: 'run_2',
      now: NOW,
      judgedSubjects: ['healed-key', 'ch_two', 'ch_person', 'ch_repaired', 'ch_never_a_finding', 'ch_two'],
      findings: [stillFound('amount_mismatch', 'ch_two')],
    });

    expect(closed).toBe(2);
    expect(await states()).toEqual([
      {
        account: ACCOUNT,
        category: 'amount_mismatch',
        subject: 'ch_person',
        state: 'resolved',
        closed_by: 'alice',
        last_seen_run: 'run_seed',
        note: null,
      },
      {
        account: ACCOUNT,
        category: 'amount_mismatch',
        subject: 'ch_two',
        state: 'open',
        closed_by: null,
        last_seen_run: 'run_seed',
        note: null,
      },
      {
        account: ACCOUNT,
        category: 'amount_mismatch',
        subject: 'healed-key',
        state: 'resolved',
        closed_by: 'sweeper',
        last_seen_run: 'run_2',
        note: 'no longer found by run run_2',
      },
      {
        account: ACCOUNT,
        category: 'status_drift',
        subject: 'ch_repaired',
        state: 'repaired',
        closed_by: 'sweeper',
        last_seen_run: 'run_seed',
        note: null,
      },
      {
        account: ACCOUNT,
        category: 'status_drift',
        subject: 'ch_two',
        state: 'resolved',
        closed_by: 'sweeper',
        last_seen_run: 'run_2',
        note: 'no longer found by run run_2',
      },
      {
        account: ACCOUNT,
        category: 'unattributed_charge',
        subject: 'ch_not_judged',
        state: 'open',
        closed_by: null,
        last_seen_run: 'run_seed',
        note: null,
      },
      {
        account: OTHER,
        category: 'amount_mismatch',
        subject: 'healed-key',
        state: 'open',
        closed_by: null,
        last_seen_run: 'run_seed',
        note: null,
      },
    ]);
  });

  it("a charge's batch never closes its unpaid_effect, and the payouts step closes only unpaid_effect", async () => {
    // One charge, judged by its batch (its dispute) and by the payouts step (no payout holds it).
    await finding(ACCOUNT, 'status_drift', 'ch_both');
    await finding(ACCOUNT, 'unpaid_effect', 'ch_both');
    await finding(ACCOUNT, 'payout_mismatch', 'po_1');
    const byBatch = await closeHealedFindings(db.pool, {
      account: ACCOUNT,
      runId: 'run_2',
      now: NOW,
      judgedSubjects: ['ch_both', 'po_1'],
      findings: [],
    });
    expect(byBatch).toBe(1);
    const byPayouts = await closeHealedFindings(db.pool, {
      account: ACCOUNT,
      runId: 'run_3',
      now: NOW,
      judgedSubjects: ['ch_both'],
      findings: [],
      categories: ['unpaid_effect'],
    });
    expect(byPayouts).toBe(1);
    expect((await states()).map((f) => [f.category, f.state, f.last_seen_run])).toEqual([
      ['payout_mismatch', 'open', 'run_seed'],
      ['status_drift', 'resolved', 'run_2'],
      ['unpaid_effect', 'resolved', 'run_3'],
    ]);
    // The other way round: the payouts step leaves the charge's own findings open.
    await db.pool.query(`UPDATE recon_findings SET state = 'open', closed_by = NULL`);
    expect(
      await closeHealedFindings(db.pool, {
        account: ACCOUNT,
        runId: 'run_4',
        now: NOW,
        judgedSubjects: ['ch_both'],
        findings: [stillFound('unpaid_effect', 'ch_both')],
        categories: ['unpaid_effect'],
      }),
    ).toBe(0);
    expect((await states()).map((f) => f.state)).toEqual(['open', 'open', 'open']);
  });

  it('closes nothing when nothing was judged or every judged finding is still found', async () => {
    await finding(ACCOUNT, 'amount_mismatch', 'k1');
    const none = await closeHealedFindings(db.pool, {
      account: ACCOUNT,
      runId: 'run_3',
      now: NOW,
      judgedSubjects: [],
      findings: [],
    });
    const still = await closeHealedFindings(db.pool, {
      account: ACCOUNT,
      runId: 'run_3',
      now: NOW,
      judgedSubjects: ['k1'],
      findings: [stillFound('amount_mismatch', 'k1')],
    });
    expect([none, still]).toEqual([0, 0]);
    expect((await states()).map((f) => f.state)).toEqual(['open']);
  });

  it('probes by subject on a table without statistics too (the first minute of a backfill)', async () => {
    // Before autovacuum's first ANALYZE, (account, category) and (account, subject) looked alike to
    // the planner, which read every open finding of the account per judged subject.
    await db.pool.query(
      `INSERT INTO recon_findings (category, account, subject, state, details, first_seen_run, last_seen_run, first_seen_at, last_seen_at)
       SELECT 'unattributed_charge', $1, 'ch_old_' || i, 'open', '{}', 'run_seed', 'run_seed', $2, $2
         FROM generate_series(1, 2000) i`,
      [ACCOUNT, NOW],
    );
    const seen = explaining(db.pool);
    await closeHealedFindings(seen.db, {
      account: ACCOUNT,
      runId: 'run_5',
      now: NOW,
      judgedSubjects: Array.from({ length: 1400 }, (_, i) => `ch_new_${i}`),
      findings: [],
    });
    const plan = seen.plans.join('\n');
    expect(plan).toMatch(/Index Scan (using|on) recon_findings_open_subject/);
    expect(plan).not.toMatch(/recon_findings_open(?!_subject)/);
  });

  it('finds the open findings of the judged subjects through their index, not by reading every open finding', async () => {
    // Many open findings of the account, none of them judged, and a batch's worth of judged
    // subjects (a dense part judges thousands): the plan must not read the open findings.
    await db.pool.query(
      `INSERT INTO recon_findings (category, account, subject, state, details, first_seen_run, last_seen_run, first_seen_at, last_seen_at)
       SELECT 'unattributed_charge', $1, 'ch_old_' || i, 'open', '{}', 'run_seed', 'run_seed', $2, $2
         FROM generate_series(1, 20000) i`,
      [ACCOUNT, NOW],
    );
    await db.pool.query('ANALYZE recon_findings');
    const seen = explaining(db.pool);
    const closed = await closeHealedFindings(seen.db, {
      account: ACCOUNT,
      runId: 'run_4',
      now: NOW,
      judgedSubjects: Array.from({ length: 4000 }, (_, i) => `ch_new_${i}`),
      findings: [],
    });
    expect(closed).toBe(0);
    const plan = seen.plans.join('\n');
    // A probe per subject in their index (a plain or a bitmap index scan: either reads only what it finds).
    expect(plan).toMatch(/Index Scan (using|on) recon_findings_open_subject/);
    // Neither a scan of the table nor of every open finding (the by-category index).
    expect(plan).not.toMatch(/Seq Scan on recon_findings/);
    expect(plan).not.toMatch(/recon_findings_open(?!_subject)/);
  });
});
