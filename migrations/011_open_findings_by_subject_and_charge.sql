-- The open findings of given subjects, and of given charges, found without reading every
-- open finding of the account (docs/performance.md "The throughput design"). Their number
-- grows with the history (and with every finding nobody closes); what is asked of them
-- does not.
--
-- By subject: a batch closes the open findings of the subjects it judged and no longer
-- finds (closeHealedFindings). recon_findings_open is by (account, category), so that
-- statement read every open finding of the account for every batch: over a long history,
-- most of a scheduled run's SQL. Now it probes this index once per subject judged,
-- whatever the history holds.
-- Built inside the migration's transaction: writes to recon_findings (a sweep's) wait
-- while it builds.
CREATE INDEX recon_findings_open_subject ON recon_findings (account, subject) WHERE state = 'open';

-- The completeness measure after every run asks, of each charge of the last days, whether
-- an open finding holds it, instead of reading every open finding of the account.
CREATE INDEX recon_findings_open_charge ON recon_findings (account, charge_id) WHERE state = 'open';
