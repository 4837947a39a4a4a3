import { describe, expect, it } from 'vitest';
import { AccountStore } from '../../testkit/stripe-double/accounts.js';
import { EndpointRateLimiter } from '../../testkit/stripe-double/rate-limit.js';

const LIST = 'GET /v1/charges';

describe('EndpointRateLimiter per account and per key', () => {
  it('gives every (account, endpoint) pair its own bucket, refilled over time', () => {
    let now = 0;
    const limiter = new EndpointRateLimiter(() => now);
    limiter.setPerAccount({ perSecond: 2, burst: 1 });
    expect(limiter.take(LIST, 'acct_a')).toBeUndefined();
    expect(limiter.take(LIST, 'acct_a')).toMatchObject({ reason: 'endpoint-rate' });
    expect(limiter.take(LIST, 'acct_b')).toBeUndefined();
    expect(limiter.take(LIST, null)).toBeUndefined();
    expect(limiter.take('GET /v1/events', 'acct_a')).toBeUndefined();
    now = 500;
    expect(limiter.take(LIST, 'acct_a')).toBeUndefined();
  });

  it('caps one key over every account and endpoint, and another key separately', () => {
    let now = 0;
    const limiter = new EndpointRateLimiter(() => now);
    limiter.setGlobal({ perSecond: 10, burst: 2 });
    expect(limiter.take(LIST, 'acct_a', 'k1')).toBeUndefined();
    expect(limiter.take('GET /v1/events', 'acct_b', 'k1')).toBeUndefined();
    expect(limiter.take(LIST, 'acct_c', 'k1')).toMatchObject({ reason: 'global-rate', limit: { perSecond: 10 } });
    expect(limiter.take(LIST, 'acct_c', 'k2')).toBeUndefined();
    now = 100;
    expect(limiter.take(LIST, 'acct_c', 'k1')).toBeUndefined();
  });

  it('lets one request through a limit of less than one a second, then refills slowly', () => {
    let now = 0;
    const limiter = new EndpointRateLimiter(() => now);
    limiter.setGlobal({ perSecond: 0.5 });
    expect([limiter.take(LIST), limiter.take(LIST)?.reason]).toEqual([undefined, 'global-rate']);
    now = 1_999;
    expect(limiter.take(LIST)?.reason).toBe('global-rate');
    now = 2_000;
    expect(limiter.take(LIST)).toBeUndefined();
  });

  it('takes no token when any bucket refuses, and an endpoint’s own per-account limit wins over the default', () => {
    const limiter = new EndpointRateLimiter(() => 0);
    limiter.setGlobal({ perSecond: 1, burst: 1 });
    limiter.setPerAccount({ perSecond: 1, burst: 1 });
    limiter.setPerAccount({ perSecond: 1, burst: 3 }, 'GET /v1/charges/search');
    expect(limiter.take(LIST, 'acct_a')).toBeUndefined();
    expect(limiter.take(LIST, 'acct_b')).toMatchObject({ reason: 'global-rate' });
    limiter.setGlobal(null);
    expect(limiter.take(LIST, 'acct_b')).toBeUndefined();
    const search = [1, 2, 3, 4].map(() => limiter.take('GET /v1/charges/search', 'acct_a')?.reason);
    expect(search).toEqual([undefined, undefined, undefined, 'endpoint-rate']);
    limiter.clear();
    expect(limiter.take(LIST, 'acct_a')).toBeUndefined();
    expect(() => limiter.setPerAccount({ perSecond: 0 })).toThrow(/positive/);
  });
});

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
