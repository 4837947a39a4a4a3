-- The mirror's charges by the key their metadata names, in one unpartitioned index
-- (docs/performance.md "The throughput design"). The sweep looks up every charge of each key it judges; through
-- stripe_charges_attribution that was one probe per key in every day partition of the
-- mirror (a partitioned table has no global index), the largest cost of a slice. This
-- table answers it with one probe per key; the charge itself is then read by its
-- primary key, in its own day's partition only.
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
-- `expire` drops the entries of the days it drops from the mirror.
CREATE INDEX stripe_charge_keys_created ON stripe_charge_keys (created);

-- SECURITY DEFINER: the least-privilege runtime role (jobs/sql/least-privilege-role.sql)
-- writes the mirror, and only reads this table; the entries are written as the owner.
CREATE FUNCTION sweeper_note_charge_keys() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO stripe_charge_keys (tenant_id, idempotency_key, account, charge_id, created)
  SELECT DISTINCT tenant_id, idempotency_key, account, charge_id, created FROM landed
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

INSERT INTO stripe_charge_keys (tenant_id, idempotency_key, account, charge_id, created)
SELECT tenant_id, idempotency_key, account, charge_id, created FROM stripe_charges
 WHERE tenant_id IS NOT NULL AND idempotency_key IS NOT NULL
ON CONFLICT DO NOTHING;

-- Superseded by stripe_charge_keys: nothing looks charges up by their metadata in the
-- mirror itself any more, and every landing paid for maintaining it in each partition.
DROP INDEX stripe_charges_attribution;

-- A database set up with the least-privilege role before this migration: the role reads
-- this table like the mirror (a new setup gets it from the role script).
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sweeper_runtime') THEN
    GRANT SELECT ON stripe_charge_keys TO sweeper_runtime;
  END IF;
END $$;
