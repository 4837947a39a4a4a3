-- Claims (idempotency_keys) and effects (payments): the local side that the sweeper
-- reconciles against Stripe. Other writers (payment code older than sweeper, a person
-- with psql, an imported table) write these tables too, so every rule that must hold
-- for all of them lives here, in triggers and functions, not in the claim library.

-- One row per (tenant, key): the insert is the claim. Day partitions by created_at, so
-- expiry is a DROP of a day, never a mass DELETE.
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
  -- The request the claim stands for, so every repair can check a charge against it.
  -- NULL for rows of other writers: the sweep then repairs from a charge only when it is
  -- the only succeeded charge naming the key.
  amount              bigint      CHECK (amount > 0),
  currency            text        CHECK (currency ~ '^[a-z]{3}$'),
  -- What the stored answer means, whatever its HTTP status:
  --   success         a charge was made (succeeded, or pending at Stripe)
  --   pending_action  no charge yet: the customer must act (3-D Secure)
  --   declined        the card was declined (a failed charge may exist)
  --   rejected        Stripe refused the request (no charge)
  -- NULL (rows of other writers): the body is read as its writer wrote it
  -- (docs/judgement.md "Stored answers").
  response_outcome    text        CHECK (response_outcome IN ('success', 'pending_action', 'declined', 'rejected')),
  -- The account as the sweep names it in its own tables ('platform' or acct_…), derived
  -- from account_id, which writers keep writing (NULL = the platform): the sweep's
  -- account predicates are then plain equalities that an index answers.
  account             text        GENERATED ALWAYS AS (coalesce(account_id, 'platform')) STORED,
  -- The business reference the payment is for (an order, an invoice, a booking), part of
  -- the request fingerprint; NULL when the writer gave none. Two payments for one
  -- reference under two keys are a duplicate_effect (docs/judgement.md).
  reference           text,
  -- What the claim stands for: NULL or 'charge' (a payment), 'refund' (a refund of
  -- `target`, a charge id). Claims of other writers that store a Stripe Refund object as
  -- their answer are refund claims too (sweeper_claim_is_refund).
  operation           text        CHECK (operation IN ('charge', 'refund')),
  target              text,
  CHECK (status <> 'in_flight' OR locked_until IS NOT NULL),
  CHECK (status <> 'completed' OR (response_status IS NOT NULL AND completed_at IS NOT NULL)),
  -- A partitioned table's unique index must include the partition key, so this only says
  -- "unique within a day"; idempotency_key_directory below says it across days.
  PRIMARY KEY (tenant_id, key, created_at)
) PARTITION BY RANGE (created_at);

CREATE INDEX idempotency_keys_in_flight ON idempotency_keys (locked_until) WHERE status = 'in_flight';
-- The sweep judges an account's claims by their last activity (take, steal, completion,
-- release).
CREATE INDEX idempotency_keys_account_updated_at ON idempotency_keys (account, updated_at);
-- "Has this tenant ever claimed on this account?": metadata alone never creates a claim
-- for a tenant on an account where it has no claim history.
CREATE INDEX idempotency_keys_tenant_account ON idempotency_keys (tenant_id, account_id);
-- The charge a claim's stored answer names, in the shapes writers store (docs/judgement.md
-- "Stored answers"): the claim library's `charge` field (an id, or an expanded charge), a
-- Stripe Charge object (`"object": "charge"`, its `id`), or a PaymentIntent
-- (`latest_charge`, an id or expanded; older API versions: the first of `charges.data`).
-- One definition, used by the sweep and by the index below, so a lookup by charge id is a
-- probe whatever shape the answer has.
CREATE FUNCTION sweeper_answer_charge(body jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE
    WHEN jsonb_typeof(body) IS DISTINCT FROM 'object' THEN NULL
    -- A Refund object names the charge it refunds: not a charge this claim made.
    WHEN body->>'object' = 'refund' THEN NULL
    WHEN jsonb_typeof(body->'charge') = 'string' THEN body->>'charge'
    WHEN jsonb_typeof(body->'charge') = 'object' THEN body->'charge'->>'id'
    WHEN body->>'object' = 'charge' THEN body->>'id'
    WHEN body->>'object' = 'payment_intent' THEN coalesce(
      CASE jsonb_typeof(body->'latest_charge')
        WHEN 'string' THEN body->>'latest_charge'
        WHEN 'object' THEN body->'latest_charge'->>'id'
      END,
      body->'charges'->'data'->0->>'id')
  END
$$;

-- A charge without attribution metadata is still a key's evidence when the key's claim
-- stored an answer naming it: the sweep looks those claims up by charge id. Partial, so
-- claims whose answer names no charge cost nothing more.
CREATE INDEX idempotency_keys_answer_charge ON idempotency_keys (sweeper_answer_charge(response_body))
  WHERE sweeper_answer_charge(response_body) IS NOT NULL;

-- Uniqueness of (tenant_id, key) across day partitions, by a real unique index: one row
-- per key, naming the day of its claim. Two writers of one key, on any day, meet on its
-- primary key: the second waits for the first to commit or roll back, under every
-- isolation level. The claim itself is then one probe, in the partition of its day.
--
-- Invariant: every claim has its entry, with the claim's created_at. An entry may name a
-- claim that is gone (its partition dropped or truncated, its row deleted by hand): such
-- an entry is stale, and whoever meets it (the insert guard, sweeper_take_claim) replaces
-- it. `sweeper expire` deletes the entries of the days it drops. No index on created_at:
-- only that daily delete reads by day, and one scan a day is cheaper than an index entry
-- for every claim taken.
CREATE TABLE idempotency_key_directory (
  tenant_id  text        NOT NULL,
  key        text        NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key)
);

-- A claim the sweeper re-created from an effect or a charge: the original request
-- body is unknown, so any body with that key replays the stored answer.
CREATE FUNCTION sweeper_recreated_fingerprint() RETURNS text LANGUAGE sql IMMUTABLE
  AS $$ SELECT 'sweeper:recreated' $$;

-- Key changes would bypass the directory; a claim's identity never changes.
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
-- and refuse a key filed for another claim. Only READ COMMITTED: under an older snapshot
-- the look for a claim could miss one committed while this statement waited.
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
-- that day of it. Dropping one day's partition by hand leaves stale entries: the take
-- and the insert guard replace them when they meet them.
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
-- partition. sweeper_ensure_day_partitions gives them to every partition it creates.
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

-- Day partitions, UTC days, of idempotency_keys and stripe_charges (002_mirror.sql).
-- Called by `sweeper migrate` and `sweeper expire` for the whole retention window,
-- past and ahead, and by a sweep slice for the mirror's days it reads; serialised so
-- concurrent callers agree. SECURITY DEFINER: the least-privilege runtime role
-- (jobs/sql/) creates partitions only through this function, never with DDL rights of
-- its own, so the arguments are bounded to what callers need: days from 2010-01-01
-- (Stripe has no older charge) to 35 days after the database's UTC today (31 ahead plus
-- margin for a clock near midnight), at most 400 per call, never NULL. Days in the past
-- are harmless: `expire` drops those older than the retention window.
--
-- A caller that has something to create takes the lock (and holds it to the end of its
-- transaction); the common case, all present, locks nothing. A concurrent caller may
-- have created a partition while this one waited for the lock, and the catalog lookup
-- may not see it yet, so "already exists" is success.
CREATE FUNCTION sweeper_ensure_day_partitions(p_parent regclass, p_from date, p_to date)
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

-- Takes a claim in one statement, atomically: inserts it if the key is new, or reports
-- what stands in the way, or (expired lease, or released) re-takes it with a new attempt.
-- p_now is the caller's clock, so leases and day partitions follow one time source.
--
-- The key is filed first: a new key is one insert into the directory and one into its
-- day's partition; a known key is one probe in the directory and one in the partition of
-- its day, locked for update. Concurrent takers of a new key wait on the directory's
-- index for the first, then find its claim (READ COMMITTED: each statement here takes a
-- fresh snapshot). READ COMMITTED only: under a snapshot taken before the wait, the
-- lookup would not see the claim that made it wait.
--
-- A claim the sweep re-created accepts any body, but only from its own account (a
-- charge made in another connected account must not buy replays here), and not for
-- another amount or currency than the charge it was re-created from. Re-driving needs
-- Stripe to still remember the downstream key (24 h): later, a retry could charge a
-- second time, so the sweep settles such a claim instead ('retry_window_expired').
CREATE FUNCTION sweeper_take_claim(
  p_tenant_id text, p_key text, p_fingerprint text, p_downstream_key text,
  p_now timestamptz, p_lease interval, p_account_id text, p_amount bigint, p_currency text,
  p_reference text DEFAULT NULL, p_operation text DEFAULT NULL, p_target text DEFAULT NULL
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
                                         downstream_key, account_id, amount, currency, created_at, updated_at,
                                         reference, operation, target)
      VALUES (p_tenant_id, p_key, p_fingerprint, 'in_flight', p_now + p_lease, 1, p_downstream_key, p_account_id,
              p_amount, p_currency, p_now, p_now, p_reference, p_operation, p_target)
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

-- Effects: one row per Stripe charge that the local system recorded. A repair inserts
-- with ON CONFLICT (charge_id) DO NOTHING, so it can never double an effect.
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
  updated_at        timestamptz NOT NULL,
  -- As idempotency_keys.account: 'platform' or acct_…, derived from account_id.
  account           text        GENERATED ALWAYS AS (coalesce(account_id, 'platform')) STORED,
  -- As idempotency_keys.reference.
  reference         text,
  -- Where the dispute on the charge stands (Stripe's dispute status: warning_needs_response,
  -- needs_response, under_review, won, lost, …), NULL when none: followed through events.
  dispute_status    text,
  -- From the charge's balance transaction, once its payout reconciles: what finance books.
  fee               bigint,
  net               bigint,
  settlement_currency text,
  exchange_rate     numeric
);

CREATE INDEX payments_tenant_key ON payments (tenant_id, idempotency_key);
-- The sweep reads an account's payment rows by the day they were created.
CREATE INDEX payments_account_created_at ON payments (account, created_at);
CREATE INDEX payments_tenant_account ON payments (tenant_id, account_id);

-- How the claim library's takes ended, per tenant and day, summed over every instance of
-- the application (created, replayed, in_progress, fingerprint_mismatch, stolen,
-- quota_exceeded). The library adds its counts off the charge's path, in batches;
-- `sweeper status` and the metrics read them, and the sweep's unstable_keys reads whether
-- a tenant's retries are ever replayed.
CREATE TABLE claim_outcomes (
  tenant_id text   NOT NULL,
  day       date   NOT NULL,
  outcome   text   NOT NULL CHECK (outcome IN ('created', 'replayed', 'in_progress', 'fingerprint_mismatch', 'stolen',
                                                'quota_exceeded')),
  count     bigint NOT NULL CHECK (count >= 0),
  PRIMARY KEY (tenant_id, day, outcome)
);
CREATE INDEX claim_outcomes_day ON claim_outcomes (day);

-- The per-tenant quota of claims per minute (opt-in): one row per tenant and minute,
-- counted up by a single upsert that refuses past the limit, so two takers never both
-- slip under it. `expire` deletes the rows of past minutes.
CREATE TABLE claim_quota (
  tenant_id text        NOT NULL,
  minute    timestamptz NOT NULL,
  count     int         NOT NULL CHECK (count >= 0),
  PRIMARY KEY (tenant_id, minute)
);

-- Refunds the application made (the claim library's refundOnce): one row per Stripe refund,
-- committed with its claim's completion, as payments are for charges. A repair inserts
-- with ON CONFLICT (refund_id) DO NOTHING.
CREATE TABLE payment_refunds (
  id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  refund_id       text        NOT NULL UNIQUE,
  charge_id       text        NOT NULL,
  tenant_id       text,
  idempotency_key text,
  account_id      text,       -- Stripe Connect account; NULL = the platform
  amount          bigint      NOT NULL CHECK (amount >= 0),
  currency        char(3)     NOT NULL CHECK (currency = lower(currency)),
  status          text        NOT NULL CHECK (status IN ('pending', 'requires_action', 'succeeded', 'failed', 'canceled')),
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  account         text        GENERATED ALWAYS AS (coalesce(account_id, 'platform')) STORED
);
CREATE INDEX payment_refunds_tenant_key ON payment_refunds (tenant_id, idempotency_key);
CREATE INDEX payment_refunds_account_created_at ON payment_refunds (account, created_at);
CREATE INDEX payment_refunds_charge ON payment_refunds (charge_id);

-- Whether a claim stands for a refund: by its column, or by the Stripe Refund object its
-- writer stored as the answer.
CREATE FUNCTION sweeper_claim_is_refund(operation text, body jsonb) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT coalesce(operation = 'refund', jsonb_typeof(body) = 'object' AND body->>'object' = 'refund', false)
$$;

-- The sweep's refunds step asks first whether a window has any refund claim at all, so an
-- account that makes no refunds costs no listing: a small index of refund claims answers it.
CREATE INDEX idempotency_keys_refund_claims ON idempotency_keys (account, updated_at)
  WHERE sweeper_claim_is_refund(operation, response_body);
