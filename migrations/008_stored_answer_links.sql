-- A charge without attribution metadata is still a key's evidence when that key's claim
-- stored an answer naming it (docs/judgement.md "Identities and slices"). The sweep looks those claims
-- up by the charge id, for the charges of each slice; this index makes that a probe per
-- charge rather than a scan of the claim store. Partial: only completed claims whose
-- answer names a charge carry an entry, so taking a claim costs nothing more.
CREATE INDEX idempotency_keys_answer_charge ON idempotency_keys ((response_body->>'charge'))
  WHERE response_body->>'charge' IS NOT NULL;
