/**
 * Connect: the platform's connected accounts, as `GET /v1/accounts` lists them, and each
 * account's money settings (settlement currency, payout schedule). A connected account
 * is added by a control, or on its first charge; it can then be removed (no longer
 * listed, still served) or have its access revoked (every request for it answers 403,
 * as when an account disconnects the platform), and restored.
 */
import { randomId, seededRandom } from './random.js';

export type PayoutInterval = 'manual' | 'daily' | 'weekly' | 'monthly';
export type AccountType = 'standard' | 'express' | 'custom';
export type AccountState = 'active' | 'removed' | 'revoked';

/** What decides an account's money: balance transactions settle in `defaultCurrency`. */
export interface AccountSettings {
  /** Settlement currency. Default `usd`. */
  defaultCurrency: string;
  /** Default `US`. */
  country: string;
  /** `manual`: payouts are made by hand (`automatic: false`) and cannot be itemised. Default `daily`. */
  payoutInterval: PayoutInterval;
  /** Days until a charge's funds are available (`available_on`). Default 2. */
  payoutDelayDays: number;
}

export interface AccountOptions extends Partial<AccountSettings> {
  /** `acct_…`; default a new one. */
  id?: string;
  /** A Date or unix seconds; default now on the double's clock. */
  created?: Date | number;
  email?: string | null;
  businessName?: string | null;
  type?: AccountType;
  metadata?: Record<string, string>;
}

export interface AccountRecord extends AccountSettings {
  id: string;
  created: number;
  /** Order of addition: the tie-break of accounts added in one second. */
  seq: number;
  state: AccountState;
  email: string | null;
  businessName: string | null;
  type: AccountType;
  metadata: Record<string, string>;
}

export const DEFAULT_ACCOUNT_SETTINGS: Readonly<AccountSettings> = Object.freeze({
  defaultCurrency: 'usd',
  country: 'US',
  payoutInterval: 'daily',
  payoutDelayDays: 2,
});

/** What a request naming an account the double does not know gets: served (an empty world) or 403. */
export type UnknownAccountPolicy = 'serve' | 'forbid';

export class AccountStore {
  readonly platform: AccountRecord;
  unknownAccounts: UnknownAccountPolicy = 'serve';
  private readonly byId = new Map<string, AccountRecord>();
  private random: () => number;
  private nextSeq = 0;

  constructor(
    private readonly seed: number,
    nowSeconds: number,
  ) {
    this.random = seededRandom(seed);
    this.platform = this.record({ id: randomId('acct', this.random, 16) }, nowSeconds);
  }

  get(id: string): AccountRecord | undefined {
    return this.byId.get(id);
  }

  /** The platform (null), a known account, or the defaults for an account never seen. */
  settingsOf(account: string | null): AccountSettings {
    if (account === null) return this.platform;
    return this.byId.get(account) ?? DEFAULT_ACCOUNT_SETTINGS;
  }

  add(options: AccountOptions, nowSeconds: number): AccountRecord {
    const id = options.id ?? this.newId();
    if (!/^acct_[A-Za-z0-9]+$/.test(id)) throw new Error(`an account id looks like acct_… (got ${id})`);
    if (this.byId.has(id) || id === this.platform.id) throw new Error(`the double already has account ${id}`);
    const record = this.record({ ...options, id }, nowSeconds);
    this.byId.set(id, record);
    return record;
  }

  /** Registers an account the double meets for the first time (its first charge). */
  touch(account: string | null, nowSeconds: number): void {
    if (account !== null && !this.byId.has(account) && /^acct_[A-Za-z0-9]+$/.test(account))
      this.byId.set(account, this.record({ id: account }, nowSeconds));
  }

  configure(account: string | null, settings: Partial<AccountSettings>): void {
    const record = account === null ? this.platform : this.byId.get(account);
    if (!record) throw new Error(`the double has no account ${account}`);
    Object.assign(record, checkedSettings(settings));
  }

  setState(id: string, state: AccountState): AccountRecord {
    const record = this.byId.get(id);
    if (!record) throw new Error(`the double has no account ${id}`);
    record.state = state;
    return record;
  }

  /** Whether a request made for `account` (the Stripe-Account header) may proceed. */
  allows(account: string | null): boolean {
    if (account === null || account === this.platform.id) return true;
    const record = this.byId.get(account);
    if (!record) return this.unknownAccounts === 'serve';
    return record.state !== 'revoked';
  }

  /** Accounts `GET /v1/accounts` lists: active ones, newest first. */
  listed(): AccountRecord[] {
    return [...this.byId.values()]
      .filter((a) => a.state === 'active')
      .sort((a, b) => b.created - a.created || b.seq - a.seq);
  }

  all(): AccountRecord[] {
    return [...this.byId.values()];
  }

  clear(nowSeconds: number): void {
    this.byId.clear();
    this.unknownAccounts = 'serve';
    Object.assign(this.platform, DEFAULT_ACCOUNT_SETTINGS, { created: nowSeconds });
    this.random = seededRandom(this.seed);
    this.random();
  }

  private newId(): string {
    let id: string;
    do id = randomId('acct', this.random, 16);
    while (this.byId.has(id));
    return id;
  }

  private record(options: AccountOptions & { id: string }, nowSeconds: number): AccountRecord {
    const created =
      options.created === undefined
        ? nowSeconds
        : Math.floor(options.created instanceof Date ? options.created.getTime() / 1000 : options.created);
    return {
      ...DEFAULT_ACCOUNT_SETTINGS,
      ...checkedSettings(options),
      id: options.id,
      created,
      seq: this.nextSeq++,
      state: 'active',
      email: options.email ?? null,
      businessName: options.businessName ?? null,
      type: options.type ?? 'standard',
      metadata: { ...(options.metadata ?? {}) },
    };
  }
}

function checkedSettings(settings: Partial<AccountSettings>): Partial<AccountSettings> {
  const out: Partial<AccountSettings> = {};
  if (settings.defaultCurrency !== undefined) {
    if (!/^[a-zA-Z]{3}$/.test(settings.defaultCurrency))
      throw new RangeError(`not a currency: ${settings.defaultCurrency}`);
    out.defaultCurrency = settings.defaultCurrency.toLowerCase();
  }
  if (settings.country !== undefined) out.country = settings.country.toUpperCase();
  if (settings.payoutInterval !== undefined) out.payoutInterval = settings.payoutInterval;
  if (settings.payoutDelayDays !== undefined) {
    if (!Number.isSafeInteger(settings.payoutDelayDays) || settings.payoutDelayDays < 0)
      throw new RangeError(`payoutDelayDays must be a non-negative integer (got ${settings.payoutDelayDays})`);
    out.payoutDelayDays = settings.payoutDelayDays;
  }
  return out;
}

/** An account as `GET /v1/accounts` renders it (the fields a platform reads to sweep it). */
export interface AccountJson {
  id: string;
  object: 'account';
  created: number;
  default_currency: string;
  charges_enabled: boolean;
  payouts_enabled: boolean;
  settings: { payouts: { schedule: { delay_days: number; interval: PayoutInterval } } & Record<string, unknown> };
  type: AccountType;
  [key: string]: unknown;
}

export function renderAccount(account: AccountRecord): AccountJson {
  return {
    id: account.id,
    object: 'account',
    business_profile: { mcc: null, name: account.businessName, support_email: null, url: null },
    business_type: 'company',
    capabilities: { card_payments: 'active', transfers: 'active' },
    charges_enabled: true,
    country: account.country,
    created: account.created,
    default_currency: account.defaultCurrency,
    details_submitted: true,
    email: account.email,
    metadata: { ...account.metadata },
    payouts_enabled: true,
    settings: {
      payouts: {
        debit_negative_balances: true,
        schedule: { delay_days: account.payoutDelayDays, interval: account.payoutInterval },
        statement_descriptor: null,
      },
    },
    type: account.type,
  };
}
