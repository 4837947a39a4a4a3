/**
 * Cases the property tests once failed on, by property: `npm test` runs each as a fixed
 * case before the property's own run (properties.ts), so a bug a deep run found stays
 * found.
 *
 * To add one, once the bug is fixed: take the seed and path from the failure that
 * `npm run test:deep` (or any run) printed, which names the property first:
 *
 *   property "sweep-properties: invariants" failed on a new seed (…):
 *   Property failed after 72 tests
 *   { seed: 1234567890, path: "71:0:0:5", endOnFailure: true }
 *
 * and add under that property's name:
 *
 *   { seed: 1234567890, path: '71:0:0:5', note: 'what was wrong, and the fix (commit or issue)' },
 *
 * Check it with SWEEPER_PROPS_SEED=<seed> SWEEPER_PROPS_PATH=<path> before the fix: it
 * must fail. Also copy the counterexample fast-check printed into `example`: an entry with
 * one replays that case whatever the arbitraries become; without it, the case the seed and
 * path name, valid only while the property's arbitraries stay as they were.
 */

export interface RegressionSeed {
  seed: number;
  path: string;
  note: string;
  /**
   * The failing case itself, as fast-check printed it (its counterexample): replayed as it
   * is, so the entry stays valid when the property's arbitraries change (the seed and path
   * then name another case). Without it, the case the seed and path name is replayed.
   */
  example?: readonly unknown[];
}

const seeds = {
  'plans: moved evidence': [],
  'sweep-properties: invariants': [
    {
      seed: -2013163831,
      path: '438:0:0:0:4:1:0:0:2:0:1:1:1:1:1:1:1:1:1:1:1:1:2:2:3:3:3:7:5:3:7:7:7:8:8:8:8:8:8:8:8',
      note: 'CI deep run: the same rerun duplicate_effect with an unswept charge as seed 483171204; passes with reference groups kept to swept charges',
    },
    {
      seed: 483171204,
      path: '1162:0:5:1:2:1:4:4:4:4:6:7:5:5:5:7:7:10:10:12:12:13:12:12:12:12',
      note: 'a rerun raised duplicate_effect with a charge the mirror held from a read by id but no run had swept; reference groups now keep only swept charges and the batch',
    },
    {
      seed: 1445341559,
      path: '71:0:0:0:5:3:4:6:5:5:7:5:5:5:7:7:6:8:8:8:8',
      note: 'a payment row without tenant/key whose charge a stored answer names was judged twice (matched and amount_mismatch)',
      example: [
        {
          keys: [
            {
              tenantId: 't2',
              key: 'k3',
              claim: {
                account: 'acct_1B',
                status: 'completed',
                minutesAgo: 30,
                request: { amount: 1000, currency: 'eur' },
                outcome: 'success',
                namesCharge: 0,
              },
              charges: [
                {
                  id: 'ch_t2_k3_0',
                  account: 'acct_1B',
                  minutesAgo: 61,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: false,
                  unreadable: false,
                },
              ],
              payments: [
                {
                  chargeId: 'ch_t2_k3_0',
                  account: 'acct_1B',
                  amountDelta: 0,
                  status: 'as_charge',
                  minutesAgo: 20,
                  named: false,
                },
              ],
            },
          ],
          loose: [],
        },
      ],
    },
    {
      seed: 1040770578,
      path: '10:4:1:1:1:1:2:1:1:2:1:1:5:5:6:6:6:6:6:6:6:6:6:6:6:6:6',
      note: "a rerun closed an unreadable charge's finding from the mirror's older, readable read of it",
      example: [
        {
          keys: [
            {
              tenantId: 't1',
              key: 'k1',
              claim: {
                account: 'platform',
                status: 'in_flight',
                minutesAgo: 30,
                request: { amount: 1000, currency: 'usd' },
                outcome: 'success',
                namesCharge: null,
              },
              charges: [
                {
                  id: 'ch_t1_k1_0',
                  account: 'platform',
                  minutesAgo: 20,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                },
                {
                  id: 'ch_t1_k1_1',
                  account: 'platform',
                  minutesAgo: 59,
                  amount: 1000,
                  currency: 'eur',
                  status: 'failed',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: true,
                },
                {
                  id: 'ch_t1_k1_2',
                  account: 'platform',
                  minutesAgo: 20,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                },
              ],
              payments: [],
            },
          ],
          loose: [],
        },
      ],
    },
    {
      seed: -1660434128,
      path: '699:0:0:3:0:0:0:5:1:1:1:1:1:3:3:4:4:4:3:4:3:3:4:4',
      note: 'a rerun repaired something (found by a deep run)',
      example: [
        {
          keys: [
            {
              tenantId: 't2',
              key: 'k1',
              claim: null,
              charges: [
                {
                  id: 'ch_t2_k1_0',
                  account: 'platform',
                  minutesAgo: 20,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                },
                {
                  id: 'ch_t2_k1_1',
                  account: 'platform',
                  minutesAgo: 59,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: false,
                  unreadable: false,
                },
              ],
              payments: [
                {
                  chargeId: 'ch_t2_k1_1',
                  account: 'platform',
                  amountDelta: 0,
                  status: 'failed',
                  minutesAgo: 20,
                  named: true,
                },
                {
                  chargeId: 'ch_ghost_t2_k1',
                  account: 'platform',
                  amountDelta: 0,
                  status: 'as_charge',
                  minutesAgo: 181,
                  named: true,
                },
              ],
            },
          ],
          loose: [],
        },
      ],
    },
    {
      seed: -520624984,
      path: '190:3:2:1:2:1:1:1:1:1:2:2:3:3:3:3:3:3:3:3:3:3:6:5:4:4:5:4:9:9:9:9:9:9:9:9:9:9:9:9:9:9:9:9',
      note: 'the oracle expected a duplicate_effect to name a charge Stripe returns unreadable (its only finding is unattributed_charge); the oracle now leaves unreadable charges out',
      example: [
        {
          keys: [
            {
              tenantId: 't1',
              key: 'k1',
              claim: null,
              charges: [
                {
                  id: 'ch_t1_k1_0',
                  account: 'acct_1B',
                  minutesAgo: 61,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                  reference: 'ord_2',
                },
                {
                  id: 'ch_t1_k1_1',
                  account: 'platform',
                  minutesAgo: 20,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                  reference: null,
                },
              ],
              payments: [],
            },
            {
              tenantId: 't1',
              key: 'k2',
              claim: null,
              charges: [
                {
                  id: 'ch_t1_k2_0',
                  account: 'acct_1B',
                  minutesAgo: 61,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: true,
                  reference: 'ord_2',
                },
                {
                  id: 'ch_t1_k2_1',
                  account: 'platform',
                  minutesAgo: 20,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                  reference: null,
                },
                {
                  id: 'ch_t1_k2_2',
                  account: 'platform',
                  minutesAgo: 20,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                  reference: null,
                },
              ],
              payments: [],
            },
          ],
          loose: [],
        },
      ],
    },
  ],
  'sweep-properties: parts': [
    {
      seed: 577753909,
      path: '10:0:0:0:4:0:0:1:0:0:1:1:1:1:2:2:2:2:2:2:2:2:5:4:5:5:2:4:4:4:4:4',
      note: 'a dry run of both accounts counted matched 1 where the real run counted 0 (a payment row on the other account)',
      example: [
        {
          keys: [
            {
              tenantId: 't2',
              key: 'k1',
              claim: {
                account: 'platform',
                status: 'in_flight',
                minutesAgo: 30,
                request: null,
                outcome: 'success',
                namesCharge: null,
              },
              charges: [
                {
                  id: 'ch_t2_k1_0',
                  account: 'platform',
                  minutesAgo: 61,
                  amount: 1000,
                  currency: 'usd',
                  status: 'failed',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                },
                {
                  id: 'ch_t2_k1_1',
                  account: 'platform',
                  minutesAgo: 20,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                },
              ],
              payments: [
                {
                  chargeId: 'ch_t2_k1_0',
                  account: 'acct_1B',
                  amountDelta: 0,
                  status: 'as_charge',
                  minutesAgo: 20,
                  named: false,
                },
              ],
            },
          ],
          loose: [],
        },
        1,
      ],
    },
  ],
  'sweep-properties: refund duplicates': [
    {
      seed: 1545001228,
      path: '508:0:0:0:6:4:1:2:5:4:3:5:1:2:5:1:1:3:3:4:7:3:4:4:4:4:4:4:4:4:4:5:4:4:4:4:12:11',
      note: 'a POST Stripe never received was counted against the refund made by the next run (the oracle now counts only a POST after Stripe made the refund)',
      example: [
        {
          keys: [
            {
              tenantId: 't2',
              key: 'k2',
              claim: null,
              charges: [
                {
                  id: 'ch_t2_k2_0',
                  account: 'acct_1B',
                  minutesAgo: 181,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                  reference: null,
                },
                {
                  id: 'ch_t2_k2_1',
                  account: 'acct_1B',
                  minutesAgo: 182,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                  reference: null,
                },
                {
                  id: 'ch_t2_k2_2',
                  account: 'platform',
                  minutesAgo: 20,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                  reference: null,
                },
              ],
              payments: [
                {
                  chargeId: 'ch_t2_k2_1',
                  account: 'acct_1B',
                  amountDelta: 0,
                  status: 'as_charge',
                  minutesAgo: 20,
                  named: true,
                },
              ],
            },
          ],
          loose: [],
        },
        [
          {
            slice: 2,
            part: 2,
            phase: 'committed',
            refundCrash: 'before',
          },
        ],
        1,
      ],
    },
    {
      seed: -1985491558,
      path: '730:0:3:5:1:4:2:5:1:1:3:3:4:3:4:3:3:3:3:5:5:6:6',
      note: "the same: the refund POST of a run that failed before Stripe received it, then the next run's, counted as two",
      example: [
        {
          keys: [
            {
              tenantId: 't2',
              key: 'k3',
              claim: null,
              charges: [
                {
                  id: 'ch_t2_k3_0',
                  account: 'acct_1B',
                  minutesAgo: 20,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                  reference: null,
                },
                {
                  id: 'ch_t2_k3_1',
                  account: 'acct_1B',
                  minutesAgo: 539,
                  amount: 1000,
                  currency: 'usd',
                  status: 'succeeded',
                  refund: 'none',
                  disputed: false,
                  customer: 'cus_1',
                  paymentMethod: 'pm_1',
                  metadata: true,
                  unreadable: false,
                  reference: null,
                },
              ],
              payments: [
                {
                  chargeId: 'ch_t2_k3_0',
                  account: 'acct_1B',
                  amountDelta: 0,
                  status: 'as_charge',
                  minutesAgo: 20,
                  named: true,
                },
              ],
            },
          ],
          loose: [],
        },
        [
          {
            slice: 1,
            part: 0,
            phase: 'listed',
            refundCrash: 'before',
          },
        ],
        1000000,
      ],
    },
  ],
  'sweep-judge-properties: judgement': [],
  'refund-judge-properties: refunds': [],
  'fuzz: normalizeCharge refuses nothing wrongly': [],
  'fuzz: normalizeCharge takes every well-formed charge': [],
  'fuzz: listChargeWindow pages': [],
  'fuzz: withRetries failures': [],
  'fuzz: withRetries headers': [],
  'fuzz-mirror: stored': [],
  'timestamps: read': [],
  'sweep-parts: tiles': [],
  'platforms: shards': [],
  'platforms: budgets': [],
  'listed-facts: same facts': [],
  'payouts-properties: reconcile': [
    {
      seed: 2012991061,
      path: '5:4:0:3:4:8:10:11:11:13:10:11:14:6:5:10:9:9:9:14:10:10:10:10',
      note: "a disputed payment's batch closed its open unpaid_effect (any category of a judged subject healed); a step now closes only its own categories",
      example: [
        {
          runs: [240, 330, 480],
          ops: [
            { kind: 'charge', at: 0, writer: 'library', amount: 100, currency: 'usd' },
            { kind: 'payout', at: 120, mode: 'auto', unexplained: 0 },
            { kind: 'charge', at: 120, writer: 'library', amount: 100, currency: 'usd' },
            { kind: 'dispute', at: 310, of: 1 },
          ],
        },
      ],
    },
    {
      seed: 0,
      path: '0',
      note: 'written by hand: a manual payout seen in transit, then canceled, was a payout_mismatch (its not-itemised record counted as reconciled)',
      example: [
        {
          runs: [240, 285, 330],
          ops: [
            { kind: 'charge', at: 0, writer: 'library', amount: 1000, currency: 'usd' },
            { kind: 'payout', at: 200, mode: 'manual_in_transit', unexplained: 0 },
            { kind: 'payoutFails', at: 250, of: 0, how: 'cancel' },
          ],
        },
      ],
    },
  ],
  'payouts-properties: crash': [
    {
      seed: 2143504494,
      path: '5:2:1:1:1:4:2:4:2:3:3:3:4:5',
      note: 'killed after the listing committed, the payout not reconciled: the resumed run took the listing as done (SWEEPER_PAYOUT_EVERY) and left it; a listing now counts once its payouts are reconciled',
      example: [
        {
          runs: [240, 330, 375],
          ops: [
            { kind: 'charge', at: 0, writer: 'library', amount: 100, currency: 'usd' },
            { kind: 'refund', at: 0, of: 0, writer: 'library', partial: true },
            { kind: 'payout', at: 120, mode: 'auto', unexplained: 0 },
          ],
        },
        { run: 0, point: 'payouts:recorded', nth: 0 },
      ],
    },
  ],
} satisfies Record<string, RegressionSeed[]>;

/** A property's name: checkProperty takes it, and the fixed seed of `npm test` derives from it. */
export type PropertyName = keyof typeof seeds;

export const REGRESSION_SEEDS: Record<PropertyName, readonly RegressionSeed[]> = seeds;
