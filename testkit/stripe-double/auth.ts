import { invalidApiKey, missingApiKey, permissionDenied } from './errors.js';

export interface KeyPolicy {
  /** The only keys accepted. Default: any test-mode secret or restricted key. */
  acceptedKeys?: readonly string[];
  /**
   * Restricted keys and the permissions they hold (Stripe's names, e.g.
   * `rak_charge_read`). A key not listed here holds every permission.
   */
  permissions?: Readonly<Record<string, readonly string[]>>;
}

/** What a read-only restricted key holds for the endpoints the double serves. */
export const READ_ONLY_PERMISSIONS = [
  'rak_charge_read',
  'rak_payment_intent_read',
  'rak_refund_read',
  'rak_event_read',
  'rak_balance_read',
  'rak_payout_read',
  'rak_account_read',
] as const;

const TEST_KEY = /^(sk|rk)_test_[A-Za-z0-9_]+$/;

/** Reads the key from `Authorization: Bearer …` (or Basic with the key as user name, as curl -u sends it). */
export function authenticate(authorization: string | undefined, policy: KeyPolicy): string {
  const key = keyFromHeader(authorization);
  if (!key) throw missingApiKey();
  const accepted = policy.acceptedKeys ? policy.acceptedKeys.includes(key) : TEST_KEY.test(key);
  if (!accepted) throw invalidApiKey(key);
  return key;
}

export function authorize(key: string, permission: string, account: string | null, policy: KeyPolicy): void {
  const held = policy.permissions?.[key];
  if (held && !held.includes(permission)) throw permissionDenied(key, account, permission);
}

export function keyFromHeader(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const [scheme, value] = header.trim().split(/\s+/, 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === 'bearer') return value;
  if (scheme?.toLowerCase() === 'basic')
    return Buffer.from(value, 'base64').toString('utf8').split(':')[0] || undefined;
  return undefined;
}
