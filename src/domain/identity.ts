/**
 * Identities and keys: how the sweeper names an account, a claim and a finding. Each
 * rule lives here once, so every module (the judgement, the repairs, the stores, the
 * providers) joins and compares them the same way.
 */

/**
 * The platform account's name wherever the sweep names accounts: SWEEPER_ACCOUNTS,
 * the mirror (`stripe_charges.account`), the recon_* tables, reports and metrics.
 * Claims and payments are written with a null `account_id` instead (see `accountIdOf`),
 * and derive their `account` column in this form from it, for the sweep to read.
 */
export const PLATFORM_ACCOUNT = 'platform';

/** An account's name from the `account_id` of a claim or payment: `platform` for null, `acct_…` otherwise. */
export function accountName(accountId: string | null): string {
  return accountId ?? PLATFORM_ACCOUNT;
}

/**
 * The inverse: the `account_id` claims and payments store, null for the platform.
 * Also what a provider call takes as its connected account (none for the platform).
 */
export function accountIdOf(account: string): string | null {
  return account === PLATFORM_ACCOUNT ? null : account;
}

/**
 * Subject of a claim-level finding: tenant and key joined by a character neither can
 * contain (U+241F, shown as ␟; the normaliser refuses it in metadata). Stored in `recon_findings.subject`, so it never changes.
 */
export function claimSubject(tenantId: string, key: string): string {
  return `${tenantId}\u241f${key}`;
}

/** A claim (tenant, key) as an in-memory key: tenants and keys hold no control character, so U+001F cannot occur in them. */
export function claimKey(tenantId: string, key: string): string {
  return `${tenantId}\u001f${key}`;
}

/**
 * A finding's identity, (category, subject), as one string. U+001F: the SQL that closes
 * findings no longer found matches the same string as `category || chr(31) || subject`
 * (src/sweep/findings-store.ts).
 */
export function findingKey(category: string, subject: string): string {
  return `${category}\u001f${subject}`;
}

/** An identity (account, tenant, key) as the verification sets name it. */
export function identityKey(account: string, tenantId: string, key: string): string {
  return `${account}\u001f${tenantId}\u001f${key}`;
}
