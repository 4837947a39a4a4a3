-- Claims (idempotency_keys) and effects (payments): the local side that the sweeper
-- reconciles against Stripe. See docs/claim-library.md
-- "Why a claim is unique across partitions".

CREATE TABLE idempotency_keys (
  tenant_id           text        NOT NULL,
  key                 text        NOT NULL,
  request_fingerprint text        NOT NULL,
  status              text        NOT NULL CHECK (status IN ('in_flight', 'completed', 'released')),
  locked_until        timestamptz,
  attempt             int         NOT NULL DEFAULT 1 CHECK (attempt >= 1),
  downstream_key      text        NOT NULL CHECK (length(downstream_key) BETWEEN 1 AND 255),
  account_id          text,       -- Stripe Connect account charged; NULL = the platform
  response_status     int,
  response_body       jsonb,
  created_at          timestamptz NOT NULL,
  completed_at        timestamptz,
  updated_at          timestamptz NOT NULL,
  CHECK (status <> 'in_flight' OR locked_until IS NOT NULL),
  CHECK (status <> 'completed' OR (response_status IS NOT NULL AND completed_at IS NOT NULL)),
  -- A partitioned table's unique index must include the partition key, so this only
  -- says "unique within a day". Uniqueness across days is enforced by
  -- sweeper_guard_claim_insert() below; each partition also carries a plain
  -- UNIQUE (tenant_id, key), created with it.
  PRIMARY KEY (tenant_id, key, created_at)
) PARTITION BY RANGE (created_at);

CREATE INDEX idempotency_keys_in_flight ON idempotency_keys (locked_until) WHERE status = 'in_flight';
-- The sweep judges claims by their last activity (take, steal, completion, release).
CREATE INDEX idempotency_keys_updated_at ON idempotency_keys (updated_at);

-- A claim the sweeper re-created from an effect or a charge: the original request
-- body is unknown, so any body with that key replays the stored answer.
CREATE FUNCTION sweeper_recreated_fingerprint() RETURNS text LANGUAGE sql IMMUTABLE
  AS $$ SELECT 'sweeper:recreated' $$;

-- The advisory-lock key of one (tenant, key). Collisions only make two unrelated keys
-- wait for each other; they never merge claims. chr(31) cannot appear in either part
-- (both are printable ASCII), so ('a','bc') and ('ab','c') differ.
CREATE FUNCTION sweeper_claim_lock_key(p_tenant_id text, p_key text) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT hashtextextended(p_tenant_id || chr(31) || p_key, 7316) $$;

-- Cross-partition uniqueness of (tenant_id, key), for every insert whoever makes it:
-- the claim library, a repair, or a person with psql. Serialising on the key's
-- advisory lock and then looking in every partition is correct under READ COMMITTED:
-- each statement in this function takes a fresh snapshot after the lock is granted,
-- so it sees the row a previous holder committed. Any other level reads through a
-- snapshot taken before the lock was granted and could miss a row a READ COMMITTED
-- writer committed meanwhile (SSI only protects when both sides are SERIALIZABLE),
-- so only READ COMMITTED is accepted.
CREATE FUNCTION sweeper_guard_claim_insert() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'idempotency_keys inserts must run under READ COMMITTED (this transaction is %)',
      current_setting('transaction_isolation') USING ERRCODE = '25001';
  END IF;
  PERFORM pg_advisory_xact_lock(sweeper_claim_lock_key(NEW.tenant_id, NEW.key));
  IF EXISTS (SELECT 1 FROM idempotency_keys WHERE tenant_id = NEW.tenant_id AND key = NEW.key) THEN
    RAISE EXCEPTION 'duplicate idempotency key (tenant_id, key) = (%, %)', NEW.tenant_id, NEW.key
      USING ERRCODE = 'unique_violation', CONSTRAINT = 'idempotency_keys_tenant_key_unique';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER idempotency_keys_unique_across_partitions
  BEFORE INSERT ON idempotency_keys
  FOR EACH ROW EXECUTE FUNCTION sweeper_guard_claim_insert();

-- Key changes would bypass the guard; a claim's identity never changes.
CREATE FUNCTION sweeper_forbid_claim_identity_change() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.tenant_id IS DISTINCT FROM OLD.tenant_id OR NEW.key IS DISTINCT FROM OLD.key
     OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
    RAISE EXCEPTION 'a claim''s tenant_id, key and created_at never change' USING ERRCODE = '55000';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER idempotency_keys_identity_is_immutable
  BEFORE UPDATE ON idempotency_keys
  FOR EACH ROW EXECUTE FUNCTION sweeper_forbid_claim_identity_change();

-- Take a claim in one statement, atomically: insert it if the key is new, or report
-- what stands in the way, or (expired lease / released) re-take it with a new attempt.
-- p_now is the caller's clock, so leases and day partitions follow one time source.
CREATE FUNCTION sweeper_take_claim(
  p_tenant_id text, p_key text, p_fingerprint text, p_downstream_key text,
  p_now timestamptz, p_lease interval, p_account_id text
) RETURNS TABLE (
  outcome text, attempt int, status text, created_at timestamptz, locked_until timestamptz,
  response_status int, response_body jsonb, downstream_key text
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  found_claim idempotency_keys%ROWTYPE;
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'sweeper_take_claim must run under READ COMMITTED (this transaction is %)',
      current_setting('transaction_isolation') USING ERRCODE = '25001';
  END IF;
  PERFORM pg_advisory_xact_lock(sweeper_claim_lock_key(p_tenant_id, p_key));
  SELECT * INTO found_claim FROM idempotency_keys k
   WHERE k.tenant_id = p_tenant_id AND k.key = p_key
   FOR UPDATE;

  IF NOT FOUND THEN
    INSERT INTO idempotency_keys AS k (tenant_id, key, request_fingerprint, status, locked_until,
                                       attempt, downstream_key, account_id, created_at, updated_at)
    VALUES (p_tenant_id, p_key, p_fingerprint, 'in_flight', p_now + p_lease, 1, p_downstream_key, p_account_id,
            p_now, p_now)
    RETURNING 'claimed', k.attempt, k.status, k.created_at, k.locked_until, k.response_status,
              k.response_body, k.downstream_key
    INTO outcome, attempt, status, created_at, locked_until, response_status, response_body, downstream_key;
    RETURN NEXT;
    RETURN;
  END IF;

  outcome := CASE
    -- A claim the sweeper re-created accepts any body, but only from the same account:
    -- a charge made in another (connected) account must not buy replays here.
    WHEN found_claim.request_fingerprint <> p_fingerprint
         AND NOT (found_claim.request_fingerprint = sweeper_recreated_fingerprint()
                  AND found_claim.account_id IS NOT DISTINCT FROM p_account_id) THEN 'fingerprint_mismatch'
    WHEN found_claim.status = 'completed' THEN 'completed'
    WHEN found_claim.status = 'in_flight' AND found_claim.locked_until > p_now THEN 'in_flight'
    -- Re-driving needs Stripe to still remember the downstream key (24 h): later, a
    -- retry could charge a second time. The sweep settles such a claim instead.
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

-- Day partitions, UTC days. Called by `sweeper migrate` and `sweeper expire` for the
-- whole retention window, past and ahead; serialised so concurrent callers agree.
-- SECURITY DEFINER: the least-privilege runtime role (jobs/sql/) creates partitions
-- only through this function, never with DDL rights of its own.
CREATE FUNCTION sweeper_ensure_day_partitions(p_parent regclass, p_from date, p_to date)
  RETURNS int LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  day date;
  part_name text;
  created int := 0;
  locked boolean := false;
  parent_name text := (SELECT relname FROM pg_class WHERE oid = p_parent);
BEGIN
  IF parent_name NOT IN ('idempotency_keys', 'stripe_charges') OR p_to - p_from > 400 THEN
    RAISE EXCEPTION 'sweeper_ensure_day_partitions: only idempotency_keys and stripe_charges, at most 400 days'
      USING ERRCODE = '22023';
  END IF;
  day := p_from;
  WHILE day <= p_to LOOP
    part_name := parent_name || '_p' || to_char(day, 'YYYYMMDD');
    IF to_regclass(quote_ident(part_name)) IS NULL THEN
      -- Only a caller that has something to create takes the lock (and holds it to
      -- the end of its transaction); the common case, all present, locks nothing.
      IF NOT locked THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('sweeper:partitions', 0));
        locked := true;
      END IF;
      -- A concurrent caller may have created it while we waited for the lock; the
      -- catalog lookup above may not see that yet, so "already exists" is success.
      BEGIN
        EXECUTE format('CREATE TABLE %I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
                       part_name, p_parent,
                       (day::timestamp AT TIME ZONE 'UTC'), ((day + 1)::timestamp AT TIME ZONE 'UTC'));
        IF parent_name = 'idempotency_keys' THEN
          EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I UNIQUE (tenant_id, key)',
                         part_name, part_name || '_tenant_key');
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

CREATE TABLE payments (
  id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  charge_id         text        NOT NULL UNIQUE,
  tenant_id         text,
  idempotency_key   text,
  payment_intent_id text,
  account_id        text,       -- Stripe Connect account; NULL = the platform
  amount            bigint      NOT NULL CHECK (amount >= 0),
  currency          char(3)     NOT NULL CHECK (currency = lower(currency)),
  status            text        NOT NULL CHECK (status IN ('succeeded', 'failed', 'pending')),
  amount_refunded   bigint      NOT NULL DEFAULT 0 CHECK (amount_refunded >= 0),
  disputed          boolean     NOT NULL DEFAULT false,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL
);

CREATE INDEX payments_tenant_key ON payments (tenant_id, idempotency_key);
CREATE INDEX payments_created_at ON payments (created_at);
