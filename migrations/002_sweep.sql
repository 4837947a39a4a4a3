-- The sweep's own state: the charge mirror, runs, watermarks, findings and the
-- append-only repair audit.

-- Stripe's charges as last read, day-partitioned by Stripe's `created`.
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
  PRIMARY KEY (charge_id, created)
) PARTITION BY RANGE (created);

-- account last: the attribution probe is answered by this one index, never ANDed with another.
CREATE INDEX stripe_charges_attribution ON stripe_charges (tenant_id, idempotency_key, account);
CREATE INDEX stripe_charges_account_created ON stripe_charges (account, created);

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
  CHECK (window_from < window_to)
);
CREATE INDEX recon_runs_account_started ON recon_runs (account, started_at DESC);

-- The scheduled sweep's progress per account and shard. Backfills never touch it.
CREATE TABLE recon_watermarks (
  account     text        NOT NULL,
  shard       text        NOT NULL DEFAULT '',
  watermark   timestamptz NOT NULL,
  run_id      text        NOT NULL REFERENCES recon_runs (id),
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (account, shard)
);

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
  first_seen_run  text        NOT NULL REFERENCES recon_runs (id),
  last_seen_run   text        NOT NULL REFERENCES recon_runs (id),
  first_seen_at   timestamptz NOT NULL,
  last_seen_at    timestamptz NOT NULL,
  closed_at       timestamptz,
  closed_by       text,
  note            text,
  UNIQUE (category, account, subject)
);
CREATE INDEX recon_findings_open ON recon_findings (account, category) WHERE state = 'open';

CREATE TABLE recon_repairs (
  id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  finding_id  bigint      NOT NULL REFERENCES recon_findings (id),
  run_id      text        REFERENCES recon_runs (id),
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

-- Re-creates a completed claim from an effect or a charge (repairs of
-- effect_without_claim and orphan_charge). Returns false when the key already has
-- a claim: a live writer got there first, and it wins.
CREATE FUNCTION sweeper_recreate_claim(
  p_tenant_id text, p_key text, p_downstream_key text, p_account_id text,
  p_created_at timestamptz, p_response_status int, p_response_body jsonb, p_now timestamptz
) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(sweeper_claim_lock_key(p_tenant_id, p_key));
  IF EXISTS (SELECT 1 FROM idempotency_keys WHERE tenant_id = p_tenant_id AND key = p_key) THEN
    RETURN false;
  END IF;
  INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, attempt,
                                downstream_key, account_id, response_status, response_body,
                                created_at, completed_at, updated_at)
  VALUES (p_tenant_id, p_key, sweeper_recreated_fingerprint(), 'completed', NULL, 1,
          p_downstream_key, p_account_id, p_response_status, p_response_body,
          p_created_at, p_now, p_now);
  RETURN true;
END $$;
