import type { Category } from './categories.js';

/** One line per category: what it means and what a person should do. README "Runbook" has the long form. */
export const RUNBOOK: Record<Exclude<Category, 'matched'>, { means: string; sweeper: string; person: string }> = {
  claim_without_effect: {
    means: 'the claim exists and Stripe has the charge, but no payment row was committed (a crash after the charge)',
    sweeper: 'recorded the payment from the charge and completed the claim, so retries replay it',
    person: 'nothing',
  },
  stale_claim: {
    means: 'an attempt died before Stripe saw it; the claim was left in flight',
    sweeper:
      'released it so the caller\u2019s retry can run (same downstream key, no double charge); not if older than 24 h',
    person: 'only for claims older than 24 h: decide by hand whether to retry (Stripe has forgotten the key)',
  },
  lost_effect: {
    means: 'a success was stored on the claim, but there is no payment row and no charge at Stripe',
    sweeper: 'nothing it can safely do',
    person: 'find what the caller was told; no money moved, so correct the claim or the order',
  },
  effect_without_claim: {
    means: 'a payment row and its charge exist but the claim is gone',
    sweeper: 're-created the claim as completed, so a retry replays instead of charging',
    person: 'nothing',
  },
  orphan_charge: {
    means: 'a charge made outside the library whose metadata names a key of a tenant known on the account',
    sweeper: 'created the claim and the payment row from the charge',
    person: 'check why it was made outside the library',
  },
  unattributed_charge: {
    means:
      'money nobody here can attribute (no metadata, a tenant unknown on the account, another account\u2019s claim, an unreadable charge)',
    sweeper: 'nothing: metadata alone never makes a claim',
    person:
      'look the charge up in the Stripe dashboard (customer, payment intent), then record it and resolve, or refund it',
  },
  effect_without_charge: {
    means: 'a payment row for a charge Stripe never made: money recorded that was never taken',
    sweeper: 'nothing it can safely do',
    person: 'correct the books; find the code path that wrote the row',
  },
  amount_mismatch: {
    means: 'a payment row or a claim\u2019s request disagrees with its charge on amount or currency',
    sweeper: 'nothing: which side is wrong is a business question',
    person: 'Stripe shows what was charged; fix the row or refund the difference',
  },
  status_drift: {
    means: 'refund, dispute or capture state changed at Stripe',
    sweeper: 'copied Stripe\u2019s state onto the payment row (Stripe owns it)',
    person: 'nothing',
  },
  duplicate_charge: {
    means: 'two or more successful charges for one tenant and key: the customer paid twice',
    sweeper: 'nothing by default; with --refund-duplicates it refunds extras identical to the kept charge',
    person: 'refund the extra charge (or rerun with --refund-duplicates)',
  },
};
