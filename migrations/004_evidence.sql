-- Claims record the request they stand for and a machine-readable outcome of their
-- stored answer, so every repair can check a charge against the request; the mirror
-- keeps what tells two charges apart (customer, payment method); refunds go through
-- an outbox so a crash or a rerun never refunds twice. See docs/judgement.md.

-- The request a claim stands for. NULL for rows written by other writers (older
-- code, a person, an adopted claims table): the sweep then repairs from a charge
-- only when it is the only succeeded charge naming the key.
ALTER TABLE idempotency_keys
  ADD COLUMN amount bigint CHECK (amount > 0),
  ADD COLUMN currency text CHECK (currency ~ '^[a-z]{3}$'),
  -- What the stored answer means, independent of its HTTP status:
  --   success         a charge was made (succeeded, or pending at Stripe)
  --   pending_action  no charge yet: the customer must act (3-D Secure)
  --   declined        the card was declined (a failed charge may exist)
  --   rejected        Stripe refused the request (no charge)
  -- NULL (older rows): any 2xx whose body names a charge is a success.
  ADD COLUMN response_outcome text CHECK (response_outcome IN ('success', 'pending_action', 'declined', 'rejected'));

-- "Has this tenant ever claimed on this account?": metadata alone never creates a
-- claim for a tenant on an account where it has no claim history.
CREATE INDEX idempotency_keys_tenant_account ON idempotency_keys (tenant_id, account_id);
CREATE INDEX payments_tenant_account ON payments (tenant_id, account_id);

-- The claim take, now with the request's amount and currency. A claim the sweep
-- re-created accepts any body from its own account, but not another amount or
-- currency than the charge it was re-created from.
CREATE FUNCTION sweeper_take_claim(
  p_tenant_id text, p_key text, p_fingerprint text, p_downstream_key text,
  p_now timestamptz, p_lease interval, p_account_id text, p_amount bigint, p_currency text
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

-- The seven-argument take stays for payment code deployed before this migration
-- (a rolling deploy migrates first): it records no request.
CREATE OR REPLACE FUNCTION sweeper_take_claim(
  p_tenant_id text, p_key text, p_fingerprint text, p_downstream_key text,
  p_now timestamptz, p_lease interval, p_account_id text
) RETURNS TABLE (
  outcome text, attempt int, status text, created_at timestamptz, locked_until timestamptz,
  response_status int, response_body jsonb, downstream_key text
) LANGUAGE sql AS $$
  SELECT * FROM sweeper_take_claim(p_tenant_id, p_key, p_fingerprint, p_downstream_key, p_now, p_lease,
                                   p_account_id, NULL::bigint, NULL::text)
$$;

-- Re-creating a claim now records the request it stands for (the charge's amount and
-- currency) and the outcome of its answer.
DROP FUNCTION sweeper_recreate_claim(text, text, text, text, timestamptz, int, jsonb, timestamptz);
CREATE FUNCTION sweeper_recreate_claim(
  p_tenant_id text, p_key text, p_downstream_key text, p_account_id text,
  p_created_at timestamptz, p_response_status int, p_response_body jsonb, p_now timestamptz,
  p_amount bigint, p_currency text, p_outcome text
) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(sweeper_claim_lock_key(p_tenant_id, p_key));
  IF EXISTS (SELECT 1 FROM idempotency_keys WHERE tenant_id = p_tenant_id AND key = p_key) THEN
    RETURN false;
  END IF;
  INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, attempt,
                                downstream_key, account_id, response_status, response_body, response_outcome,
                                amount, currency, created_at, completed_at, updated_at)
  VALUES (p_tenant_id, p_key, sweeper_recreated_fingerprint(), 'completed', NULL, 1,
          p_downstream_key, p_account_id, p_response_status, p_response_body, p_outcome,
          p_amount, p_currency, p_created_at, p_now, p_now);
  RETURN true;
END $$;

-- What tells two charges of one key apart, for --refund-duplicates: only an extra
-- identical to the kept charge (amount, currency, customer, payment method) is refunded.
ALTER TABLE stripe_charges
  ADD COLUMN customer text,
  ADD COLUMN payment_method text;

-- The refund outbox. An intent is committed before its POST, and completed after;
-- every run first settles open intents against Stripe's own list of the charge's
-- refunds, so a crash anywhere leaves an intent that the next run finishes, and a
-- refund already made is never POSTed again.
CREATE TABLE recon_refunds (
  charge_id        text        PRIMARY KEY,   -- the extra charge refunded
  account          text        NOT NULL,
  kept_charge_id   text        NOT NULL,
  finding_id       bigint      NOT NULL REFERENCES recon_findings (id),
  amount           bigint      NOT NULL CHECK (amount > 0),
  currency         text        NOT NULL,
  idempotency_key  text        NOT NULL,      -- sent to Stripe with the POST
  state            text        NOT NULL CHECK (state IN ('intent', 'refunded', 'cancelled')),
  stripe_refund_id text,
  reason           text,                      -- why cancelled, or how it was found refunded
  run_id           text        NOT NULL REFERENCES recon_runs (id),
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  CHECK (charge_id <> kept_charge_id),
  CHECK (state <> 'refunded' OR stripe_refund_id IS NOT NULL)
);
CREATE INDEX recon_refunds_open ON recon_refunds (account) WHERE state = 'intent';
CREATE INDEX recon_refunds_finding ON recon_refunds (finding_id);
