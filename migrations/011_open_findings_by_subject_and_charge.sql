-- The open findings of given subjects, and of given charges, found without reading every
-- open finding of the account (README "Throughput", ninth pass). Their number grows with
-- the history (and with every finding nobody closes); what is asked of them does not.
--
-- By subject: a batch closes the open findings of the subjects it judged and no longer
-- finds (closeHealedFindings). recon_findings_open is by (account, category), so that
-- statement read every open finding of the account for every batch: a scheduled run over
-- a long history spent most of its SQL there (0.34–0.90 s of 1.05–1.74 s over a
-- million-charge history, against nothing measurable over 10,000). Now it probes this
-- index once per subject judged, whatever the history holds.
-- Built inside the migration's transaction: writes to recon_findings (a sweep's) wait
-- while it builds, about 0.15 s per 100,000 findings of which 80,000 open (measured).
CREATE INDEX recon_findings_open_subject ON recon_findings (account, subject) WHERE state = 'open';

-- The completeness measure after every run asks, of each charge of the last days, whether
-- an open finding holds it; it read every open finding of the account instead (36–717 ms
-- per run over the same history, its pages cold or warm).
CREATE INDEX recon_findings_open_charge ON recon_findings (account, charge_id) WHERE state = 'open';
