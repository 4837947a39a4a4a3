import type { Pool } from '../db/pool.js';
import type { Logger } from '../log.js';

/**
 * How the claim library's takes end, per tenant and UTC day, in the database
 * (claim_outcomes), so the counts sum across every instance of the application:
 * `sweeper status` and the metrics show them, and the sweep's `unstable_keys` asks whether
 * a tenant's retries are ever replayed. Counted in memory on the charge's path and added to
 * the table in one statement per flush, off that path: a process that dies loses at most
 * one interval's counts (they are a signal, never money).
 */
export const CLAIM_OUTCOMES = [
  'created',
  'replayed',
  'in_progress',
  'fingerprint_mismatch',
  'stolen',
  'quota_exceeded',
] as const;
export type ClaimOutcome = (typeof CLAIM_OUTCOMES)[number];

/** How often the counts are added to the database, unless the caller flushes. */
export const OUTCOME_FLUSH_MS = 5_000;

const FLUSH = `
INSERT INTO claim_outcomes AS o (tenant_id, day, outcome, count)
SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::bigint[])
ON CONFLICT (tenant_id, day, outcome) DO UPDATE SET count = o.count + EXCLUDED.count`;

export class ClaimOutcomeLog {
  private pending = new Map<string, { tenant: string; day: string; outcome: ClaimOutcome; n: number }>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: Pool,
    private readonly logger: Logger,
    private readonly intervalMs = OUTCOME_FLUSH_MS,
  ) {}

  record(tenant: string, outcome: ClaimOutcome, at: Date): void {
    this.add(tenant, at.toISOString().slice(0, 10), outcome, 1);
  }

  private add(tenant: string, day: string, outcome: ClaimOutcome, n: number, schedule = true): void {
    const id = `${tenant}\u001f${day}\u001f${outcome}`;
    const entry = this.pending.get(id);
    if (entry) entry.n += n;
    else this.pending.set(id, { tenant, day, outcome, n });
    // Unref'd: the counts never keep a process alive; the client's close() flushes what is left.
    if (schedule) this.timer ??= setTimeout(() => void this.flush(), this.intervalMs).unref();
  }

  /** Adds what was counted to the database; a failure keeps the counts for the next flush. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      const batch = [...this.pending.values()];
      if (batch.length === 0) return;
      this.pending = new Map();
      try {
        await this.pool.query(FLUSH, [
          batch.map((b) => b.tenant),
          batch.map((b) => b.day),
          batch.map((b) => b.outcome),
          batch.map((b) => b.n),
        ]);
      } catch (error) {
        // Kept, not retried on a timer of its own: the next recorded outcome schedules a flush.
        for (const b of batch) this.add(b.tenant, b.day, b.outcome, b.n, false);
        this.logger.warn(
          { err: { message: error instanceof Error ? error.message : String(error) } },
          'could not record claim outcomes; kept for the next flush',
        );
      }
    });
    return this.flushing;
  }
}
