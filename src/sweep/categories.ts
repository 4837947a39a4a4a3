/**
 * The finding categories of the public contract, each defined once, here: what it is
 * about, how urgent it is, what the sweep repairs, when it stays open and what a person
 * does. The alert severities (src/alerts/categories.ts), the demo's one-liners
 * (runbook.ts) and the tables of README.md and docs/ (`npm run docs:generate`) are
 * derived from these definitions; the rules that decide a category are in
 * src/sweep/judge/ and docs/judgement.md.
 */

/**
 * `critical`: money may be wrong, and an open finding pages someone (PagerDuty severity
 * critical). `warning`: bookkeeping that can wait for office hours.
 */
export type Severity = 'critical' | 'warning';

/** What the demo prints for an open finding, and what the docs' runbook says at more length. */
export interface RunbookLine {
  means: string;
  sweeper: string;
  person: string;
}

interface TableColumns {
  /** One line for the category table: the situation the category is about. */
  about: string;
  /** What the sweep repairs, in the table's words ('—': nothing). */
  repairs: string;
  /** When a finding of the category stays open (for a person), in the table's words. */
  staysOpen: string;
}

export interface FindingCategoryDefinition extends TableColumns {
  severity: Severity;
  /** false: alerts (Slack, the webhook) but never pages (PagerDuty hears nothing of it). Default true. */
  pages?: boolean;
  runbook: RunbookLine;
  /** The runbook entry of docs/operations.md (Markdown): what happened, and what to do in italics. */
  guide: string;
}

/**
 * Every finding category, in the contract's order (reports, metrics and docs list them so).
 * Adding a category starts here; its rule goes in src/sweep/judge/ (docs/development.md).
 */
export const FINDING_CATEGORY_DEFINITIONS = {
  claim_without_effect: {
    about: "a claim not completed with its kept charge's answer, or the charge's row missing",
    repairs: 'inserts the row, completes the claim',
    staysOpen:
      'when a person decides: several charges and no request, a stored failure, the row under another account, an unreadable charge naming the key',
    severity: 'warning',
    runbook: {
      means: 'the claim exists and Stripe has the charge, but no payment row was committed (a crash after the charge)',
      sweeper: 'recorded the payment from the charge and completed the claim, so retries replay it',
      person: 'nothing',
    },
    guide:
      "a worker died between Stripe's answer and the local commit. The sweeper recorded the payment and " +
      "completed the claim, so the customer's retry gets the original answer instead of a second charge. " +
      '*Nothing to do.*',
  },
  stale_claim: {
    about: 'an expired in-flight claim with no charge at Stripe',
    repairs: 'releases it (first attempt < 24 h)',
    staysOpen: 'only if ≥ 24 h',
    severity: 'warning',
    runbook: {
      means: 'an attempt died before Stripe saw it; the claim was left in flight',
      sweeper:
        'released it so the caller\u2019s retry can run (same downstream key, no double charge); not if older than 24 h',
      person: 'only for claims older than 24 h: decide by hand whether to retry (Stripe has forgotten the key)',
    },
    guide:
      "a worker died before Stripe saw the request. Released, the caller's retry runs and sends the same " +
      'downstream idempotency key, so even if Stripe did see it, it cannot charge twice. A claim older than ' +
      '24 h is **not** released: Stripe has forgotten the key, and a retry could charge again. *For those, ' +
      'decide by hand (`sweeper resolve`).*',
  },
  lost_effect: {
    about: 'a stored success, but no money at Stripe and no payment row',
    repairs: '—',
    staysOpen: 'yes',
    severity: 'critical',
    runbook: {
      means: 'a success was stored on the claim, but there is no payment row and no charge at Stripe',
      sweeper: 'nothing it can safely do',
      person: 'find what the caller was told; no money moved, so correct the claim or the order',
    },
    guide:
      'the claim says success but there is no payment row and no charge at Stripe. No money moved. *Find ' +
      'what the caller was told; correct the order or the claim.*',
  },
  effect_without_claim: {
    about: 'a payment row and its charge, no claim',
    repairs: 're-creates the claim',
    staysOpen: "when several charges name the key, or the key's claim is on another account",
    severity: 'warning',
    runbook: {
      means: 'a payment row and its charge exist but the claim is gone',
      sweeper: 're-created the claim as completed, so a retry replays instead of charging',
      person: 'nothing',
    },
    guide:
      'the payment and its charge exist, the claim is gone (deleted, or older local code). Re-created as ' +
      'completed, it replays to retries. *Nothing to do.* An effect older than the retention window has no ' +
      'claim by design: not a finding.',
  },
  orphan_charge: {
    about: "a charge naming a known tenant's key, no claim, no row",
    repairs: 'creates claim and row',
    staysOpen: 'when several charges name the key, or its payment row is under another account',
    severity: 'warning',
    runbook: {
      means: 'a charge made outside the library whose metadata names a key of a tenant known on the account',
      sweeper: 'created the claim and the payment row from the charge',
      person: 'check why it was made outside the library',
    },
    guide:
      'a charge made outside the library (dashboard, another service) whose metadata names a key of a ' +
      'tenant known on the account. The sweeper created the claim and the payment. *Find out why it ' +
      'bypassed the library.* Open (not repaired) when more than one charge names the key: *decide which ' +
      'one the order stands for.*',
  },
  unattributed_charge: {
    about:
      "money nobody here can attribute: no metadata, an unknown tenant, another account's claim, an unreadable charge",
    repairs: '—',
    staysOpen: 'yes',
    severity: 'warning',
    runbook: {
      means:
        'money nobody here can attribute (no metadata, a tenant unknown on the account, another account\u2019s claim, an unreadable charge)',
      sweeper: 'nothing: metadata alone never makes a claim',
      person:
        'look the charge up in the Stripe dashboard (customer, payment intent), then record it and resolve, or refund it',
    },
    guide:
      'money nobody here can attribute: no tenant/key metadata, a tenant with no claim or payment on this ' +
      'account (a connected account can write any metadata), a key whose claim is on another account, or a ' +
      "charge Stripe returned unreadable. The finding's reason says which. *Find who made it (the charge's " +
      'customer, description and payment intent in the Stripe dashboard), then record it and `sweeper ' +
      'resolve ID --note "…"`, or refund it.*',
  },
  effect_without_charge: {
    about: "a payment row for a charge Stripe (looked up by id) does not have in the row's account",
    repairs: '—',
    staysOpen: 'yes',
    severity: 'critical',
    runbook: {
      means: 'a payment row for a charge Stripe never made: money recorded that was never taken',
      sweeper: 'nothing it can safely do',
      person: 'correct the books; find the code path that wrote the row',
    },
    guide:
      "a payment row for a charge Stripe (asked by id, in the row's account) does not have: revenue recorded " +
      'that was never collected. *Correct the books; find the code path.*',
  },
  amount_mismatch: {
    about: "a payment row or a claim's request that disagrees with its charge on amount or currency",
    repairs: '—',
    staysOpen: 'yes',
    severity: 'critical',
    runbook: {
      means: 'a payment row or a claim\u2019s request disagrees with its charge on amount or currency',
      sweeper: 'nothing: which side is wrong is a business question',
      person: 'Stripe shows what was charged; fix the row or refund the difference',
    },
    guide:
      'a payment row, or the request a claim stands for, disagrees with its charge on amount or currency. ' +
      'Stripe shows what was charged; the sweeper never completes a claim from a charge of another amount ' +
      '(a forged or mistaken charge). *Fix the row, or refund and investigate the charge.*',
  },
  status_drift: {
    about: 'refund, dispute or status changed at Stripe',
    repairs: "the row takes Stripe's state",
    staysOpen: 'no',
    severity: 'warning',
    runbook: {
      means: 'refund, dispute or capture state changed at Stripe',
      sweeper: 'copied Stripe\u2019s state onto the payment row (Stripe owns it)',
      person: 'nothing',
    },
    guide:
      'refunded, disputed or captured at Stripe since. Stripe owns that state; copied onto the row. ' +
      '*Nothing to do.*',
  },
  duplicate_charge: {
    about: '≥ 2 live money charges for one key (about the extras)',
    repairs: 'with `--refund-duplicates`: refunds identical extras',
    staysOpen: 'yes, unless every extra was refunded',
    severity: 'critical',
    runbook: {
      means: 'two or more successful charges for one tenant and key: the customer paid twice',
      sweeper: 'nothing by default; with --refund-duplicates it refunds extras identical to the kept charge',
      person: 'refund the extra charge (or rerun with --refund-duplicates)',
    },
    guide:
      'the customer paid twice (or more) for one key: a charge outside the library with the same metadata, ' +
      'or a bug. The finding names the kept charge, every live charge (`details.charges`, `count`) and which ' +
      'extras may be refunded. *Refund the extras, or rerun with `--refund-duplicates`* (identical extras ' +
      'only; the rest stay open for you). The sweeper never records an extra as a payment.',
  },
  duplicate_effect: {
    about:
      '≥ 2 live payments for one order (tenant, reference), same amount and currency, under different keys, within `SWEEPER_DUPLICATE_LOOKBACK`',
    repairs: '—',
    staysOpen: 'until every extra is refunded in full (then resolved by sweeper), or a person resolves it',
    severity: 'critical',
    runbook: {
      means: 'the customer paid more than once for one order, each attempt under its own idempotency key',
      sweeper: 'nothing: never refunded automatically',
      person: 'refund the extra charges, or `sweeper resolve ID --not-duplicate` if they are meant',
    },
    guide:
      'two or more live payments for one business reference (an order, an invoice), for the same amount, ' +
      'under different idempotency keys: usually a key minted per attempt, so each retry charged again. The ' +
      'finding names the kept charge (the earliest) and every extra (`details.extras`). *Refund the extras* ' +
      '(the finding closes by itself once each is refunded in full), *or resolve it `--not-duplicate`* when ' +
      'they are two real purchases; see also `unstable_keys`.',
  },
  suspected_duplicate: {
    about:
      '≥ 2 live payments without a reference, one customer or card, same amount, different keys, within `SWEEPER_SUSPECT_WINDOW`',
    repairs: '—',
    staysOpen: 'until a person resolves it, or the charges are refunded',
    severity: 'warning',
    pages: false,
    runbook: {
      means: 'one customer or card paid the same amount twice moments apart, under two keys, with no order to tell',
      sweeper: 'nothing: a person decides',
      person: 'refund the extra, or `sweeper resolve ID --not-duplicate` for two real purchases',
    },
    guide:
      'payments without a business reference by the same customer or card fingerprint, for the same amount ' +
      'and currency, under different keys, created within `SWEEPER_SUSPECT_WINDOW` of each other. Often a ' +
      'double click; sometimes two real purchases (a customer buying two of the same item, a renewal). It ' +
      'alerts but never pages. *Refund the extra, or `sweeper resolve ID --not-duplicate`* (that set is not ' +
      'raised again). To silence it: pass a `reference` on payments, or set `SWEEPER_SUSPECT_WINDOW=0`.',
  },
  unstable_keys: {
    about: 'a tenant with `duplicate_effect` findings and no replayed retry in `SWEEPER_DUPLICATE_LOOKBACK`',
    repairs: '—',
    staysOpen: 'while both hold',
    severity: 'warning',
    runbook: {
      means: 'this tenant pays twice for one order and its retries never reuse a key: keys are minted per attempt',
      sweeper: 'nothing',
      person: 'make the caller derive its idempotency key from the order (not per attempt), then refund the extras',
    },
    guide:
      'a tenant whose orders were paid twice (`duplicate_effect`) while its claims show no replayed retry in ' +
      'the same period (the claim library counts replays per tenant and day: `sweeper status`): its caller ' +
      'almost certainly mints a new key per attempt (a key from a timestamp, a random id, a message id that ' +
      'changes on redelivery), so retries charge again instead of replaying. *Derive the key from the order ' +
      'and the attempt it stands for, so a retry sends the same one.*',
  },
  refund_without_effect: {
    about: 'a refund at Stripe that names a refund claim here, and no refund row',
    repairs: 'inserts the refund row, completes the claim',
    staysOpen: 'when the claim stores a refusal, or an answer naming another refund',
    severity: 'warning',
    runbook: {
      means: 'Stripe made a refund the application asked for, but its refund row was never committed (a crash)',
      sweeper: 'recorded the refund from Stripe and completed its claim, so a retry replays it',
      person: 'nothing',
    },
    guide:
      "a worker died between Stripe's refund and the local commit. The sweeper inserted the `payment_refunds` " +
      'row from Stripe and completed the refund claim, so a retry replays the refund instead of asking again. ' +
      '*Nothing to do.* Open when the claim stores a refusal or another refund: *decide which holds.*',
  },
  refund_effect_without_refund: {
    about: 'a refund row whose refund Stripe (asked by id, in its account) does not have',
    repairs: '—',
    staysOpen: 'yes',
    severity: 'critical',
    runbook: {
      means: 'a refund row for a refund Stripe never made: a customer was told of money that never moved',
      sweeper: 'nothing it can safely do',
      person: 'refund the customer for real (or correct the row), and find the code path that wrote it',
    },
    guide:
      "a `payment_refunds` row names a refund Stripe (asked by id, in the row's account) does not have: the " +
      'customer was told of a refund that never happened. *Refund for real or correct the row; find the code ' +
      'path.* It closes by itself if Stripe later has the refund.',
  },
  refund_status_drift: {
    about: 'a refund whose state changed at Stripe after the application recorded it',
    repairs: "the row takes Stripe's state",
    staysOpen: 'when the refund failed or was canceled: the customer was not refunded',
    severity: 'critical',
    runbook: {
      means: 'a refund changed state at Stripe after it was recorded; failed or canceled: the money did not go back',
      sweeper: 'copied Stripe\u2019s state onto the refund row',
      person: 'for a failed or canceled refund: refund the customer another way, then resolve the finding',
    },
    guide:
      "a refund's state changed at Stripe after the application recorded it. The row takes Stripe's state. " +
      'From pending to succeeded it is closed at once. A refund that **failed or was canceled** after it was ' +
      'recorded stays open: the customer was told of a refund they did not get (the failure reason is in ' +
      'the finding). *Refund them another way (or tell them), then `sweeper resolve ID`.*',
  },
  payout_mismatch: {
    about:
      "an automatic payout whose balance transactions' net does not equal its amount, or a paid payout that later failed or was canceled",
    repairs: '—',
    staysOpen: 'yes',
    severity: 'critical',
    runbook: {
      means: 'the money that reached (or left) the bank is not what the payout itemises, or a paid payout came back',
      sweeper: 'nothing: the payout and its transactions are in the mirror, the residual in `sweeper report payouts`',
      person: 'compare the payout with the bank statement and Stripe; book the residual or the returned payout',
    },
    guide:
      "the net of an automatic payout's balance transactions differs from its amount (the residual is in the " +
      'finding and in `sweeper report payouts`), a transaction is in another currency than the payout, or a ' +
      'payout the sweep had seen paid (or had reconciled) later failed or was canceled: the money is back in ' +
      "the Stripe balance, not at the bank. *Check the bank statement against Stripe's payout; book the " +
      'residual, or the returned payout (the next payout carries it), then `sweeper resolve ID`.*',
  },
  unrecorded_balance_transaction: {
    about: 'a charge, refund or dispute transaction in a reconciled payout with no local payment or refund row',
    repairs: '—',
    staysOpen: 'yes',
    severity: 'warning',
    runbook: {
      means: 'money reached the bank through a payout, but no payment or refund row here records what moved it',
      sweeper: 'nothing: it names the payout, the transaction and the charge, refund or dispute',
      person: 'record the payment or refund (or explain it: a charge made outside the application), then resolve',
    },
    guide:
      'a charge, refund or dispute balance transaction in a reconciled automatic payout has no local row: no ' +
      'payment row for the charge (or for the charge a refund or dispute is of), and no refund row for the ' +
      'refund. The money is in the bank but not in the books. *Find what made it (the Stripe dashboard, ' +
      'another service), record it, then `sweeper resolve ID`.*',
  },
  unpaid_effect: {
    about:
      'a succeeded payment older than `SWEEPER_PAYOUT_GRACE`, on an account with automatic payouts, whose charge is in no reconciled payout',
    repairs: '—',
    staysOpen: 'until its charge is in a reconciled payout',
    severity: 'warning',
    pages: false,
    runbook: {
      means: 'a payment recorded long enough ago to have been paid out, yet no reconciled payout holds its charge',
      sweeper: 'nothing; it closes the finding once a payout holds the charge',
      person: "look the charge up in Stripe: its balance transaction's availability, a held or reversed payout",
    },
    guide:
      'a succeeded payment row older than `SWEEPER_PAYOUT_GRACE` on an account whose payouts are automatic, ' +
      'and no payout the sweep reconciled holds its charge: money recorded as earned that has not reached the ' +
      "bank. Often a payout not reconciled yet, or a charge whose funds Stripe holds. *Look at the charge's " +
      'balance transaction in the Stripe dashboard.* It closes by itself once a reconciled payout holds it.',
  },
} satisfies Record<string, FindingCategoryDefinition>;

export type FindingCategory = keyof typeof FINDING_CATEGORY_DEFINITIONS;

/** `matched` is counted, never stored: not a finding, never alerted on or reported as open. */
export const MATCHED_DEFINITION: TableColumns = {
  about: 'a charge whose claim and payment row agree',
  repairs: '—',
  staysOpen: 'no (counted, not stored)',
};

export type Category = 'matched' | FindingCategory;

/** Every category a run counts: `matched`, then the finding categories in their order. */
export const CATEGORIES: readonly Category[] = [
  'matched',
  ...(Object.keys(FINDING_CATEGORY_DEFINITIONS) as FindingCategory[]),
];

/** The category table's columns of any category, `matched` included. */
export function categoryColumns(category: Category): TableColumns {
  return category === 'matched' ? MATCHED_DEFINITION : FINDING_CATEGORY_DEFINITIONS[category];
}

/**
 * Where a charge Stripe returned that the sweep cannot read or store (a field missing,
 * a NUL in its metadata, a negative amount, `created` in milliseconds…) is recorded: an
 * open finding naming the charge, its reason the problem (slice.ts `unjudgeable`).
 */
export const MALFORMED_CHARGE_CATEGORY = 'unattributed_charge' satisfies Category;

/** Categories whose open findings page someone: money may be wrong. */
export const CRITICAL_CATEGORIES: readonly Category[] = (
  Object.keys(FINDING_CATEGORY_DEFINITIONS) as FindingCategory[]
).filter((c) => FINDING_CATEGORY_DEFINITIONS[c].severity === 'critical');

export function emptyCounts(): Record<Category, number> {
  return Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
}

/** Whether an open finding of the category pages (PagerDuty); every other sink hears of all. */
export function pages(category: FindingCategory): boolean {
  const definition: FindingCategoryDefinition = FINDING_CATEGORY_DEFINITIONS[category];
  return definition.pages !== false;
}
