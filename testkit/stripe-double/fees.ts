/**
 * A deterministic fee schedule in Stripe's shape: a percentage plus a fixed amount per
 * charge, an extra percentage when the charge is converted to the settlement currency,
 * and a flat fee per dispute. Fixed amounts are in the settlement currency's smallest unit.
 */
export interface FeeSchedule {
  /** Per cent of the settled amount. Default 2.9. */
  percent: number;
  /** Added per charge. Default 30. */
  fixed: number;
  /** Extra per cent when the charge's currency is not the settlement currency. Default 1. */
  fxPercent: number;
  /** Withdrawn with a dispute's amount. Default 1500. */
  disputeFee: number;
}

export const DEFAULT_FEE_SCHEDULE: Readonly<FeeSchedule> = Object.freeze({
  percent: 2.9,
  fixed: 30,
  fxPercent: 1,
  disputeFee: 1500,
});

/** One line of a balance transaction's `fee_details`. */
export interface FeeDetail {
  amount: number;
  application: string | null;
  currency: string;
  description: string | null;
  type: string;
}

/** The fee of a charge that settled `settled` (smallest unit), converted or not. */
export function chargeFee(settled: number, converted: boolean, schedule: FeeSchedule): number {
  const percent = schedule.percent + (converted ? schedule.fxPercent : 0);
  return Math.round((settled * percent) / 100) + schedule.fixed;
}

export function feeDetails(amount: number, currency: string, description: string): FeeDetail[] {
  return amount === 0 ? [] : [{ amount, application: null, currency, description, type: 'stripe_fee' }];
}

/** The schedule in force: one for every account, overridable per account. */
export class FeeBook {
  private base: FeeSchedule = { ...DEFAULT_FEE_SCHEDULE };
  private readonly perAccount = new Map<string | null, FeeSchedule>();

  of(account: string | null): FeeSchedule {
    return this.perAccount.get(account) ?? this.base;
  }

  /** `account` undefined: every account without its own; `schedule` null: back to the default. */
  set(schedule: Partial<FeeSchedule> | null, account?: string | null): void {
    if (schedule) for (const [key, value] of Object.entries(schedule)) check(key, value);
    if (account === undefined) this.base = { ...DEFAULT_FEE_SCHEDULE, ...(schedule ?? {}) };
    else if (schedule === null) this.perAccount.delete(account);
    else this.perAccount.set(account, { ...this.base, ...schedule });
  }

  reset(): void {
    this.base = { ...DEFAULT_FEE_SCHEDULE };
    this.perAccount.clear();
  }
}

function check(key: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new RangeError(`fee ${key} must be a non-negative number (got ${String(value)})`);
}
