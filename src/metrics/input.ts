import type { AccountCompleteness } from '../sweep/completeness.js';
import type { SweepReport } from '../sweep/sweep.js';
import type { SweepStatus } from '../sweep/status.js';

/** The parts of a run's report that metrics use. */
export type SweepReportLike = Pick<
  SweepReport,
  'account' | 'mode' | 'dry_run' | 'status' | 'charges_scanned' | 'deferred_keys' | 'repaired' | 'duration_ms'
>;

export interface MetricsInput {
  /** This process's reports, one per account swept. */
  reports: readonly SweepReportLike[];
  /** The database's view after the run (`readStatus`): open findings, watermarks, claim store. */
  status: Pick<SweepStatus, 'watermarks' | 'last_runs' | 'open_findings' | 'claims'> &
    Partial<Pick<SweepStatus, 'claim_outcomes' | 'accounts'>>;
  /** Connected accounts inactive now (no longer listed, or 403), each with why. */
  inactiveAccounts?: ReadonlyArray<{ account: string; reason: 'unlisted' | 'revoked' }>;
  /** Stripe 429 answers seen by this process during the run. */
  stripe429s: number;
  now: Date;
  /** Configured accounts: each gets zero-valued series before it has findings or a watermark. */
  accounts?: readonly string[];
  /** Last successful scheduled run per account (`readLastSuccessByAccount`), older than `status.last_runs` may show. */
  lastSuccessAt?: Readonly<Record<string, Date>>;
  /** Scheduled runs only: accounts this run skipped because a backfill had them. */
  skipped?: readonly string[];
  /** How complete reconciliation is per account, read after the run (docs/judgement.md "Completeness"). */
  completeness?: readonly AccountCompleteness[];
}
