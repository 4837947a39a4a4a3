-- The sweep's own state: runs, watermarks, findings, the append-only repair audit, the
-- refund outbox, what alerts last said, and how far late changes were read.
--
-- No foreign keys between these tables: runs are written before anything that names them,
-- by the same code path; findings are never deleted; the audit is append-only. A foreign
-- key would add a lookup per row to every slice's writes and guard nothing the sweeper
-- can do.

CREATE TABLE recon_runs (
  id             text        PRIMARY KEY,
  mode           text        NOT NULL CHECK (mode IN ('run', 'backfill')),
  account        text        NOT NULL,
  shard          text        NOT NULL DEFAULT '',
  window_from    timestamptz NOT NULL,
  window_to      timestamptz NOT NULL,
  status         text        NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
  -- End of the last committed slice: a resumed run starts here.
  checkpoint     timestamptz NOT NULL,
  charges_scanned bigint     NOT NULL DEFAULT 0,
  findings       jsonb       NOT NULL DEFAULT '{}',
  repaired       jsonb       NOT NULL DEFAULT '{}',
  unreconciled   int,
  error          text,
  started_at     timestamptz NOT NULL,
  finished_at    timestamptz,
  -- The run's late-change work, for `status` and --json: events read, charges re-judged,
  -- whether the events were too old and the charges were re-listed instead.
  changes        jsonb,
  CHECK (window_from < window_to)
);
CREATE INDEX recon_runs_account_started ON recon_runs (account, started_at DESC);
-- What an account's runs have judged after a point in time (src/sweep/coverage.ts): the
-- late-changes step and the deep re-read judge again only inside it.
CREATE INDEX recon_runs_account_checkpoint ON recon_runs (account, checkpoint);

-- The scheduled sweep's progress per account and shard. Backfills never touch it.
CREATE TABLE recon_watermarks (
  account     text        NOT NULL,
  shard       text        NOT NULL DEFAULT '',
  watermark   timestamptz NOT NULL,
  run_id      text        NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (account, shard)
);

-- One row per (category, account, subject), updated by later runs, never duplicated.
CREATE TABLE recon_findings (
  id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  category        text        NOT NULL,
  account         text        NOT NULL,
  -- What the finding is about: the charge id, or tenant_id U+241F key for claim-level categories.
  subject         text        NOT NULL,
  charge_id       text,
  tenant_id       text,
  idempotency_key text,
  state           text        NOT NULL CHECK (state IN ('open', 'repaired', 'resolved', 'ignored')),
  details         jsonb       NOT NULL DEFAULT '{}',
  first_seen_run  text        NOT NULL,
  last_seen_run   text        NOT NULL,
  first_seen_at   timestamptz NOT NULL,
  last_seen_at    timestamptz NOT NULL,
  closed_at       timestamptz,
  closed_by       text,
  note            text,
  -- duplicate_effect: the business reference its charges name.
  reference       text,
  UNIQUE (category, account, subject)
);
CREATE INDEX recon_findings_open ON recon_findings (account, category) WHERE state = 'open';
-- The open findings of given subjects, and of given charges, without reading every open
-- finding of the account: their number grows with the history (and with every finding
-- nobody closes), what is asked of them does not. By subject: a batch closes the open
-- findings of the subjects it judged and no longer finds. By charge: the completeness
-- measure after every run asks, of each charge of the last days, whether an open
-- finding holds it.
-- The subject index is on one expression (account, chr(31), subject) that no other index has, so
-- a probe by it uses it even when the table has no statistics yet: on (account, subject),
-- a planner without them could take the (account, category) index and read every open
-- finding of the account per probe.
CREATE INDEX recon_findings_open_subject ON recon_findings ((account || chr(31) || subject)) WHERE state = 'open';
CREATE INDEX recon_findings_open_charge ON recon_findings (account, charge_id) WHERE state = 'open';

-- The charges a duplicate finding (duplicate_effect, suspected_duplicate) names: a set
-- whose finding a person closed is never raised again, nor any part of it; an open one
-- that no longer holds is closed when one of its charges is judged again.
CREATE TABLE recon_finding_charges (
  finding_id bigint NOT NULL REFERENCES recon_findings (id),
  account    text   NOT NULL,
  charge_id  text   NOT NULL,
  PRIMARY KEY (account, charge_id, finding_id)
);
CREATE INDEX recon_finding_charges_finding ON recon_finding_charges (finding_id);
-- The open duplicate_effect findings of the references a batch judges: closed when they no longer hold.
CREATE INDEX recon_findings_open_reference ON recon_findings (account, reference) WHERE state = 'open' AND reference IS NOT NULL;

CREATE TABLE recon_repairs (
  id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  finding_id  bigint      NOT NULL,
  run_id      text,
  action      text        NOT NULL,
  before      jsonb,
  after       jsonb,
  actor       text        NOT NULL,
  at          timestamptz NOT NULL
);
CREATE INDEX recon_repairs_finding ON recon_repairs (finding_id);

-- The audit is append-only.
CREATE FUNCTION sweeper_forbid_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = '55000';
END $$;
CREATE TRIGGER recon_repairs_append_only BEFORE UPDATE OR DELETE ON recon_repairs
  FOR EACH ROW EXECUTE FUNCTION sweeper_forbid_change();

-- The refund outbox. An intent is committed before its POST, and completed after; every
-- run first settles open intents against Stripe's own list of the charge's refunds, so a
-- crash anywhere leaves an intent that the next run finishes, and a refund already made
-- is never POSTed again.
CREATE TABLE recon_refunds (
  charge_id        text        PRIMARY KEY,   -- the extra charge refunded
  account          text        NOT NULL,
  kept_charge_id   text        NOT NULL,
  finding_id       bigint      NOT NULL,
  amount           bigint      NOT NULL CHECK (amount > 0),
  currency         text        NOT NULL,
  idempotency_key  text        NOT NULL,      -- sent to Stripe with the POST
  state            text        NOT NULL CHECK (state IN ('intent', 'refunded', 'cancelled')),
  stripe_refund_id text,
  reason           text,                      -- why cancelled, or how it was found refunded
  run_id           text        NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  CHECK (charge_id <> kept_charge_id),
  CHECK (state <> 'refunded' OR stripe_refund_id IS NOT NULL)
);
CREATE INDEX recon_refunds_open ON recon_refunds (account) WHERE state = 'intent';
CREATE INDEX recon_refunds_finding ON recon_refunds (finding_id);

-- What each alert sink was last told about each (account, category), so alerts fire on
-- change and repeat at most every SWEEPER_ALERT_REPEAT instead of on every run. A row is
-- written only after a delivery succeeded: a failed delivery leaves the previous row, and
-- the next run sees the same change and tries again.
CREATE TABLE alert_state (
  sink         text        NOT NULL,   -- 'slack' | 'pagerduty' | 'webhook'
  account      text        NOT NULL,
  category     text        NOT NULL,
  -- Open findings of the category as last delivered (or, for a quiet decrease, last seen).
  last_count   int         NOT NULL CHECK (last_count >= 0),
  last_sent_at timestamptz NOT NULL,
  PRIMARY KEY (sink, account, category)
);

-- Late changes: per account, how far Stripe's Events API has been read.
CREATE TABLE recon_event_cursors (
  account     text        PRIMARY KEY,
  -- Every event created at or before this instant was read (up to now − SWEEPER_EVENTS_LAG
  -- when it was read); the next read starts here, minus the overlap.
  cursor      timestamptz NOT NULL,
  run_id      text        NOT NULL,
  updated_at  timestamptz NOT NULL
);

-- How far a scheduled run has listed the account's refunds (docs/judgement.md "Refunds the
-- application makes"): its own cursor, so a run whose refunds step failed (a key without
-- Refunds read) lists them again next time, whatever its charge watermark did.
CREATE TABLE recon_refund_cursors (
  account     text        PRIMARY KEY,
  cursor      timestamptz NOT NULL,
  run_id      text        NOT NULL,
  updated_at  timestamptz NOT NULL
);

-- When the periodic deep re-read last compared the mirror with Stripe.
CREATE TABLE recon_deep_reads (
  account       text        PRIMARY KEY,
  last_at       timestamptz NOT NULL,
  -- What the last one covered and found, for `status`.
  window_from   timestamptz NOT NULL,
  window_to     timestamptz NOT NULL,
  hours         int         NOT NULL,
  differing     int         NOT NULL,
  run_id        text        NOT NULL
);

-- Saved plans (docs/plans.md): what `sweeper run|backfill --plan` would do, step by step,
-- each step with the evidence it read, applied later by `sweeper apply` only where that
-- evidence is unchanged. `body` is the plan as its file holds it and never changes once
-- written; `digest` is the SHA-256 of its canonical JSON: a plan file is accepted only
-- when its own digest matches this row's (a file altered, or made by another database,
-- is refused as a whole). What changes is beside it: the approval, and each step's state.
CREATE TABLE recon_plans (
  id          text        PRIMARY KEY,
  author      text        NOT NULL,
  created_at  timestamptz NOT NULL,
  mode        text        NOT NULL CHECK (mode IN ('run', 'backfill')),
  accounts    text[]      NOT NULL,
  digest      text        NOT NULL,
  body        jsonb       NOT NULL,
  steps       int         NOT NULL CHECK (steps >= 0),
  -- Steps that move money (refunds): applied only once a second person approved the plan.
  money_steps int         NOT NULL CHECK (money_steps >= 0),
  -- Who approved the plan's money steps (never its author: src/plans/approve.ts), and when.
  approved_by text,
  approved_at timestamptz,
  CHECK ((approved_by IS NULL) = (approved_at IS NULL))
);
CREATE INDEX recon_plans_created ON recon_plans (created_at DESC, id DESC);

-- Where each step of a plan stands: `planned` until an apply decides it, then `applied`,
-- or `refused` (its evidence moved, or a writer moved its row as it was applied; `reason`
-- says which). A refused step is never tried again: the next plan judges it afresh.
CREATE TABLE recon_plan_steps (
  plan_id     text        NOT NULL,
  step        int         NOT NULL CHECK (step >= 1),
  account     text        NOT NULL,
  category    text        NOT NULL,
  subject     text        NOT NULL,
  kind        text        NOT NULL,
  moves_money boolean     NOT NULL,
  state       text        NOT NULL CHECK (state IN ('planned', 'applied', 'refused')),
  reason      text,
  -- The finding the apply recorded the step's repair under (recon_findings.id).
  finding_id  bigint,
  decided_at  timestamptz,
  decided_by  text,
  PRIMARY KEY (plan_id, step),
  CHECK ((state = 'planned') = (decided_at IS NULL))
);

-- Every plan made, approval given and apply run, with its actor: append-only, like
-- recon_repairs (each step an apply repairs also has its recon_repairs row).
CREATE TABLE recon_plan_events (
  id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  plan_id text        NOT NULL,
  action  text        NOT NULL CHECK (action IN ('planned', 'approved', 'applied')),
  actor   text        NOT NULL,
  at      timestamptz NOT NULL,
  details jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX recon_plan_events_plan ON recon_plan_events (plan_id);
CREATE TRIGGER recon_plan_events_append_only BEFORE UPDATE OR DELETE ON recon_plan_events
  FOR EACH ROW EXECUTE FUNCTION sweeper_forbid_change();

-- The payouts the sweep reconciled (docs/judgement.md "Payouts and fees"): one row per
-- payout, written once with its sums in the transaction that judged it; a manual payout,
-- which Stripe cannot itemise, is recorded as not itemised (sums NULL). `status` is the
-- payout's status when last read: a paid payout that fails later is told from one seen
-- failed from the start. `sweeper report payouts` reads this table.
CREATE TABLE recon_payouts (
  payout_id    text        PRIMARY KEY,
  account      text        NOT NULL,
  itemised     boolean     NOT NULL,
  created      timestamptz NOT NULL,
  arrival_date timestamptz NOT NULL,
  currency     char(3)     NOT NULL,
  amount       bigint      NOT NULL,
  status       text        NOT NULL,
  transactions int,
  charges      bigint,
  refunds      bigint,
  disputes     bigint,
  fees         bigint,
  other        bigint,
  net          bigint,
  residual     bigint,
  run_id       text        NOT NULL,
  reconciled_at timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  CHECK (NOT itemised OR (net IS NOT NULL AND residual IS NOT NULL AND residual = amount - net))
);
CREATE INDEX recon_payouts_account_arrival ON recon_payouts (account, arrival_date);

-- Per account, since when payouts are reconciled: a payment created earlier is never an
-- unpaid_effect (its payout may be older than the first listing). Payments created before
-- unpaid_judged_to were judged once old enough; later runs judge only the newer ones, and
-- the open unpaid_effect findings again.
CREATE TABLE recon_payout_accounts (
  account    text        PRIMARY KEY,
  since      timestamptz NOT NULL,
  unpaid_judged_to timestamptz NOT NULL,
  -- When a scheduled run last listed the account's payouts: the next lists them once
  -- SWEEPER_PAYOUT_EVERY has passed (runs in between send no payout request).
  listed_at  timestamptz NOT NULL,
  run_id     text        NOT NULL,
  updated_at timestamptz NOT NULL
);

-- A platform's connected accounts, discovered each run through GET /v1/accounts
-- (SWEEPER_ACCOUNTS=connected): which are swept, since when, and which left. An account
-- Stripe no longer lists, or that answers 403 (access revoked), is inactive until Stripe
-- lists it again; its watermark and cursor stay, so it resumes where it stopped.
CREATE TABLE recon_accounts (
  account         text        PRIMARY KEY CHECK (account ~ '^acct_[A-Za-z0-9]+$'),
  first_seen_at   timestamptz NOT NULL,
  -- The last run that saw it in Stripe's listing.
  last_seen_at    timestamptz NOT NULL,
  active          boolean     NOT NULL,
  inactive_since  timestamptz,
  inactive_reason text        CHECK (inactive_reason IN ('unlisted', 'revoked')),
  updated_at      timestamptz NOT NULL,
  CHECK (active = (inactive_since IS NULL) AND active = (inactive_reason IS NULL))
);
-- `sweeper status` lists the most recently inactive ones.
CREATE INDEX recon_accounts_inactive ON recon_accounts (inactive_since DESC) WHERE NOT active;
