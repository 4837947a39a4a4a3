-- The role the review page (`sweeper serve`, docs/review.md) connects as: it reads the
-- findings and their evidence, the runs and the mirror, and closes findings (state,
-- closed_at, closed_by, note, and the not-a-duplicate verdict in details) with an audit
-- row; reads saved plans and approves them (docs/plans.md); nothing else. It cannot
-- repair, refund, apply a plan, sweep, change a claim or a payment row,
-- change or delete an audit row, or run DDL. Run as the owner after `sweeper migrate`,
-- then give the role a password (kept out of this file and of shell history by psql's
-- prompt):
--   psql "$DATABASE_URL_OWNER" -f jobs/sql/review-role.sql
--   psql "$DATABASE_URL_OWNER" -c '\password sweeper_review'
-- On PostgreSQL 14 and older every role may create tables in schema public unless
-- CREATE was revoked from PUBLIC (15 does that by default): check before you rely
-- on "no DDL".
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sweeper_review') THEN
    CREATE ROLE sweeper_review LOGIN;
  END IF;
END $$;

REVOKE CREATE ON SCHEMA public FROM sweeper_review;
GRANT USAGE ON SCHEMA public TO sweeper_review;

-- What the pages read: findings and their charges, the audit, the evidence (claims
-- through their directory, payment rows, the mirror, the sweep's refunds), the runs,
-- what completeness is measured against (watermarks, event cursors), and the connected accounts.
GRANT SELECT ON recon_findings, recon_finding_charges, recon_repairs, recon_refunds, recon_runs,
      recon_watermarks, recon_event_cursors, recon_accounts, stripe_charges, payments, idempotency_keys,
      idempotency_key_directory, sweeper_migrations TO sweeper_review;
-- Closing a finding: these columns only (resolveFindings in src/sweep/status.ts).
GRANT UPDATE (state, closed_at, closed_by, note, details) ON recon_findings TO sweeper_review;
-- Its audit row: appended, never changed (the table's trigger refuses that to everyone).
GRANT INSERT ON recon_repairs TO sweeper_review;
-- Saved plans: read, and approved by a second person (src/plans/approve.ts) with the
-- approval's audit row. Applying one repairs, so it is not this role's.
GRANT SELECT ON recon_plans, recon_plan_steps, recon_plan_events TO sweeper_review;
GRANT UPDATE (approved_by, approved_at) ON recon_plans TO sweeper_review;
GRANT INSERT ON recon_plan_events TO sweeper_review;

-- Session limits, as for sweeper_runtime: a page waiting on a finding a running sweep
-- holds gives up after 30 s, and nothing it starts runs or idles for long.
ALTER ROLE sweeper_review SET lock_timeout = '30s';
ALTER ROLE sweeper_review SET statement_timeout = '1min';
ALTER ROLE sweeper_review SET idle_in_transaction_session_timeout = '1min';
