-- The role the sweep and the claim library run as: reads and writes rows, creates day
-- partitions only through the SECURITY DEFINER function sweeper_ensure_day_partitions,
-- and holds no DDL rights. `sweeper migrate` and `sweeper expire` run as the schema
-- owner instead. Run as the owner after `sweeper migrate`, then give the role a
-- password (kept out of this file and of shell history by psql's prompt):
--   psql "$DATABASE_URL_OWNER" -f jobs/sql/least-privilege-role.sql
--   psql "$DATABASE_URL_OWNER" -c '\password sweeper_runtime'
-- On PostgreSQL 14 and older every role may create tables in schema public unless
-- CREATE was revoked from PUBLIC (15 does that by default): check before you rely
-- on "no DDL".
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sweeper_runtime') THEN
    CREATE ROLE sweeper_runtime LOGIN;
  END IF;
END $$;

REVOKE CREATE ON SCHEMA public FROM sweeper_runtime;
GRANT USAGE ON SCHEMA public TO sweeper_runtime;

GRANT SELECT, INSERT, UPDATE ON idempotency_keys, payments, payment_refunds, stripe_charges, stripe_refunds,
      stripe_disputes,
      stripe_payouts, stripe_balance_transactions, recon_payouts, recon_payout_accounts,
      recon_runs, recon_watermarks, recon_findings, recon_refunds, recon_event_cursors, recon_refund_cursors,
      recon_deep_reads, recon_accounts, alert_state TO sweeper_runtime;
-- The audit is append-only: insert and read, never change.
GRANT SELECT, INSERT ON recon_repairs TO sweeper_runtime;
-- Saved plans (docs/plans.md): made, approved and applied; their audit appended only.
GRANT SELECT, INSERT, UPDATE ON recon_plans, recon_plan_steps TO sweeper_runtime;
GRANT SELECT, INSERT ON recon_plan_events TO sweeper_runtime;
-- Written by the mirror's own trigger (as the owner); the sweep only reads it.
GRANT SELECT ON stripe_charge_keys, stripe_charge_references TO sweeper_runtime;
-- The claim library counts its outcomes and its quota; the sweep reads them.
GRANT SELECT, INSERT, UPDATE ON claim_outcomes, claim_quota TO sweeper_runtime;
-- The charges of duplicate findings: written with the findings, never changed.
GRANT SELECT, INSERT, DELETE ON recon_finding_charges TO sweeper_runtime;
-- The claims' directory: the take and the sweep's re-created claims file their keys
-- there first (an entry whose claim is gone is forgotten by a SECURITY DEFINER function,
-- never deleted by the role).
GRANT SELECT, INSERT ON idempotency_key_directory TO sweeper_runtime;
GRANT SELECT ON sweeper_migrations TO sweeper_runtime;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO sweeper_runtime;
GRANT EXECUTE ON FUNCTION sweeper_take_claim(text, text, text, text, timestamptz, interval, text, bigint, text, text, text, text),
                          sweeper_ensure_day_partitions(regclass, date, date),
                          sweeper_recreated_fingerprint() TO sweeper_runtime;

-- Session limits for every connection of the role, also those that do not set their
-- own (src/db/pool.ts sets the same per session, from SWEEPER_DB_*): a runner waiting
-- on a lock held by a frozen runner gives up after 30 s, and a session left idle inside
-- a transaction (a frozen or killed runner) is ended by the server after 5 minutes, so
-- its row locks are freed. Payment code using this role gets them too.
ALTER ROLE sweeper_runtime SET lock_timeout = '30s';
ALTER ROLE sweeper_runtime SET statement_timeout = '5min';
ALTER ROLE sweeper_runtime SET idle_in_transaction_session_timeout = '5min';
