/**
 * How each charge attempt ended, counted in process for metrics. `replayed`,
 * `in_progress` and `fingerprint_mismatch` are the duplicates the claim suppressed.
 */
export const CHARGE_OUTCOMES = [
  'charged',
  'refunded',
  'declined',
  'rejected',
  'replayed',
  'in_progress',
  'fingerprint_mismatch',
  'transient_failure',
  'superseded',
  'retry_window_expired',
  'quota_exceeded',
] as const;
export type ChargeOutcome = (typeof CHARGE_OUTCOMES)[number];

export const SUPPRESSED_OUTCOMES: readonly ChargeOutcome[] = ['replayed', 'in_progress', 'fingerprint_mismatch'];

export class ClaimCounters {
  private readonly outcomes = new Map<ChargeOutcome, number>(CHARGE_OUTCOMES.map((o) => [o, 0]));
  /** Attempts that took over an expired lease (a crashed or stuck attempt). */
  steals = 0;

  record(outcome: ChargeOutcome): void {
    this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1);
  }

  get(outcome: ChargeOutcome): number {
    return this.outcomes.get(outcome) ?? 0;
  }

  suppressedDuplicates(): number {
    return SUPPRESSED_OUTCOMES.reduce((sum, o) => sum + this.get(o), 0);
  }

  snapshot(): Record<ChargeOutcome, number> & { steals: number } {
    return { ...(Object.fromEntries(this.outcomes) as Record<ChargeOutcome, number>), steals: this.steals };
  }
}
