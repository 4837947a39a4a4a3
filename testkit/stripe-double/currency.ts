/**
 * Currencies as Stripe counts them and a deterministic exchange-rate table. Amounts are
 * in the smallest unit; Stripe's zero-decimal currencies (`jpy`, `krw`, …) have none,
 * its three-decimal ones (`kwd`, …) three (https://docs.stripe.com/currencies).
 */
const ZERO_DECIMAL = new Set([
  'bif',
  'clp',
  'djf',
  'gnf',
  'jpy',
  'kmf',
  'krw',
  'mga',
  'pyg',
  'rwf',
  'ugx',
  'vnd',
  'vuv',
  'xaf',
  'xof',
  'xpf',
]);
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/** Digits after the point of a currency's major unit. */
export function decimalsOf(currency: string): number {
  const c = currency.toLowerCase();
  return ZERO_DECIMAL.has(c) ? 0 : THREE_DECIMAL.has(c) ? 3 : 2;
}

/**
 * What one major unit of each currency is worth in US dollars: fixed numbers, not
 * market rates, so a test can compute every settled amount by hand.
 */
export const DEFAULT_FX_RATES: Readonly<Record<string, number>> = Object.freeze({
  usd: 1,
  eur: 1.08,
  gbp: 1.27,
  chf: 1.13,
  cad: 0.74,
  aud: 0.66,
  nzd: 0.61,
  sgd: 0.74,
  hkd: 0.128,
  sek: 0.095,
  nok: 0.094,
  dkk: 0.145,
  pln: 0.25,
  mxn: 0.058,
  brl: 0.2,
  inr: 0.012,
  jpy: 0.0067,
});

/** The double's exchange rates: Stripe's `exchange_rate` and the amounts it converts. */
export class FxTable {
  private rates = new Map<string, number>(Object.entries(DEFAULT_FX_RATES));

  /** Sets (or adds) currencies' value in US dollars per major unit. */
  set(rates: Readonly<Record<string, number>>): void {
    for (const [currency, rate] of Object.entries(rates)) {
      if (!(rate > 0) || !Number.isFinite(rate))
        throw new RangeError(`an exchange rate must be a positive number (got ${rate} for ${currency})`);
      this.rates.set(currency.toLowerCase(), rate);
    }
  }

  /** Whether the table has a rate for `currency`. */
  knows(currency: string): boolean {
    return this.rates.has(currency.toLowerCase());
  }

  reset(): void {
    this.rates = new Map(Object.entries(DEFAULT_FX_RATES));
  }

  /**
   * Stripe's `exchange_rate` from `from` to `to`: an amount in `from` (major units) times
   * it is the amount in `to`; rounded to 6 decimals, as Stripe reports it. Null for one currency.
   */
  rate(from: string, to: string): number | null {
    if (from === to) return null;
    return Math.round((this.usdValue(from) / this.usdValue(to)) * 1e6) / 1e6;
  }

  /** `amount` (smallest unit of `from`) in the smallest unit of `to`, at `rate(from, to)`, rounded half up. */
  convert(amount: number, from: string, to: string): number {
    const rate = this.rate(from, to);
    if (rate === null) return amount;
    const major = (amount / 10 ** decimalsOf(from)) * rate;
    return Math.round(major * 10 ** decimalsOf(to));
  }

  private usdValue(currency: string): number {
    const value = this.rates.get(currency);
    if (value === undefined)
      throw new Error(`the double has no exchange rate for ${currency}: setFxRates({ ${currency}: <USD per unit> })`);
    return value;
  }
}
