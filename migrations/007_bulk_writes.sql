-- Bulk writes without per-row work (docs/claim-library.md "Why a claim is unique across
-- partitions", docs/performance.md): the cross-partition uniqueness of (tenant_id, key) is checked once per
-- INSERT statement instead of once per row, so a sweep re-creating claims (or an import
-- of existing claims) costs two checks per statement, not two per row; and the sweep's
-- own bookkeeping tables drop their per-row foreign-key checks.

-- Per statement: take the advisory lock of every key inserted (in key order, so two
-- statements never deadlock), then look for a second row of any of them across all
-- partitions. Correct under READ COMMITTED for the same reason the row trigger was: a
-- concurrent insert of the same key in another day's partition waits for this
-- transaction's lock, and its own check then runs with a fresh snapshot that sees this
-- row once committed (and this check sees it if it committed first).
CREATE FUNCTION sweeper_guard_claim_inserts() RETURNS trigger
  LANGUAGE plpgsql AS $$
DECLARE
  duplicate record;
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'idempotency_keys inserts must run under READ COMMITTED (this transaction is %)',
      current_setting('transaction_isolation') USING ERRCODE = '25001';
  END IF;
  PERFORM count(pg_advisory_xact_lock(lock_key))
     FROM (SELECT DISTINCT sweeper_claim_lock_key(tenant_id, key) AS lock_key FROM new_claims ORDER BY 1) keys;
  SELECT n.tenant_id, n.key INTO duplicate
    FROM (SELECT DISTINCT tenant_id, key FROM new_claims) n
    JOIN idempotency_keys c ON c.tenant_id = n.tenant_id AND c.key = n.key
   GROUP BY n.tenant_id, n.key HAVING count(*) > 1 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'duplicate idempotency key (tenant_id, key) = (%, %)', duplicate.tenant_id, duplicate.key
      USING ERRCODE = 'unique_violation', CONSTRAINT = 'idempotency_keys_tenant_key_unique';
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER idempotency_keys_unique_across_partitions ON idempotency_keys;
DROP FUNCTION sweeper_guard_claim_insert();
CREATE TRIGGER idempotency_keys_unique_across_partitions
  AFTER INSERT ON idempotency_keys REFERENCING NEW TABLE AS new_claims
  FOR EACH STATEMENT EXECUTE FUNCTION sweeper_guard_claim_inserts();

-- The sweep re-creates claims in one statement now (src/sweep/repairs.ts).
DROP FUNCTION sweeper_recreate_claim(text, text, text, text, timestamptz, int, jsonb, timestamptz, bigint, text, text);

-- Runs are written before anything that names them, by the same code path; findings are
-- never deleted; the audit is append-only (its trigger refuses updates and deletes). The
-- foreign keys added a lookup per row written (two per finding, two per audit row) to
-- every slice; what they guarded cannot happen through the sweeper.
ALTER TABLE recon_findings DROP CONSTRAINT recon_findings_first_seen_run_fkey;
ALTER TABLE recon_findings DROP CONSTRAINT recon_findings_last_seen_run_fkey;
ALTER TABLE recon_repairs DROP CONSTRAINT recon_repairs_finding_id_fkey;
ALTER TABLE recon_repairs DROP CONSTRAINT recon_repairs_run_id_fkey;
ALTER TABLE recon_refunds DROP CONSTRAINT recon_refunds_finding_id_fkey;
ALTER TABLE recon_refunds DROP CONSTRAINT recon_refunds_run_id_fkey;
ALTER TABLE recon_watermarks DROP CONSTRAINT recon_watermarks_run_id_fkey;
ALTER TABLE recon_event_cursors DROP CONSTRAINT recon_event_cursors_run_id_fkey;
ALTER TABLE recon_deep_reads DROP CONSTRAINT recon_deep_reads_run_id_fkey;
