-- Cross-partition uniqueness of claims by a real unique index (docs/claim-library.md
-- "Why a claim is unique across partitions"). Until now an INSERT into idempotency_keys took an advisory
-- lock per key and then probed every day partition for a second row; sweeper_take_claim
-- did the same before its lookup. That cost a probe per partition twice per claim taken,
-- and an advisory lock per key for bulk writers.
--
-- idempotency_key_directory holds one row per (tenant_id, key): the day of its claim.
-- Its primary key is the guarantee. Two writers of one key, on any day, meet on that
-- index: the second waits for the first to commit or roll back, as with any unique
-- index, under every isolation level. The claim itself is then one probe, in the
-- partition of its day.
--
-- Invariant: every claim has its entry, with the claim's created_at. An entry may name a
-- claim that is gone (its partition dropped or truncated, its row deleted by hand): such
-- an entry is stale, and whoever meets it (the insert guard, sweeper_take_claim)
-- replaces it. `sweeper expire` deletes the entries of the days it drops.
CREATE TABLE idempotency_key_directory (
  tenant_id  text        NOT NULL,
  key        text        NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key)
);
-- No index on created_at: only the daily `expire` deletes by day, and one scan a day is
-- cheaper than an index entry for every claim taken.

-- Claims written while this migration runs (a rolling deploy migrates while the old code
-- still takes claims) must be in the copy or wait for the new trigger: no claim is
-- written between the copy and the trigger swap below.
LOCK TABLE idempotency_keys IN SHARE ROW EXCLUSIVE MODE;

-- Two claims of one key could exist only if one was inserted straight into a day's
-- partition (the old statement trigger sat on the parent only). Say so, rather than pick one.
DO $$
DECLARE
  twice record;
BEGIN
  SELECT tenant_id, key, count(*) AS n INTO twice FROM idempotency_keys
   GROUP BY tenant_id, key HAVING count(*) > 1 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'idempotency_keys holds % claims of (tenant_id, key) = (%, %): keep one claim per key '
                    '(SELECT tenant_id, key FROM idempotency_keys GROUP BY 1, 2 HAVING count(*) > 1 lists them), '
                    'then run sweeper migrate again', twice.n, twice.tenant_id, twice.key;
  END IF;
END $$;

INSERT INTO idempotency_key_directory (tenant_id, key, created_at)
SELECT tenant_id, key, created_at FROM idempotency_keys;

-- Entries whose claim is gone, forgotten, for the keys given (the take's one key, an
-- INSERT statement's, a repair's or an import batch's). Every entry of those keys is
-- locked first, in key order, and kept locked to the end of the transaction; only then,
-- with a fresh snapshot, is each one's claim looked for. So whoever forgets an entry
-- holds it, and a claim filed against it meanwhile (which holds it too) is seen, never
-- doubled. SECURITY DEFINER: writers of claims file keys, but never delete an entry
-- themselves.
CREATE FUNCTION sweeper_forget_stale_claim_keys(p_tenant_ids text[], p_keys text[]) RETURNS void
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM 1
     FROM (SELECT DISTINCT t, k FROM unnest(p_tenant_ids, p_keys) AS u(t, k) ORDER BY t, k) n
     CROSS JOIN LATERAL (SELECT 1 FROM idempotency_key_directory d
                          WHERE d.tenant_id = n.t AND d.key = n.k FOR UPDATE) locked;
  DELETE FROM idempotency_key_directory d
   USING (SELECT DISTINCT t, k FROM unnest(p_tenant_ids, p_keys) AS u(t, k)) n
   WHERE d.tenant_id = n.t AND d.key = n.k
     AND NOT EXISTS (SELECT 1 FROM idempotency_keys c
                      WHERE c.tenant_id = d.tenant_id AND c.key = d.key AND c.created_at = d.created_at OFFSET 0);
END $$;

-- Every INSERT into idempotency_keys, whoever makes it, files its keys, once per
-- statement. SECURITY DEFINER: a role that may insert claims files them without rights
-- of its own on the directory.
--
-- Fast path: every row's entry was filed by this very transaction, with the row's
-- created_at (sweeper_take_claim, the sweep's re-created claims and `import-claims` file
-- first, in the same statement or just before). Such an entry is invisible to everyone
-- else until commit, and anyone filing the same key waits for it on the index.
--
-- Otherwise (a plain INSERT, by a person or other code): file the missing keys (in key
-- order, so two many-row inserts never deadlock), replace the entries whose claim is gone,
-- and refuse a key filed for another claim.
CREATE FUNCTION sweeper_file_claim_keys() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  duplicate record;
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'idempotency_keys inserts must run under READ COMMITTED (this transaction is %)',
      current_setting('transaction_isolation') USING ERRCODE = '25001';
  END IF;
  -- OFFSET 0 in each subquery keeps it a probe per row of the statement: the planner
  -- knows nothing of a transition table's size and would otherwise hash-join it against
  -- the whole directory.
  IF NOT EXISTS (SELECT 1 FROM new_claims n
                  WHERE NOT EXISTS (SELECT 1 FROM idempotency_key_directory d
                                     WHERE d.tenant_id = n.tenant_id AND d.key = n.key AND d.created_at = n.created_at
                                       AND d.xmin = pg_current_xact_id()::xid OFFSET 0)) THEN
    RETURN NULL;
  END IF;
  -- File what is free; forget the entries whose claim is gone (locking the rest until
  -- commit, see sweeper_forget_stale_claim_keys); file again what that freed.
  INSERT INTO idempotency_key_directory (tenant_id, key, created_at)
  SELECT tenant_id, key, created_at FROM new_claims ORDER BY tenant_id, key, created_at
  ON CONFLICT (tenant_id, key) DO NOTHING;
  PERFORM sweeper_forget_stale_claim_keys(array_agg(tenant_id), array_agg(key)) FROM new_claims;
  INSERT INTO idempotency_key_directory (tenant_id, key, created_at)
  SELECT tenant_id, key, created_at FROM new_claims ORDER BY tenant_id, key, created_at
  ON CONFLICT (tenant_id, key) DO NOTHING;
  SELECT n.tenant_id, n.key INTO duplicate
    FROM new_claims n
   WHERE NOT EXISTS (SELECT 1 FROM idempotency_key_directory d
                      WHERE d.tenant_id = n.tenant_id AND d.key = n.key AND d.created_at = n.created_at OFFSET 0)
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'duplicate idempotency key (tenant_id, key) = (%, %)', duplicate.tenant_id, duplicate.key
      USING ERRCODE = 'unique_violation', CONSTRAINT = 'idempotency_keys_tenant_key_unique';
  END IF;
  RETURN NULL;
END $$;

-- A claim deleted (by hand: the sweeper never deletes claims) takes its entry with it;
-- TRUNCATE empties the directory, or (on one day's partition, TG_ARGV[0] its UTC day)
-- that day of it. (Dropping one day's partition by hand leaves stale entries:
-- the take and the insert guard replace them when they meet them; docs/claim-library.md
-- "Why a claim is unique across partitions".)
CREATE FUNCTION sweeper_forget_claim_keys() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' AND TG_NARGS = 0 THEN
    TRUNCATE idempotency_key_directory;
  ELSIF TG_OP = 'TRUNCATE' THEN
    -- The day as YYYY-MM-DD, its bounds in UTC: neither DateStyle nor TimeZone moves them.
    DELETE FROM idempotency_key_directory
     WHERE created_at >= (TG_ARGV[0]::date)::timestamp AT TIME ZONE 'UTC'
       AND created_at < (TG_ARGV[0]::date + 1)::timestamp AT TIME ZONE 'UTC';
  ELSE
    DELETE FROM idempotency_key_directory d USING old_claims o
     WHERE d.tenant_id = o.tenant_id AND d.key = o.key AND d.created_at = o.created_at;
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER idempotency_keys_unique_across_partitions ON idempotency_keys;
DROP FUNCTION sweeper_guard_claim_inserts();
CREATE TRIGGER idempotency_keys_unique_across_partitions
  AFTER INSERT ON idempotency_keys REFERENCING NEW TABLE AS new_claims
  FOR EACH STATEMENT EXECUTE FUNCTION sweeper_file_claim_keys();
CREATE TRIGGER idempotency_keys_deleted
  AFTER DELETE ON idempotency_keys REFERENCING OLD TABLE AS old_claims
  FOR EACH STATEMENT EXECUTE FUNCTION sweeper_forget_claim_keys();
CREATE TRIGGER idempotency_keys_truncated
  AFTER TRUNCATE ON idempotency_keys
  FOR EACH STATEMENT EXECUTE FUNCTION sweeper_forget_claim_keys();

-- Statement triggers fire only for the table a statement names: an INSERT, DELETE or
-- TRUNCATE aimed at one day's partition directly needs the same triggers on the
-- partition. (Before this migration such an INSERT bypassed the uniqueness check.)
-- New partitions get them from sweeper_ensure_day_partitions below.
CREATE FUNCTION sweeper_guard_claim_partition(p_partition regclass, p_day date) RETURNS void
  LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TRIGGER idempotency_keys_unique_across_partitions AFTER INSERT ON %s '
                 'REFERENCING NEW TABLE AS new_claims FOR EACH STATEMENT EXECUTE FUNCTION sweeper_file_claim_keys()',
                 p_partition);
  EXECUTE format('CREATE TRIGGER idempotency_keys_deleted AFTER DELETE ON %s '
                 'REFERENCING OLD TABLE AS old_claims FOR EACH STATEMENT EXECUTE FUNCTION sweeper_forget_claim_keys()',
                 p_partition);
  EXECUTE format('CREATE TRIGGER idempotency_keys_truncated AFTER TRUNCATE ON %s '
                 'FOR EACH STATEMENT EXECUTE FUNCTION sweeper_forget_claim_keys(%L)',
                 p_partition, to_char(p_day, 'YYYY-MM-DD'));
END $$;
REVOKE EXECUTE ON FUNCTION sweeper_guard_claim_partition(regclass, date) FROM PUBLIC;

-- The existing partitions: their triggers, and without the per-day UNIQUE (tenant_id, key),
-- which said "unique within a day": the directory now says it for every day, and it was
-- one more index to write per claim taken. The primary key (tenant_id, key, created_at)
-- still serves every lookup by key.
DO $$
DECLARE
  part record;
BEGIN
  FOR part IN
    SELECT c.oid::regclass AS partition, c.relname,
           to_date(substring(c.relname FROM '_p(\d{8})$'), 'YYYYMMDD') AS day
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'idempotency_keys'::regclass AND c.relname ~ '_p\d{8}$'
  LOOP
    PERFORM sweeper_guard_claim_partition(part.partition, part.day);
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT IF EXISTS %I', part.partition, part.relname || '_tenant_key');
  END LOOP;
END $$;

-- New day partitions: as in 005, without the per-day unique constraint.
CREATE OR REPLACE FUNCTION sweeper_ensure_day_partitions(p_parent regclass, p_from date, p_to date)
  RETURNS int LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  day date;
  part_name text;
  created int := 0;
  locked boolean := false;
  parent_name text := (SELECT relname FROM pg_class WHERE oid = p_parent);
  today date := (now() AT TIME ZONE 'UTC')::date;
BEGIN
  IF parent_name IS NULL OR parent_name NOT IN ('idempotency_keys', 'stripe_charges') THEN
    RAISE EXCEPTION 'sweeper_ensure_day_partitions: only idempotency_keys and stripe_charges have day partitions'
      USING ERRCODE = '22023';
  END IF;
  IF p_from IS NULL OR p_to IS NULL OR p_from > p_to THEN
    RAISE EXCEPTION 'sweeper_ensure_day_partitions: from (%) and to (%) must be days, from not after to', p_from, p_to
      USING ERRCODE = '22023';
  END IF;
  IF p_to - p_from > 400 THEN
    RAISE EXCEPTION 'sweeper_ensure_day_partitions: at most 400 days per call (asked % to %)', p_from, p_to
      USING ERRCODE = '22023';
  END IF;
  IF p_from < date '2010-01-01' OR p_to > today + 35 THEN
    RAISE EXCEPTION 'sweeper_ensure_day_partitions: days must lie between 2010-01-01 and % (35 days ahead); asked % to %',
      today + 35, p_from, p_to
      USING ERRCODE = '22023';
  END IF;
  day := p_from;
  WHILE day <= p_to LOOP
    part_name := parent_name || '_p' || to_char(day, 'YYYYMMDD');
    IF to_regclass(quote_ident(part_name)) IS NULL THEN
      IF NOT locked THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('sweeper:partitions', 0));
        locked := true;
      END IF;
      BEGIN
        EXECUTE format('CREATE TABLE %I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
                       part_name, p_parent,
                       (day::timestamp AT TIME ZONE 'UTC'), ((day + 1)::timestamp AT TIME ZONE 'UTC'));
        IF parent_name = 'idempotency_keys' THEN
          PERFORM sweeper_guard_claim_partition(to_regclass(quote_ident(part_name)), day);
        END IF;
        created := created + 1;
      EXCEPTION WHEN duplicate_table THEN
        NULL;
      END;
    END IF;
    day := day + 1;
  END LOOP;
  RETURN created;
END $$;
REVOKE EXECUTE ON FUNCTION sweeper_ensure_day_partitions(regclass, date, date) FROM PUBLIC;

-- The take files the key first: a new key is one insert into the directory and one into
-- its day's partition; a known key is one probe in the directory and one in the
-- partition of its day, locked for update. Concurrent takers of a new key wait on the
-- directory's index for the first, then find its claim (READ COMMITTED: each statement
-- here takes a fresh snapshot). Still READ COMMITTED only: under a snapshot taken
-- before the wait, the lookup would not see the claim that made it wait.
CREATE OR REPLACE FUNCTION sweeper_take_claim(
  p_tenant_id text, p_key text, p_fingerprint text, p_downstream_key text,
  p_now timestamptz, p_lease interval, p_account_id text, p_amount bigint, p_currency text
) RETURNS TABLE (
  outcome text, attempt int, status text, created_at timestamptz, locked_until timestamptz,
  response_status int, response_body jsonb, downstream_key text
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  found_claim idempotency_keys%ROWTYPE;
  filed_at timestamptz;
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'sweeper_take_claim must run under READ COMMITTED (this transaction is %)',
      current_setting('transaction_isolation') USING ERRCODE = '25001';
  END IF;
  LOOP
    INSERT INTO idempotency_key_directory AS d (tenant_id, key, created_at) VALUES (p_tenant_id, p_key, p_now)
    ON CONFLICT (tenant_id, key) DO NOTHING;
    IF FOUND THEN
      INSERT INTO idempotency_keys AS k (tenant_id, key, request_fingerprint, status, locked_until, attempt,
                                         downstream_key, account_id, amount, currency, created_at, updated_at)
      VALUES (p_tenant_id, p_key, p_fingerprint, 'in_flight', p_now + p_lease, 1, p_downstream_key, p_account_id,
              p_amount, p_currency, p_now, p_now)
      RETURNING 'claimed', k.attempt, k.status, k.created_at, k.locked_until, k.response_status,
                k.response_body, k.downstream_key
      INTO outcome, attempt, status, created_at, locked_until, response_status, response_body, downstream_key;
      RETURN NEXT;
      RETURN;
    END IF;
    SELECT d.created_at INTO filed_at FROM idempotency_key_directory d
     WHERE d.tenant_id = p_tenant_id AND d.key = p_key;
    SELECT * INTO found_claim FROM idempotency_keys k
     WHERE k.tenant_id = p_tenant_id AND k.key = p_key AND k.created_at = filed_at
     FOR UPDATE;
    EXIT WHEN FOUND;
    -- No claim where the entry says: the entry is stale (its claim is gone), or it changed
    -- meanwhile. Forget it if stale, and file (or find) again.
    PERFORM sweeper_forget_stale_claim_keys(ARRAY[p_tenant_id], ARRAY[p_key]);
  END LOOP;

  outcome := CASE
    WHEN found_claim.request_fingerprint <> p_fingerprint
         AND NOT (found_claim.request_fingerprint = sweeper_recreated_fingerprint()
                  AND found_claim.account_id IS NOT DISTINCT FROM p_account_id
                  AND (found_claim.amount IS NULL OR p_amount IS NULL OR found_claim.amount = p_amount)
                  AND (found_claim.currency IS NULL OR p_currency IS NULL OR found_claim.currency = p_currency))
      THEN 'fingerprint_mismatch'
    WHEN found_claim.status = 'completed' THEN 'completed'
    WHEN found_claim.status = 'in_flight' AND found_claim.locked_until > p_now THEN 'in_flight'
    WHEN p_now - found_claim.created_at >= interval '24 hours' THEN 'retry_window_expired'
    WHEN found_claim.status = 'in_flight' THEN 'stolen'
    ELSE 'retaken'
  END;

  IF outcome IN ('stolen', 'retaken') THEN
    UPDATE idempotency_keys k
       SET status = 'in_flight', attempt = k.attempt + 1, locked_until = p_now + p_lease, updated_at = p_now
     WHERE k.tenant_id = p_tenant_id AND k.key = p_key AND k.created_at = found_claim.created_at
    RETURNING k.attempt, k.status, k.locked_until INTO attempt, status, locked_until;
  ELSE
    attempt := found_claim.attempt;
    status := found_claim.status;
    locked_until := found_claim.locked_until;
  END IF;
  created_at := found_claim.created_at;
  response_status := found_claim.response_status;
  response_body := found_claim.response_body;
  downstream_key := found_claim.downstream_key;
  RETURN NEXT;
END $$;

-- Whoever may insert claims may file their keys: sweeper_take_claim runs with its
-- caller's rights, and payment code's roles were granted idempotency_keys before this
-- migration existed. (The insert guard files keys as the owner; this is for the take.)
DO $$
DECLARE
  grantee text;
BEGIN
  FOR grantee IN
    SELECT DISTINCT g.grantee FROM information_schema.role_table_grants g
     WHERE g.table_name = 'idempotency_keys' AND g.table_schema = current_schema()
       AND g.privilege_type = 'INSERT' AND g.grantee <> current_user AND g.grantee <> 'PUBLIC'
  LOOP
    EXECUTE format('GRANT SELECT, INSERT ON idempotency_key_directory TO %I', grantee);
  END LOOP;
END $$;
