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

-- Claims by the charge their answer names: a charge without metadata is its key's evidence
-- when a claim's stored answer names it. Partial, so claims whose answer names no charge
-- cost nothing more.
DROP INDEX idempotency_keys_answer_charge;
CREATE INDEX idempotency_keys_answer_charge ON idempotency_keys (sweeper_answer_charge(response_body))
  WHERE sweeper_answer_charge(response_body) IS NOT NULL;
