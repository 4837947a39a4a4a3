-- What each alert sink was last told about each (account, category), so alerts
-- fire on change and repeat at most every SWEEPER_ALERT_REPEAT instead of on every
-- run. A row is written only after a delivery succeeded: a failed delivery leaves
-- the previous row, and the next run sees the same change and tries again.

CREATE TABLE alert_state (
  sink         text        NOT NULL,   -- 'slack' | 'pagerduty' | 'webhook'
  account      text        NOT NULL,
  category     text        NOT NULL,
  -- Open findings of the category as last delivered (or, for a quiet decrease, last seen).
  last_count   int         NOT NULL CHECK (last_count >= 0),
  last_sent_at timestamptz NOT NULL,
  PRIMARY KEY (sink, account, category)
);
