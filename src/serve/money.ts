/**
 * Amounts as people read them. Stripe keeps amounts in the currency's smallest unit:
 * cents for most, the unit itself for zero-decimal currencies, thousandths for a few
 * (Stripe's "Zero-decimal currencies" and "Three-decimal currencies" lists).
 */
export const ZERO_DECIMAL_CURRENCIES = [
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
] as const;
export const THREE_DECIMAL_CURRENCIES = ['bhd', 'jod', 'kwd', 'omr', 'tnd'] as const;

/** Digits after the decimal point of a currency (lower-case ISO 4217). */
export function currencyExponent(currency: string | null | undefined): number {
  const c = (currency ?? '').toLowerCase();
  if ((ZERO_DECIMAL_CURRENCIES as readonly string[]).includes(c)) return 0;
  if ((THREE_DECIMAL_CURRENCIES as readonly string[]).includes(c)) return 3;
  return 2;
}

/** `2500, 'usd'` → `25.00 USD`; an amount without a currency is shown in minor units. */
export function formatMoney(amount: number | null | undefined, currency: string | null | undefined): string {
  if (amount === null || amount === undefined) return '—';
  if (!currency) return `${amount} (minor units)`;
  const exp = currencyExponent(currency);
  const sign = amount < 0 ? '-' : '';
  const abs = Math.abs(amount);
  const whole = Math.floor(abs / 10 ** exp);
  const fraction = exp === 0 ? '' : `.${String(abs % 10 ** exp).padStart(exp, '0')}`;
  return `${sign}${whole.toLocaleString('en-US')}${fraction} ${currency.toUpperCase()}`;
}

/**
 * An amount typed in the filter (`25`, `25.50`, `1,000`) as a number of major units, or
 * undefined when it is not one. The filter compares it with each finding's amount in
 * that finding's currency (SQL: `amountFilterSql`).
 */
export function parseMajorAmount(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const clean = text.trim().replace(/,/g, '');
  if (!/^\d{1,12}(\.\d{1,3})?$/.test(clean)) return undefined;
  return Number(clean);
}
