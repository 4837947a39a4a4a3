-- The schema that migrations/ produce: pg_dump --schema-only of a freshly migrated
-- database, without owners, session settings or day partitions (their days depend on
-- the date; sweeper_ensure_day_partitions makes them). Never applied. Written by
-- `npm run schema:snapshot`; test/integration/schema-snapshot.test.ts checks it.

CREATE FUNCTION public.sweeper_answer_charge(body jsonb) RETURNS text
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

CREATE FUNCTION public.sweeper_claim_is_refund(operation text, body jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT coalesce(operation = 'refund', jsonb_typeof(body) = 'object' AND body->>'object' = 'refund', false)
$$;

CREATE FUNCTION public.sweeper_ensure_day_partitions(p_parent regclass, p_from date, p_to date) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public'
    AS $$
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

CREATE FUNCTION public.sweeper_file_claim_keys() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public'
    AS $$
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

CREATE FUNCTION public.sweeper_forbid_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = '55000';
END $$;

CREATE FUNCTION public.sweeper_forbid_claim_identity_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF NEW.tenant_id IS DISTINCT FROM OLD.tenant_id OR NEW.key IS DISTINCT FROM OLD.key
     OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
    RAISE EXCEPTION 'a claim''s tenant_id, key and created_at never change' USING ERRCODE = '55000';
  END IF;
  RETURN NEW;
END $$;

CREATE FUNCTION public.sweeper_forget_claim_keys() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public'
    AS $$
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

CREATE FUNCTION public.sweeper_forget_stale_claim_keys(p_tenant_ids text[], p_keys text[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public'
    AS $$
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

CREATE FUNCTION public.sweeper_guard_claim_partition(p_partition regclass, p_day date) RETURNS void
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION public.sweeper_note_charge_keys() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public'
    AS $$
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

CREATE FUNCTION public.sweeper_note_charge_references() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public'
    AS $$
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

CREATE FUNCTION public.sweeper_recreated_fingerprint() RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 'sweeper:recreated' $$;

CREATE FUNCTION public.sweeper_take_claim(p_tenant_id text, p_key text, p_fingerprint text, p_downstream_key text, p_now timestamp with time zone, p_lease interval, p_account_id text, p_amount bigint, p_currency text, p_reference text DEFAULT NULL::text, p_operation text DEFAULT NULL::text, p_target text DEFAULT NULL::text) RETURNS TABLE(outcome text, attempt integer, status text, created_at timestamp with time zone, locked_until timestamp with time zone, response_status integer, response_body jsonb, downstream_key text)
    LANGUAGE plpgsql
    AS $$
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

CREATE TABLE public.alert_state (
    sink text NOT NULL,
    account text NOT NULL,
    category text NOT NULL,
    last_count integer NOT NULL,
    last_sent_at timestamp with time zone NOT NULL,
    CONSTRAINT alert_state_last_count_check CHECK ((last_count >= 0))
);

CREATE TABLE public.claim_outcomes (
    tenant_id text NOT NULL,
    day date NOT NULL,
    outcome text NOT NULL,
    count bigint NOT NULL,
    CONSTRAINT claim_outcomes_count_check CHECK ((count >= 0)),
    CONSTRAINT claim_outcomes_outcome_check CHECK ((outcome = ANY (ARRAY['created'::text, 'replayed'::text, 'in_progress'::text, 'fingerprint_mismatch'::text, 'stolen'::text, 'quota_exceeded'::text])))
);

CREATE TABLE public.claim_quota (
    tenant_id text NOT NULL,
    minute timestamp with time zone NOT NULL,
    count integer NOT NULL,
    CONSTRAINT claim_quota_count_check CHECK ((count >= 0))
);

CREATE TABLE public.idempotency_key_directory (
    tenant_id text NOT NULL,
    key text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE public.idempotency_keys (
    tenant_id text NOT NULL,
    key text NOT NULL,
    request_fingerprint text NOT NULL,
    status text NOT NULL,
    locked_until timestamp with time zone,
    attempt integer DEFAULT 1 NOT NULL,
    downstream_key text NOT NULL,
    account_id text,
    response_status integer,
    response_body jsonb,
    created_at timestamp with time zone NOT NULL,
    completed_at timestamp with time zone,
    updated_at timestamp with time zone NOT NULL,
    amount bigint,
    currency text,
    response_outcome text,
    account text GENERATED ALWAYS AS (COALESCE(account_id, 'platform'::text)) STORED,
    reference text,
    operation text,
    target text,
    CONSTRAINT idempotency_keys_amount_check CHECK ((amount > 0)),
    CONSTRAINT idempotency_keys_attempt_check CHECK ((attempt >= 1)),
    CONSTRAINT idempotency_keys_check CHECK (((status <> 'in_flight'::text) OR (locked_until IS NOT NULL))),
    CONSTRAINT idempotency_keys_check1 CHECK (((status <> 'completed'::text) OR ((response_status IS NOT NULL) AND (completed_at IS NOT NULL)))),
    CONSTRAINT idempotency_keys_currency_check CHECK ((currency ~ '^[a-z]{3}$'::text)),
    CONSTRAINT idempotency_keys_downstream_key_check CHECK (((length(downstream_key) >= 1) AND (length(downstream_key) <= 255))),
    CONSTRAINT idempotency_keys_operation_check CHECK ((operation = ANY (ARRAY['charge'::text, 'refund'::text]))),
    CONSTRAINT idempotency_keys_response_outcome_check CHECK ((response_outcome = ANY (ARRAY['success'::text, 'pending_action'::text, 'declined'::text, 'rejected'::text]))),
    CONSTRAINT idempotency_keys_status_check CHECK ((status = ANY (ARRAY['in_flight'::text, 'completed'::text, 'released'::text])))
)
PARTITION BY RANGE (created_at);

CREATE TABLE public.payment_refunds (
    id bigint NOT NULL,
    refund_id text NOT NULL,
    charge_id text NOT NULL,
    tenant_id text,
    idempotency_key text,
    account_id text,
    amount bigint NOT NULL,
    currency character(3) NOT NULL,
    status text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    account text GENERATED ALWAYS AS (COALESCE(account_id, 'platform'::text)) STORED,
    CONSTRAINT payment_refunds_amount_check CHECK ((amount >= 0)),
    CONSTRAINT payment_refunds_currency_check CHECK (((currency)::text = lower((currency)::text))),
    CONSTRAINT payment_refunds_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'requires_action'::text, 'succeeded'::text, 'failed'::text, 'canceled'::text])))
);

ALTER TABLE public.payment_refunds ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.payment_refunds_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.payments (
    id bigint NOT NULL,
    charge_id text NOT NULL,
    tenant_id text,
    idempotency_key text,
    payment_intent_id text,
    account_id text,
    amount bigint NOT NULL,
    currency character(3) NOT NULL,
    status text NOT NULL,
    amount_refunded bigint DEFAULT 0 NOT NULL,
    disputed boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    account text GENERATED ALWAYS AS (COALESCE(account_id, 'platform'::text)) STORED,
    reference text,
    dispute_status text,
    fee bigint,
    net bigint,
    settlement_currency text,
    exchange_rate numeric,
    CONSTRAINT payments_amount_check CHECK ((amount >= 0)),
    CONSTRAINT payments_amount_refunded_check CHECK ((amount_refunded >= 0)),
    CONSTRAINT payments_currency_check CHECK (((currency)::text = lower((currency)::text))),
    CONSTRAINT payments_status_check CHECK ((status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'pending'::text])))
);

ALTER TABLE public.payments ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.payments_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.recon_accounts (
    account text NOT NULL,
    first_seen_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    active boolean NOT NULL,
    inactive_since timestamp with time zone,
    inactive_reason text,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT recon_accounts_account_check CHECK ((account ~ '^acct_[A-Za-z0-9]+$'::text)),
    CONSTRAINT recon_accounts_check CHECK (((active = (inactive_since IS NULL)) AND (active = (inactive_reason IS NULL)))),
    CONSTRAINT recon_accounts_inactive_reason_check CHECK ((inactive_reason = ANY (ARRAY['unlisted'::text, 'revoked'::text])))
);

CREATE TABLE public.recon_deep_reads (
    account text NOT NULL,
    last_at timestamp with time zone NOT NULL,
    window_from timestamp with time zone NOT NULL,
    window_to timestamp with time zone NOT NULL,
    hours integer NOT NULL,
    differing integer NOT NULL,
    run_id text NOT NULL
);

CREATE TABLE public.recon_event_cursors (
    account text NOT NULL,
    cursor timestamp with time zone NOT NULL,
    run_id text NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE public.recon_finding_charges (
    finding_id bigint NOT NULL,
    account text NOT NULL,
    charge_id text NOT NULL
);

CREATE TABLE public.recon_findings (
    id bigint NOT NULL,
    category text NOT NULL,
    account text NOT NULL,
    subject text NOT NULL,
    charge_id text,
    tenant_id text,
    idempotency_key text,
    state text NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    first_seen_run text NOT NULL,
    last_seen_run text NOT NULL,
    first_seen_at timestamp with time zone NOT NULL,
    last_seen_at timestamp with time zone NOT NULL,
    closed_at timestamp with time zone,
    closed_by text,
    note text,
    reference text,
    CONSTRAINT recon_findings_state_check CHECK ((state = ANY (ARRAY['open'::text, 'repaired'::text, 'resolved'::text, 'ignored'::text])))
);

ALTER TABLE public.recon_findings ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.recon_findings_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.recon_payout_accounts (
    account text NOT NULL,
    since timestamp with time zone NOT NULL,
    unpaid_judged_to timestamp with time zone NOT NULL,
    listed_at timestamp with time zone NOT NULL,
    run_id text NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE public.recon_payouts (
    payout_id text NOT NULL,
    account text NOT NULL,
    itemised boolean NOT NULL,
    created timestamp with time zone NOT NULL,
    arrival_date timestamp with time zone NOT NULL,
    currency character(3) NOT NULL,
    amount bigint NOT NULL,
    status text NOT NULL,
    transactions integer,
    charges bigint,
    refunds bigint,
    disputes bigint,
    fees bigint,
    other bigint,
    net bigint,
    residual bigint,
    run_id text NOT NULL,
    reconciled_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT recon_payouts_check CHECK (((NOT itemised) OR ((net IS NOT NULL) AND (residual IS NOT NULL) AND (residual = (amount - net)))))
);

CREATE TABLE public.recon_plan_events (
    id bigint NOT NULL,
    plan_id text NOT NULL,
    action text NOT NULL,
    actor text NOT NULL,
    at timestamp with time zone NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT recon_plan_events_action_check CHECK ((action = ANY (ARRAY['planned'::text, 'approved'::text, 'applied'::text])))
);

ALTER TABLE public.recon_plan_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.recon_plan_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.recon_plan_steps (
    plan_id text NOT NULL,
    step integer NOT NULL,
    account text NOT NULL,
    category text NOT NULL,
    subject text NOT NULL,
    kind text NOT NULL,
    moves_money boolean NOT NULL,
    state text NOT NULL,
    reason text,
    finding_id bigint,
    decided_at timestamp with time zone,
    decided_by text,
    CONSTRAINT recon_plan_steps_check CHECK (((state = 'planned'::text) = (decided_at IS NULL))),
    CONSTRAINT recon_plan_steps_state_check CHECK ((state = ANY (ARRAY['planned'::text, 'applied'::text, 'refused'::text]))),
    CONSTRAINT recon_plan_steps_step_check CHECK ((step >= 1))
);

CREATE TABLE public.recon_plans (
    id text NOT NULL,
    author text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    mode text NOT NULL,
    accounts text[] NOT NULL,
    digest text NOT NULL,
    body jsonb NOT NULL,
    steps integer NOT NULL,
    money_steps integer NOT NULL,
    approved_by text,
    approved_at timestamp with time zone,
    CONSTRAINT recon_plans_check CHECK (((approved_by IS NULL) = (approved_at IS NULL))),
    CONSTRAINT recon_plans_mode_check CHECK ((mode = ANY (ARRAY['run'::text, 'backfill'::text]))),
    CONSTRAINT recon_plans_money_steps_check CHECK ((money_steps >= 0)),
    CONSTRAINT recon_plans_steps_check CHECK ((steps >= 0))
);

CREATE TABLE public.recon_refund_cursors (
    account text NOT NULL,
    cursor timestamp with time zone NOT NULL,
    run_id text NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE public.recon_refunds (
    charge_id text NOT NULL,
    account text NOT NULL,
    kept_charge_id text NOT NULL,
    finding_id bigint NOT NULL,
    amount bigint NOT NULL,
    currency text NOT NULL,
    idempotency_key text NOT NULL,
    state text NOT NULL,
    stripe_refund_id text,
    reason text,
    run_id text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT recon_refunds_amount_check CHECK ((amount > 0)),
    CONSTRAINT recon_refunds_check CHECK ((charge_id <> kept_charge_id)),
    CONSTRAINT recon_refunds_check1 CHECK (((state <> 'refunded'::text) OR (stripe_refund_id IS NOT NULL))),
    CONSTRAINT recon_refunds_state_check CHECK ((state = ANY (ARRAY['intent'::text, 'refunded'::text, 'cancelled'::text])))
);

CREATE TABLE public.recon_repairs (
    id bigint NOT NULL,
    finding_id bigint NOT NULL,
    run_id text,
    action text NOT NULL,
    before jsonb,
    after jsonb,
    actor text NOT NULL,
    at timestamp with time zone NOT NULL
);

ALTER TABLE public.recon_repairs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.recon_repairs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.recon_runs (
    id text NOT NULL,
    mode text NOT NULL,
    account text NOT NULL,
    shard text DEFAULT ''::text NOT NULL,
    window_from timestamp with time zone NOT NULL,
    window_to timestamp with time zone NOT NULL,
    status text NOT NULL,
    checkpoint timestamp with time zone NOT NULL,
    charges_scanned bigint DEFAULT 0 NOT NULL,
    findings jsonb DEFAULT '{}'::jsonb NOT NULL,
    repaired jsonb DEFAULT '{}'::jsonb NOT NULL,
    unreconciled integer,
    error text,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    changes jsonb,
    CONSTRAINT recon_runs_check CHECK ((window_from < window_to)),
    CONSTRAINT recon_runs_mode_check CHECK ((mode = ANY (ARRAY['run'::text, 'backfill'::text]))),
    CONSTRAINT recon_runs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text, 'interrupted'::text])))
);

CREATE TABLE public.recon_watermarks (
    account text NOT NULL,
    shard text DEFAULT ''::text NOT NULL,
    watermark timestamp with time zone NOT NULL,
    run_id text NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE TABLE public.stripe_balance_transactions (
    account text NOT NULL,
    txn_id text NOT NULL,
    payout_id text NOT NULL,
    type text NOT NULL,
    reporting_category text NOT NULL,
    amount bigint NOT NULL,
    fee bigint NOT NULL,
    net bigint NOT NULL,
    currency character(3) NOT NULL,
    exchange_rate numeric,
    source_id text,
    source_charge_id text,
    created timestamp with time zone NOT NULL,
    fetched_at timestamp with time zone NOT NULL
);

CREATE TABLE public.stripe_charge_keys (
    tenant_id text NOT NULL,
    idempotency_key text NOT NULL,
    account text NOT NULL,
    charge_id text NOT NULL,
    created timestamp with time zone NOT NULL
);

CREATE TABLE public.stripe_charge_references (
    account text NOT NULL,
    tenant_id text NOT NULL,
    reference text NOT NULL,
    created timestamp with time zone NOT NULL,
    charge_id text NOT NULL
);

CREATE TABLE public.stripe_charges (
    account text NOT NULL,
    charge_id text NOT NULL,
    created timestamp with time zone NOT NULL,
    amount bigint NOT NULL,
    amount_captured bigint NOT NULL,
    amount_refunded bigint NOT NULL,
    currency character(3) NOT NULL,
    status text NOT NULL,
    captured boolean NOT NULL,
    refunded boolean NOT NULL,
    disputed boolean NOT NULL,
    payment_intent_id text,
    tenant_id text,
    idempotency_key text,
    livemode boolean NOT NULL,
    fetched_at timestamp with time zone NOT NULL,
    customer text,
    payment_method text,
    reference text,
    card_fingerprint text
)
PARTITION BY RANGE (created);

CREATE TABLE public.stripe_disputes (
    account text NOT NULL,
    dispute_id text NOT NULL,
    charge_id text NOT NULL,
    status text NOT NULL,
    as_of timestamp with time zone NOT NULL,
    stage smallint NOT NULL,
    event_id text NOT NULL
);

CREATE TABLE public.stripe_payouts (
    account text NOT NULL,
    payout_id text NOT NULL,
    created timestamp with time zone NOT NULL,
    arrival_date timestamp with time zone NOT NULL,
    amount bigint NOT NULL,
    currency character(3) NOT NULL,
    automatic boolean NOT NULL,
    status text NOT NULL,
    reconciliation_status text NOT NULL,
    failure_code text,
    fetched_at timestamp with time zone NOT NULL
);

CREATE TABLE public.stripe_refunds (
    account text NOT NULL,
    refund_id text NOT NULL,
    charge_id text NOT NULL,
    created timestamp with time zone NOT NULL,
    amount bigint NOT NULL,
    currency character(3) NOT NULL,
    status text NOT NULL,
    failure_reason text,
    tenant_id text,
    idempotency_key text,
    fetched_at timestamp with time zone NOT NULL
);

CREATE TABLE public.sweeper_migrations (
    id integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY public.alert_state
    ADD CONSTRAINT alert_state_pkey PRIMARY KEY (sink, account, category);

ALTER TABLE ONLY public.claim_outcomes
    ADD CONSTRAINT claim_outcomes_pkey PRIMARY KEY (tenant_id, day, outcome);

ALTER TABLE ONLY public.claim_quota
    ADD CONSTRAINT claim_quota_pkey PRIMARY KEY (tenant_id, minute);

ALTER TABLE ONLY public.idempotency_key_directory
    ADD CONSTRAINT idempotency_key_directory_pkey PRIMARY KEY (tenant_id, key);

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (tenant_id, key, created_at);

ALTER TABLE ONLY public.payment_refunds
    ADD CONSTRAINT payment_refunds_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.payment_refunds
    ADD CONSTRAINT payment_refunds_refund_id_key UNIQUE (refund_id);

ALTER TABLE ONLY public.payments
    ADD CONSTRAINT payments_charge_id_key UNIQUE (charge_id);

ALTER TABLE ONLY public.payments
    ADD CONSTRAINT payments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.recon_accounts
    ADD CONSTRAINT recon_accounts_pkey PRIMARY KEY (account);

ALTER TABLE ONLY public.recon_deep_reads
    ADD CONSTRAINT recon_deep_reads_pkey PRIMARY KEY (account);

ALTER TABLE ONLY public.recon_event_cursors
    ADD CONSTRAINT recon_event_cursors_pkey PRIMARY KEY (account);

ALTER TABLE ONLY public.recon_finding_charges
    ADD CONSTRAINT recon_finding_charges_pkey PRIMARY KEY (account, charge_id, finding_id);

ALTER TABLE ONLY public.recon_findings
    ADD CONSTRAINT recon_findings_category_account_subject_key UNIQUE (category, account, subject);

ALTER TABLE ONLY public.recon_findings
    ADD CONSTRAINT recon_findings_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.recon_payout_accounts
    ADD CONSTRAINT recon_payout_accounts_pkey PRIMARY KEY (account);

ALTER TABLE ONLY public.recon_payouts
    ADD CONSTRAINT recon_payouts_pkey PRIMARY KEY (payout_id);

ALTER TABLE ONLY public.recon_plan_events
    ADD CONSTRAINT recon_plan_events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.recon_plan_steps
    ADD CONSTRAINT recon_plan_steps_pkey PRIMARY KEY (plan_id, step);

ALTER TABLE ONLY public.recon_plans
    ADD CONSTRAINT recon_plans_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.recon_refund_cursors
    ADD CONSTRAINT recon_refund_cursors_pkey PRIMARY KEY (account);

ALTER TABLE ONLY public.recon_refunds
    ADD CONSTRAINT recon_refunds_pkey PRIMARY KEY (charge_id);

ALTER TABLE ONLY public.recon_repairs
    ADD CONSTRAINT recon_repairs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.recon_runs
    ADD CONSTRAINT recon_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.recon_watermarks
    ADD CONSTRAINT recon_watermarks_pkey PRIMARY KEY (account, shard);

ALTER TABLE ONLY public.stripe_balance_transactions
    ADD CONSTRAINT stripe_balance_transactions_pkey PRIMARY KEY (txn_id);

ALTER TABLE ONLY public.stripe_charge_keys
    ADD CONSTRAINT stripe_charge_keys_pkey PRIMARY KEY (tenant_id, idempotency_key, account, charge_id, created);

ALTER TABLE ONLY public.stripe_charge_references
    ADD CONSTRAINT stripe_charge_references_pkey PRIMARY KEY (account, tenant_id, reference, created, charge_id);

ALTER TABLE ONLY public.stripe_charges
    ADD CONSTRAINT stripe_charges_pkey PRIMARY KEY (charge_id, created);

ALTER TABLE ONLY public.stripe_disputes
    ADD CONSTRAINT stripe_disputes_pkey PRIMARY KEY (dispute_id);

ALTER TABLE ONLY public.stripe_payouts
    ADD CONSTRAINT stripe_payouts_pkey PRIMARY KEY (payout_id);

ALTER TABLE ONLY public.stripe_refunds
    ADD CONSTRAINT stripe_refunds_pkey PRIMARY KEY (refund_id);

ALTER TABLE ONLY public.sweeper_migrations
    ADD CONSTRAINT sweeper_migrations_pkey PRIMARY KEY (id);

CREATE INDEX claim_outcomes_day ON public.claim_outcomes USING btree (day);

CREATE INDEX idempotency_keys_account_updated_at ON ONLY public.idempotency_keys USING btree (account, updated_at);

CREATE INDEX idempotency_keys_answer_charge ON ONLY public.idempotency_keys USING btree (public.sweeper_answer_charge(response_body)) WHERE (public.sweeper_answer_charge(response_body) IS NOT NULL);

CREATE INDEX idempotency_keys_in_flight ON ONLY public.idempotency_keys USING btree (locked_until) WHERE (status = 'in_flight'::text);

CREATE INDEX idempotency_keys_refund_claims ON ONLY public.idempotency_keys USING btree (account, updated_at) WHERE public.sweeper_claim_is_refund(operation, response_body);

CREATE INDEX idempotency_keys_tenant_account ON ONLY public.idempotency_keys USING btree (tenant_id, account_id);

CREATE INDEX payment_refunds_account_created_at ON public.payment_refunds USING btree (account, created_at);

CREATE INDEX payment_refunds_charge ON public.payment_refunds USING btree (charge_id);

CREATE INDEX payment_refunds_tenant_key ON public.payment_refunds USING btree (tenant_id, idempotency_key);

CREATE INDEX payments_account_created_at ON public.payments USING btree (account, created_at);

CREATE INDEX payments_tenant_account ON public.payments USING btree (tenant_id, account_id);

CREATE INDEX payments_tenant_key ON public.payments USING btree (tenant_id, idempotency_key);

CREATE INDEX recon_accounts_inactive ON public.recon_accounts USING btree (inactive_since DESC) WHERE (NOT active);

CREATE INDEX recon_finding_charges_finding ON public.recon_finding_charges USING btree (finding_id);

CREATE INDEX recon_findings_open ON public.recon_findings USING btree (account, category) WHERE (state = 'open'::text);

CREATE INDEX recon_findings_open_charge ON public.recon_findings USING btree (account, charge_id) WHERE (state = 'open'::text);

CREATE INDEX recon_findings_open_reference ON public.recon_findings USING btree (account, reference) WHERE ((state = 'open'::text) AND (reference IS NOT NULL));

CREATE INDEX recon_findings_open_subject ON public.recon_findings USING btree ((((account || chr(31)) || subject))) WHERE (state = 'open'::text);

CREATE INDEX recon_payouts_account_arrival ON public.recon_payouts USING btree (account, arrival_date);

CREATE INDEX recon_plan_events_plan ON public.recon_plan_events USING btree (plan_id);

CREATE INDEX recon_plans_created ON public.recon_plans USING btree (created_at DESC, id DESC);

CREATE INDEX recon_refunds_finding ON public.recon_refunds USING btree (finding_id);

CREATE INDEX recon_refunds_open ON public.recon_refunds USING btree (account) WHERE (state = 'intent'::text);

CREATE INDEX recon_repairs_finding ON public.recon_repairs USING btree (finding_id);

CREATE INDEX recon_runs_account_checkpoint ON public.recon_runs USING btree (account, checkpoint);

CREATE INDEX recon_runs_account_started ON public.recon_runs USING btree (account, started_at DESC);

CREATE INDEX stripe_balance_transactions_payout ON public.stripe_balance_transactions USING btree (payout_id);

CREATE INDEX stripe_balance_transactions_source ON public.stripe_balance_transactions USING btree (source_id) WHERE (source_id IS NOT NULL);

CREATE INDEX stripe_charges_account_created ON ONLY public.stripe_charges USING btree (account, created);

CREATE INDEX stripe_disputes_charge ON public.stripe_disputes USING btree (charge_id);

CREATE INDEX stripe_payouts_account_created ON public.stripe_payouts USING btree (account, created);

CREATE INDEX stripe_refunds_account_created ON public.stripe_refunds USING btree (account, created);

CREATE INDEX stripe_refunds_key ON public.stripe_refunds USING btree (account, tenant_id, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE TRIGGER idempotency_keys_deleted AFTER DELETE ON public.idempotency_keys REFERENCING OLD TABLE AS old_claims FOR EACH STATEMENT EXECUTE FUNCTION public.sweeper_forget_claim_keys();

CREATE TRIGGER idempotency_keys_identity_is_immutable BEFORE UPDATE ON public.idempotency_keys FOR EACH ROW EXECUTE FUNCTION public.sweeper_forbid_claim_identity_change();

CREATE TRIGGER idempotency_keys_truncated AFTER TRUNCATE ON public.idempotency_keys FOR EACH STATEMENT EXECUTE FUNCTION public.sweeper_forget_claim_keys();

CREATE TRIGGER idempotency_keys_unique_across_partitions AFTER INSERT ON public.idempotency_keys REFERENCING NEW TABLE AS new_claims FOR EACH STATEMENT EXECUTE FUNCTION public.sweeper_file_claim_keys();

CREATE TRIGGER recon_plan_events_append_only BEFORE DELETE OR UPDATE ON public.recon_plan_events FOR EACH ROW EXECUTE FUNCTION public.sweeper_forbid_change();

CREATE TRIGGER recon_repairs_append_only BEFORE DELETE OR UPDATE ON public.recon_repairs FOR EACH ROW EXECUTE FUNCTION public.sweeper_forbid_change();

CREATE TRIGGER stripe_charges_keys_inserted AFTER INSERT ON public.stripe_charges REFERENCING NEW TABLE AS landed FOR EACH STATEMENT EXECUTE FUNCTION public.sweeper_note_charge_keys();

CREATE TRIGGER stripe_charges_keys_updated AFTER UPDATE ON public.stripe_charges REFERENCING NEW TABLE AS landed FOR EACH STATEMENT EXECUTE FUNCTION public.sweeper_note_charge_keys();

CREATE TRIGGER stripe_charges_references_inserted AFTER INSERT ON public.stripe_charges REFERENCING NEW TABLE AS landed FOR EACH STATEMENT EXECUTE FUNCTION public.sweeper_note_charge_references();

CREATE TRIGGER stripe_charges_references_updated AFTER UPDATE ON public.stripe_charges REFERENCING NEW TABLE AS landed FOR EACH STATEMENT EXECUTE FUNCTION public.sweeper_note_charge_references();

ALTER TABLE ONLY public.recon_finding_charges
    ADD CONSTRAINT recon_finding_charges_finding_id_fkey FOREIGN KEY (finding_id) REFERENCES public.recon_findings(id);

REVOKE ALL ON FUNCTION public.sweeper_ensure_day_partitions(p_parent regclass, p_from date, p_to date) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.sweeper_guard_claim_partition(p_partition regclass, p_day date) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.sweeper_note_charge_references() FROM PUBLIC;
