-- The charge mirror: Stripe's charges as the sweep last read them, and an index of them
-- by the key their metadata names.

-- Day-partitioned by Stripe's `created` (partitions from sweeper_ensure_day_partitions).
CREATE TABLE stripe_charges (
  account           text        NOT NULL,   -- 'platform' or acct_…
  charge_id         text        NOT NULL,
  created           timestamptz NOT NULL,
  amount            bigint      NOT NULL,
  amount_captured   bigint      NOT NULL,
  amount_refunded   bigint      NOT NULL,
  currency          char(3)     NOT NULL,
  status            text        NOT NULL,
  captured          boolean     NOT NULL,
  refunded          boolean     NOT NULL,
  disputed          boolean     NOT NULL,
  payment_intent_id text,
  tenant_id         text,
  idempotency_key   text,
  livemode          boolean     NOT NULL,
  -- When this version was read from Stripe: an older read never overwrites a newer one.
  fetched_at        timestamptz NOT NULL,
  -- What tells two charges of one key apart, for --refund-duplicates: only an extra
  -- identical to the kept charge (amount, currency, customer, payment method) is refunded.
  customer          text,
  payment_method    text,
  -- The business reference its metadata names (SWEEPER_METADATA_REFERENCE_KEY), and its
  -- card's fingerprint: what tells two payments for one order, or by one card, apart.
  reference         text,
  card_fingerprint  text,
  PRIMARY KEY (charge_id, created)
) PARTITION BY RANGE (created);

CREATE INDEX stripe_charges_account_created ON stripe_charges (account, created);

-- The mirror's charges by the key their metadata names, in one unpartitioned index. The
-- sweep looks up every charge of each key it judges; in the partitioned mirror that would
-- be one probe per key in every day partition (a partitioned table has no global index).
-- Here it is one probe per key; the charge itself is then read by its primary key, in its
-- own day's partition only.
--
-- It may hold more than the mirror (a charge whose metadata changed keeps its old entry,
-- and TRUNCATE of the mirror leaves it): readers join back to stripe_charges and check
-- the metadata there. It never holds less: every write to the mirror, by any path, adds
-- its rows here in the same statement (statement triggers, one INSERT per statement).
CREATE TABLE stripe_charge_keys (
  tenant_id       text        NOT NULL,
  idempotency_key text        NOT NULL,
  account         text        NOT NULL,
  charge_id       text        NOT NULL,
  created         timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, idempotency_key, account, charge_id, created)
);
-- `expire` drops the entries of the days it drops from the mirror, reading the whole
-- table to find them (once a day at most), rather than every charge landed paying for an
-- index on `created` (src/db/expire.ts).

-- SECURITY DEFINER: the least-privilege runtime role (jobs/sql/least-privilege-role.sql)
-- writes the mirror, and only reads this table; the entries are written as the owner.
-- `landed` holds each mirror row once (its primary key is in the entry's): no DISTINCT.
-- Rows new to the mirror are filed with a plain INSERT: their entries are new too, unless
-- the mirror lost a row and kept its entry (TRUNCATE), and ON CONFLICT's speculative
-- insertion costs more per row than the rare retry. On a conflict the subtransaction
-- rolls back and the entries are filed again with ON CONFLICT DO NOTHING, as rows updated
-- (read again) always are.
CREATE FUNCTION sweeper_note_charge_keys() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    BEGIN
      INSERT INTO stripe_charge_keys (tenant_id, idempotency_key, account, charge_id, created)
      SELECT tenant_id, idempotency_key, account, charge_id, created FROM landed
       WHERE tenant_id IS NOT NULL AND idempotency_key IS NOT NULL;
      RETURN NULL;
    EXCEPTION WHEN unique_violation THEN
      NULL; -- an entry was there already: filed below, skipping those
    END;
  END IF;
  INSERT INTO stripe_charge_keys (tenant_id, idempotency_key, account, charge_id, created)
  SELECT tenant_id, idempotency_key, account, charge_id, created FROM landed
   WHERE tenant_id IS NOT NULL AND idempotency_key IS NOT NULL
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER stripe_charges_keys_inserted
  AFTER INSERT ON stripe_charges REFERENCING NEW TABLE AS landed
  FOR EACH STATEMENT EXECUTE FUNCTION sweeper_note_charge_keys();
CREATE TRIGGER stripe_charges_keys_updated
  AFTER UPDATE ON stripe_charges REFERENCING NEW TABLE AS landed
  FOR EACH STATEMENT EXECUTE FUNCTION sweeper_note_charge_keys();

-- The mirror's charges by the business reference their metadata names, in one
-- unpartitioned index, kept like stripe_charge_keys: the sweep judges every payment for
-- one reference over SWEEPER_DUPLICATE_LOOKBACK, wherever they fall in slices or runs, with
-- one probe per reference. tenant_id '' stands for a charge that names no tenant.
CREATE TABLE stripe_charge_references (
  account   text        NOT NULL,
  tenant_id text        NOT NULL,
  reference text        NOT NULL,
  created   timestamptz NOT NULL,
  charge_id text        NOT NULL,
  PRIMARY KEY (account, tenant_id, reference, created, charge_id)
);
-- No index on `created`: `expire` finds the old entries as stripe_charge_keys' above.

-- Filed as stripe_charge_keys' entries are (above).
CREATE FUNCTION sweeper_note_charge_references() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    BEGIN
      INSERT INTO stripe_charge_references (account, tenant_id, reference, created, charge_id)
      SELECT account, coalesce(tenant_id, ''), reference, created, charge_id FROM landed
       WHERE reference IS NOT NULL;
      RETURN NULL;
    EXCEPTION WHEN unique_violation THEN
      NULL; -- an entry was there already: filed below, skipping those
    END;
  END IF;
  INSERT INTO stripe_charge_references (account, tenant_id, reference, created, charge_id)
  SELECT account, coalesce(tenant_id, ''), reference, created, charge_id FROM landed
   WHERE reference IS NOT NULL
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER stripe_charges_references_inserted
  AFTER INSERT ON stripe_charges REFERENCING NEW TABLE AS landed
  FOR EACH STATEMENT EXECUTE FUNCTION sweeper_note_charge_references();
CREATE TRIGGER stripe_charges_references_updated
  AFTER UPDATE ON stripe_charges REFERENCING NEW TABLE AS landed
  FOR EACH STATEMENT EXECUTE FUNCTION sweeper_note_charge_references();
REVOKE ALL ON FUNCTION sweeper_note_charge_references() FROM PUBLIC;

-- Stripe's refunds as the sweep last read them (docs/judgement.md "Refunds the application
-- makes"). Few beside charges, so one table: the sweep reads a window's rows by
-- (account, created), a refund by id, and a refund claim's by the key its metadata names.
CREATE TABLE stripe_refunds (
  account         text        NOT NULL,   -- 'platform' or acct_…
  refund_id       text        PRIMARY KEY,
  charge_id       text        NOT NULL,
  created         timestamptz NOT NULL,
  amount          bigint      NOT NULL,
  currency        char(3)     NOT NULL,
  status          text        NOT NULL,
  failure_reason  text,
  tenant_id       text,
  idempotency_key text,
  -- When this version was read from Stripe: an older read never overwrites a newer one.
  fetched_at      timestamptz NOT NULL
);
CREATE INDEX stripe_refunds_account_created ON stripe_refunds (account, created);
CREATE INDEX stripe_refunds_key ON stripe_refunds (account, tenant_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

-- Disputes as the account's events last told of them (docs/judgement.md "Disputes"): a
-- dispute's status is not on its charge, so the dispute events' own object is the evidence.
-- A status from an older event never replaces one from a newer event.
CREATE TABLE stripe_disputes (
  account     text        NOT NULL,   -- 'platform' or acct_…
  dispute_id  text        PRIMARY KEY,
  charge_id   text        NOT NULL,
  status      text        NOT NULL,
  -- The event it was read from: its time; two events of one second are ordered by how far
  -- along the dispute's life their status is (stage), then by id.
  as_of       timestamptz NOT NULL,
  stage       smallint    NOT NULL,
  event_id    text        NOT NULL
);
CREATE INDEX stripe_disputes_charge ON stripe_disputes (charge_id);

-- Stripe's payouts as the sweep last read them (docs/judgement.md "Payouts and fees"):
-- an account's payouts of the last SWEEPER_PAYOUT_GRACE, and any still awaited, are listed
-- each run; a payout's status and reconciliation_status change after it is made.
CREATE TABLE stripe_payouts (
  account               text        NOT NULL,   -- 'platform' or acct_…
  payout_id             text        PRIMARY KEY,
  created               timestamptz NOT NULL,
  arrival_date          timestamptz NOT NULL,
  amount                bigint      NOT NULL,
  currency              char(3)     NOT NULL,
  automatic             boolean     NOT NULL,
  status                text        NOT NULL,
  reconciliation_status text        NOT NULL,
  failure_code          text,
  -- When this version was read from Stripe: an older read never overwrites a newer one.
  fetched_at            timestamptz NOT NULL
);
CREATE INDEX stripe_payouts_account_created ON stripe_payouts (account, created);

-- The balance transactions of the automatic payouts the sweep reconciled, each under the
-- payout that paid it out (`GET /v1/balance_transactions?payout=`), in the payout's
-- currency: what ties a payment row to the money at the bank.
CREATE TABLE stripe_balance_transactions (
  account            text        NOT NULL,
  txn_id             text        PRIMARY KEY,
  payout_id          text        NOT NULL,
  type               text        NOT NULL,
  reporting_category text        NOT NULL,
  amount             bigint      NOT NULL,
  fee                bigint      NOT NULL,
  net                bigint      NOT NULL,
  currency           char(3)     NOT NULL,
  exchange_rate      numeric,
  -- What moved the money (ch_, re_, dp_, po_, py_ …), and the charge a refund or a dispute is of.
  source_id          text,
  source_charge_id   text,
  created            timestamptz NOT NULL,
  fetched_at         timestamptz NOT NULL
);
CREATE INDEX stripe_balance_transactions_payout ON stripe_balance_transactions (payout_id);
-- unpaid_effect asks, for each old payment, whether its charge is in a payout.
CREATE INDEX stripe_balance_transactions_source ON stripe_balance_transactions (source_id)
  WHERE source_id IS NOT NULL;
