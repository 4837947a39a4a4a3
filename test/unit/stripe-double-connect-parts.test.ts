import { describe, expect, it } from 'vitest';
import { AccountStore } from '../../testkit/stripe-double/accounts.js';

describe('AccountStore', () => {
  it('lists active accounts newest first, one second’s by order of addition, and knows who may be served', () => {
    const store = new AccountStore(1, 100);
    const a = store.add({}, 100).id;
    const b = store.add({ created: 90 }, 100).id;
    const c = store.add({}, 100).id;
    expect(store.listed().map((x) => x.id)).toEqual([c, a, b]);
    store.setState(a, 'removed');
    store.setState(c, 'revoked');
    expect(store.listed().map((x) => x.id)).toEqual([b]);
    expect([store.allows(a), store.allows(c), store.allows(null), store.allows('acct_1New')]).toEqual([
      true,
      false,
      true,
      true,
    ]);
    store.unknownAccounts = 'forbid';
    expect([store.allows('acct_1New'), store.allows(store.platform.id)]).toEqual([false, true]);
  });

  it('gives unknown accounts the default settings, registers one on first sight, and refuses bad settings', () => {
    const store = new AccountStore(1, 100);
    expect(store.settingsOf('acct_1Unknown')).toMatchObject({ defaultCurrency: 'usd', payoutDelayDays: 2 });
    store.touch('acct_1Seen', 120);
    store.touch('not-an-account', 120);
    expect(store.listed().map((x) => [x.id, x.created])).toEqual([['acct_1Seen', 120]]);
    store.configure('acct_1Seen', { defaultCurrency: 'EUR', payoutDelayDays: 0 });
    expect(store.settingsOf('acct_1Seen')).toMatchObject({ defaultCurrency: 'eur', payoutDelayDays: 0 });
    expect(() => store.configure(null, { defaultCurrency: 'euro' })).toThrow(/not a currency/);
    expect(() => store.add({ id: 'shop' }, 1)).toThrow(/acct_/);
    const same = new AccountStore(1, 100);
    expect(same.platform.id).toBe(store.platform.id);
  });
});
