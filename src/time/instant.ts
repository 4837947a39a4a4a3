/**
 * Instants as operators write them: `2026-11-01` (UTC midnight) or a full ISO 8601
 * time with a zone, `2026-11-01T12:00:00Z` / `…+01:00`. A time without a zone is
 * refused rather than guessed.
 */
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

export function parseInstant(text: string): Date | undefined {
  const value = text.trim();
  if (DATE_ONLY.test(value)) {
    const date = new Date(`${value}T00:00:00Z`);
    return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value) ? date : undefined;
  }
  if (!DATE_TIME.test(value)) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return undefined;
  // Reject calendar overflow such as 2026-02-30, which Date would roll over.
  const [y, m, d] = value.slice(0, 10).split('-').map(Number);
  const check = new Date(Date.UTC(y ?? 0, (m ?? 1) - 1, d ?? 1));
  return check.getUTCDate() === d ? date : undefined;
}

const WITHOUT_ZONE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?$/;

/**
 * Why `text` is not an instant, for a usage error after `<flag> <text>: `. A time of
 * day without a zone is the usual slip: it gets its own advice instead of "not a time".
 */
export function instantProblem(text: string): string {
  if (WITHOUT_ZONE.test(text.trim())) {
    return `a time needs a zone: add one (Z or +hh:mm), e.g. ${text.trim().replace(' ', 'T')}Z`;
  }
  return 'not a time; use 2026-11-01 or 2026-11-01T12:00:00Z';
}
