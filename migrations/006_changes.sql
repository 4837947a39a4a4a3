-- Late changes (docs/judgement.md "Late changes"): per account, how far Stripe's Events API has
-- been read, and when the periodic deep re-read last compared the mirror with Stripe.

CREATE TABLE recon_event_cursors (
  account     text        PRIMARY KEY,
  -- Every event created at or before this instant was read (up to now − SWEEPER_EVENTS_LAG
  -- when it was read); the next read starts here, minus the overlap.
  cursor      timestamptz NOT NULL,
  run_id      text        NOT NULL REFERENCES recon_runs (id),
  updated_at  timestamptz NOT NULL
);

CREATE TABLE recon_deep_reads (
  account       text        PRIMARY KEY,
  last_at       timestamptz NOT NULL,
  -- What the last one covered and found, for `status`.
  window_from   timestamptz NOT NULL,
  window_to     timestamptz NOT NULL,
  hours         int         NOT NULL,
  differing     int         NOT NULL,
  run_id        text        NOT NULL REFERENCES recon_runs (id)
);

-- A run's late-change work, for `status` and --json: events read, charges re-judged,
-- whether the events were too old and the charges were re-listed instead.
ALTER TABLE recon_runs ADD COLUMN changes jsonb;
