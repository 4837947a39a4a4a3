/**
 * When the thing a finding is about happened, as opposed to when the sweep first saw
 * it (`first_seen_at`): a backfill of last month finds 30-day-old charges today. Read
 * from the finding's own details (src/sweep/judge/build.ts summaries), first found:
 *
 * 1. the charge's `created` (`details.charge`);
 * 2. a duplicate's earliest live charge (`details.charges[].created`);
 * 3. the payment row's `created_at` (`details.effect`);
 * 4. the claim's `created_at` (`details.claim`);
 * 5. the earliest decline (`details.declined[].created`).
 *
 * NULL when none is there (a charge Stripe returned unreadable). Only ISO timestamps
 * are cast, so an odd value in `details` yields NULL rather than failing the query.
 */
export function evidenceAtSql(alias: string): string {
  const d = `${alias}.details`;
  const ts = (text: string) => `(CASE WHEN (${text}) ~ '^\\d{4}-\\d{2}-\\d{2}T' THEN (${text})::timestamptz END)`;
  const earliest = (key: string, field: string) =>
    `(SELECT min(${ts(`e ->> '${field}'`)}) FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${d} -> '${key}') = 'array' THEN ${d} -> '${key}' ELSE '[]'::jsonb END) e)`;
  return `coalesce(${ts(`${d} #>> '{charge,created}'`)}, ${earliest('charges', 'created')}, ${ts(`${d} #>> '{effect,created_at}'`)}, ${ts(
    `${d} #>> '{claim,created_at}'`,
  )}, ${earliest('declined', 'created')})`;
}
