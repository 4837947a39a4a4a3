import {
  renderAccount,
  type AccountJson,
  type AccountOptions,
  type AccountSettings,
  type UnknownAccountPolicy,
} from './accounts.js';
import { rateLimitOf, type EndpointRateLimiter, type RateLimit } from './rate-limit.js';
import { seedCharges, type SeedOptions } from './seed.js';
import type { DoubleState } from './state.js';

export interface SeedAccountsOptions extends Omit<AccountOptions, 'id'> {
  /** Charges seeded into each of the first `withCharges` accounts (default: every one). Default 0. */
  chargesEach?: number;
  withCharges?: number;
  /** How those charges are seeded (window, amounts, …), as `seedCharges` takes it; required with `chargesEach`. */
  charges?: SeedOptions;
}

/**
 * Control hooks for a Connect platform: its connected accounts (as `GET /v1/accounts`
 * lists them) and Stripe's two rate limits, per account and endpoint and per key.
 */
export interface ConnectControls {
  /** A connected account, listed from now on. */
  addAccount(options?: AccountOptions): AccountJson;
  /**
   * `n` connected accounts at once (ids in the order made), the first `withCharges` of
   * them with `chargesEach` bulk-seeded charges: 2,000 accounts with charges in well under a second.
   */
  seedAccounts(n: number, options?: SeedAccountsOptions): string[];
  /** Settlement currency, payout schedule, country, of a connected account or of the platform (null). */
  configureAccount(account: string | null, settings: Partial<AccountSettings>): AccountJson;
  /** No longer listed by `GET /v1/accounts`; its requests are still served. */
  removeAccount(id: string): void;
  /** The platform lost access: not listed, and every request made for it answers 403 `account_invalid`. */
  revokeAccount(id: string): void;
  /** Listed and served again (after removeAccount or revokeAccount). */
  restoreAccount(id: string): void;
  /** The listed connected accounts, newest first. */
  connectedAccounts(): AccountJson[];
  /** One account (removed and revoked ones too), or the platform for null. */
  account(id: string | null): AccountJson | undefined;
  /** A `Stripe-Account` never added nor charged: served as an empty account (`serve`, default) or 403 (`forbid`). */
  setUnknownAccounts(policy: UnknownAccountPolicy): void;
  /**
   * Requests per second per account and endpoint (Stripe: 25), for every endpoint or only
   * `endpoint` (its own limit, as Stripe's search has); null removes it. 429 `endpoint-rate`.
   */
  setAccountRateLimit(limit: RateLimit | number | null, endpoint?: string): void;
  /** Requests per second per API key over every account and endpoint (Stripe live: 100); null removes it. 429 `global-rate`. */
  setGlobalRateLimit(limit: RateLimit | number | null): void;
}

export function createConnectControls(state: DoubleState, limiter: EndpointRateLimiter): ConnectControls {
  const now = () => state.clock.nowSeconds();
  return {
    addAccount(options = {}) {
      return renderAccount(state.accounts.add(options, now()));
    },
    seedAccounts(n, options = {}) {
      return seedAccounts(state, n, options);
    },
    configureAccount(account, settings) {
      state.accounts.configure(account, settings);
      const record = account === null ? state.accounts.platform : state.accounts.get(account);
      return renderAccount(record as NonNullable<typeof record>);
    },
    removeAccount(id) {
      state.accounts.setState(id, 'removed');
    },
    revokeAccount(id) {
      state.accounts.setState(id, 'revoked');
    },
    restoreAccount(id) {
      state.accounts.setState(id, 'active');
    },
    connectedAccounts() {
      return state.accounts.listed().map(renderAccount);
    },
    account(id) {
      const record = id === null ? state.accounts.platform : state.accounts.get(id);
      return record ? renderAccount(record) : undefined;
    },
    setUnknownAccounts(policy) {
      state.accounts.unknownAccounts = policy;
    },
    setAccountRateLimit(limit, endpoint) {
      limiter.setPerAccount(rateLimitOf(limit), endpoint);
    },
    setGlobalRateLimit(limit) {
      limiter.setGlobal(rateLimitOf(limit));
    },
  };
}

function seedAccounts(state: DoubleState, n: number, options: SeedAccountsOptions): string[] {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`cannot seed ${n} accounts`);
  const { chargesEach = 0, withCharges = n, charges, ...accountOptions } = options;
  if (chargesEach > 0 && !charges) throw new Error('seedAccounts: chargesEach needs charges: { from, to, … }');
  const ids: string[] = [];
  for (let i = 0; i < n; i += 1) {
    const id = state.accounts.add(accountOptions, state.clock.nowSeconds()).id;
    ids.push(id);
    if (chargesEach > 0 && i < withCharges && charges)
      seedCharges(state, id, chargesEach, { ...charges, seed: (charges.seed ?? 7) + i });
  }
  return ids;
}
