import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, loadReviewSettings } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { clearSecrets, redact } from '../../src/secrets.js';
import { addressMatcher, isLoopbackHost, parseAddressList } from '../../src/serve/addresses.js';
import { reviewAuth, tokenMatches, canResolve } from '../../src/serve/auth.js';
import { completenessChart, niceCeiling, percent, stackedChart } from '../../src/serve/charts.js';
import { parseFindingQuery } from '../../src/serve/findings-query.js';
import { escapeHtml, html, localUrl, trusted } from '../../src/serve/html.js';
import { formatMoney, parseMajorAmount } from '../../src/serve/money.js';
import { personName } from '../../src/serve/names.js';
import { localNext } from '../../src/serve/session.js';
import { dashboardPaymentUrl } from '../../src/serve/stripe-links.js';

const TOKEN = 'a-review-token-long-enough-0123';
const settings = (over: Partial<ReturnType<typeof loadReviewSettings>> = {}) => ({
  token: null,
  trustedHeader: null,
  trustedProxies: [],
  resolvers: [],
  actor: null,
  ...over,
});

afterEach(() => clearSecrets());

describe('html templates', () => {
  it('escape every interpolated value unless it is markup the page made', () => {
    const note = `<script>alert("x")</script> & 'quoted'`;
    expect(html`<td title="${note}">${note}</td>`.text).toBe(
      '<td title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quoted&#39;">' +
        '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quoted&#39;</td>',
    );
    expect(html`<p>${html`<b>${'<i>'}</b>`}</p>`.text).toBe('<p><b>&lt;i&gt;</b></p>');
    expect(html`${['<a>', trusted('<br />'), 1, null, undefined, false]}`.text).toBe('&lt;a&gt;<br />1');
  });

  it('redact registered secrets on the way out', async () => {
    const { registerSecret } = await import('../../src/secrets.js');
    registerSecret('sk_test_supersecret');
    expect(escapeHtml('key sk_test_supersecret here')).toBe('key [redacted] here');
    expect(redact('sk_test_supersecret')).toBe('[redacted]');
  });

  it('make links of this site only, every query value encoded', () => {
    expect(localUrl('/', { tenant: 'a&b=c', empty: '', none: null, after: 5 })).toBe('/?tenant=a%26b%3Dc&after=5');
    expect(() => localUrl('//evil.example')).toThrow();
    expect(() => localUrl('https://evil.example')).toThrow();
  });
});

describe('names', () => {
  it.each([
    ['  Alice  ', { name: 'Alice' }],
    ['sweeper', { problem: expect.stringMatching(/automatic actions/) }],
    ['SWEEPER', { problem: expect.stringMatching(/automatic actions/) }],
    ['', { problem: 'is empty' }],
    ['a\u0000b', { problem: expect.stringMatching(/control/) }],
    ['al\u202eice', { problem: expect.stringMatching(/formatting/) }],
    ['x'.repeat(101), { problem: expect.stringMatching(/longer than 100/) }],
  ])('%j', (text, expected) => {
    expect(personName(text)).toEqual(expected);
  });
});

describe('trusted proxies', () => {
  it('reads addresses and networks, and matches IPv4 peers seen on an IPv6 socket', () => {
    const entries = parseAddressList('10.0.0.5, 192.168.0.0/16 ,fd00::/8');
    if (typeof entries === 'string') throw new Error(entries);
    const trusted = addressMatcher(entries);
    expect(['10.0.0.5', '::ffff:10.0.0.5', '192.168.200.1', 'fd00::1'].map(trusted)).toEqual([true, true, true, true]);
    expect(['10.0.0.6', '127.0.0.1', '::1', 'fe80::1', undefined, 'nonsense'].map(trusted)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it.each(['0.0.0.0/0', '10.0.0.0/33', 'example.com', '10.0.0.1/8/8', ' , '])('refuses %j', (text) => {
    expect(typeof parseAddressList(text)).toBe('string');
  });

  it('knows a loopback host', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST'].map(isLoopbackHost)).toEqual(
      Array(6).fill(true),
    );
    expect(['0.0.0.0', '::', '10.0.0.1', 'example.com', 'localhost.example.com'].map(isLoopbackHost)).toEqual(
      Array(5).fill(false),
    );
  });
});

describe('the review page variables', () => {
  it('are validated with the rest of the configuration, naming the variable, without echoing the token', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ SWEEPER_UI_TOKEN: 'short' }, /^SWEEPER_UI_TOKEN must be at least 16 characters/],
      [{ SWEEPER_UI_TRUSTED_HEADER: 'X User' }, /^SWEEPER_UI_TRUSTED_HEADER must be an HTTP header name/],
      [{ SWEEPER_UI_TRUSTED_PROXIES: '0.0.0.0/0' }, /^SWEEPER_UI_TRUSTED_PROXIES "0.0.0.0\/0" has a prefix outside/],
      [{ SWEEPER_UI_RESOLVERS: 'alice,sweeper' }, /^SWEEPER_UI_RESOLVERS holds a name that is "sweeper"/],
      [{ SWEEPER_ACTOR: 'bad\u0007name' }, /^SWEEPER_ACTOR contains control/],
    ];
    for (const [env, message] of cases) {
      expect(() => loadConfig(env)).toThrow(message);
      expect(() => loadReviewSettings(env)).toThrow(message);
    }
    try {
      loadConfig({ SWEEPER_UI_TOKEN: 'short' });
    } catch (error) {
      expect((error as ConfigError).exitCode).toBe(64);
      expect((error as Error).message).not.toContain('short"');
    }
  });

  it('reads them, and refuses a trusted header without the proxies it is trusted from', () => {
    expect(
      loadReviewSettings({
        SWEEPER_UI_TOKEN: TOKEN,
        SWEEPER_UI_TRUSTED_HEADER: 'X-Forwarded-User',
        SWEEPER_UI_TRUSTED_PROXIES: '10.0.0.5',
        SWEEPER_UI_RESOLVERS: ' alice , Bob,,',
        SWEEPER_ACTOR: 'carol',
      }),
    ).toEqual({
      token: TOKEN,
      trustedHeader: 'x-forwarded-user',
      trustedProxies: [{ address: '10.0.0.5', prefix: 32, family: 'ipv4' }],
      resolvers: ['alice', 'Bob'],
      actor: 'carol',
    });
    expect(() => loadReviewSettings({ SWEEPER_UI_TRUSTED_HEADER: 'X-Forwarded-User' })).toThrow(
      /^SWEEPER_UI_TRUSTED_HEADER is set but SWEEPER_UI_TRUSTED_PROXIES is not/,
    );
  });

  it('register the token as a secret: no log line or message can carry it', () => {
    loadReviewSettings({ SWEEPER_UI_TOKEN: TOKEN });
    expect(redact(`the token was ${TOKEN}`)).toBe('the token was [redacted]');
  });
});

describe('reviewAuth', () => {
  const local = { insecureLocal: true, host: '127.0.0.1', osUser: 'root' };
  const remote = { insecureLocal: false, host: '0.0.0.0', osUser: 'root' };

  it('refuses to start without authentication, saying what to set', () => {
    expect(() => reviewAuth(settings(), remote)).toThrow(ConfigError);
    expect(() => reviewAuth(settings(), remote)).toThrow(
      /^sweeper serve needs authentication: set SWEEPER_UI_TOKEN .*SWEEPER_UI_TRUSTED_HEADER and SWEEPER_UI_TRUSTED_PROXIES.*--insecure-local/,
    );
    expect(() => reviewAuth(settings(), { ...local, host: '0.0.0.0' })).toThrow(
      /^--insecure-local serves only a loopback address .* not --host 0\.0\.0\.0/,
    );
    expect(() => reviewAuth(settings(), { ...local, osUser: 'sweeper' })).toThrow(/set SWEEPER_ACTOR/);
  });

  it('--insecure-local acts as SWEEPER_ACTOR or the OS user, who resolves unless SWEEPER_UI_RESOLVERS says otherwise', () => {
    const asRoot = reviewAuth(settings(), local);
    expect(asRoot.localActor).toBe('root');
    expect(canResolve(asRoot, 'root')).toBe(true);
    const asAlice = reviewAuth(settings({ actor: 'alice', resolvers: ['bob'] }), local);
    expect(asAlice.localActor).toBe('alice');
    expect(canResolve(asAlice, 'alice')).toBe(false);
  });

  it('with a token, needs nothing else; the keys derive from the token, so a restart keeps the sessions', () => {
    const a = reviewAuth(settings({ token: TOKEN, resolvers: ['Alice'] }), remote);
    const b = reviewAuth(settings({ token: TOKEN }), remote);
    const c = reviewAuth(settings({ token: `${TOKEN}-rotated` }), remote);
    expect(a.localActor).toBeNull();
    expect(a.cookieSecret).toBe(b.cookieSecret);
    expect(a.cookieSecret).not.toBe(c.cookieSecret);
    expect(a.cookieSecret).not.toBe(a.csrfKey);
    expect(a.cookieSecret).not.toContain(TOKEN);
    expect([canResolve(a, 'alice'), canResolve(a, 'ALICE'), canResolve(a, 'bob')]).toEqual([true, true, false]);
  });

  it('compares tokens whatever their lengths', () => {
    expect(tokenMatches(TOKEN, TOKEN)).toBe(true);
    expect(tokenMatches(`${TOKEN}x`, TOKEN)).toBe(false);
    expect(tokenMatches('', TOKEN)).toBe(false);
  });
});

describe('sign-in', () => {
  it.each([
    ['/runs?range=7d', '/runs?range=7d'],
    ['//evil.example', '/'],
    ['/\\evil.example', '/'],
    ['https://evil.example', '/'],
    ['/a b', '/'],
    [undefined, '/'],
  ])('goes back to %j as %j', (next, expected) => {
    expect(localNext(next)).toBe(expected);
  });
});

describe('money and links', () => {
  it('shows amounts in their currency', () => {
    expect(formatMoney(123456, 'usd')).toBe('1,234.56 USD');
    expect(formatMoney(500, 'jpy')).toBe('500 JPY');
    expect(formatMoney(1234, 'kwd')).toBe('1.234 KWD');
    expect(formatMoney(-5, 'eur')).toBe('-0.05 EUR');
    expect(formatMoney(null, 'usd')).toBe('—');
    expect(parseMajorAmount('1,000.5')).toBe(1000.5);
    expect(parseMajorAmount('1e3')).toBeUndefined();
  });

  it('links a charge to its page in the dashboard: the account, test mode, the PaymentIntent', () => {
    expect(dashboardPaymentUrl({ id: 'ch_1', account: 'platform', paymentIntent: 'pi_1', livemode: true })).toBe(
      'https://dashboard.stripe.com/payments/pi_1',
    );
    expect(dashboardPaymentUrl({ id: 'ch_1', account: 'acct_9', paymentIntent: null, livemode: false })).toBe(
      'https://dashboard.stripe.com/acct_9/test/payments/ch_1',
    );
    expect(dashboardPaymentUrl({ id: 'ch_/../x?y', account: null, paymentIntent: null, livemode: null })).toBe(
      'https://dashboard.stripe.com/payments/ch_%2F..%2Fx%3Fy',
    );
  });
});

describe('filters', () => {
  it('read the query, defaulting to open findings, and say what they could not read', () => {
    expect(parseFindingQuery({})).toEqual({
      filter: {
        state: 'open',
        category: null,
        account: null,
        tenant: null,
        olderThanMs: null,
        minAmount: null,
        maxAmount: null,
      },
      paging: { after: null, before: null },
      problems: [],
    });
    const parsed = parseFindingQuery({ state: 'any', category: 'stale_claim', age: '1d', min: '10', after: '42' });
    expect(parsed.filter).toMatchObject({
      state: null,
      category: 'stale_claim',
      olderThanMs: 86_400_000,
      minAmount: 10,
    });
    expect(parsed.paging.after).toBe(42);
    expect(parseFindingQuery({ state: 'closed', age: 'x', after: '1 OR 1=1' }).problems).toHaveLength(2);
  });
});

describe('charts', () => {
  it('stack the series, so the top edge is the total, on a y axis people can read', () => {
    expect([0, 1, 3, 7, 10, 11, 240].map(niceCeiling)).toEqual([1, 1, 5, 10, 10, 20, 500]);
    const at = [0, 1, 2].map((h) => new Date(Date.UTC(2026, 10, 10, h)));
    const svg = stackedChart({
      title: 'open <b>findings</b>',
      at,
      series: [
        { label: 'a', values: [1, 2, 0] },
        { label: '<i>b</i>', values: [1, 3, 5] },
      ],
    }).text;
    expect(svg).toContain('open &lt;b&gt;findings&lt;/b&gt;');
    expect(svg).toContain('data-series="&lt;i&gt;b&lt;/i&gt;"');
    // The y axis goes to 5, the largest total; b's band sits on a's, so its top edge is the total:
    // 5 at the second and third instants, the top of the plot (y = 12); a's top edge there is 2 (y = 142.8) and 0.
    expect(svg).toMatch(/>5<\/text>/);
    const tops = [...svg.matchAll(/points="([^"]+)"/g)].map((m) =>
      m[1]!
        .split(' ')
        .slice(0, 3)
        .map((p) => p.split(',')[1]),
    );
    expect(tops).toEqual([
      ['186.4', '142.8', '230'],
      ['142.8', '12', '12'],
    ]);
  });

  it('draw completeness per day, an empty outline for a day without charges', () => {
    const svg = completenessChart('platform', [
      { day: '2026-11-09', charges: 0, settled: 0, fraction: 1 },
      { day: '2026-11-10', charges: 4, settled: 3, fraction: 0.75 },
    ]).text;
    expect(svg.match(/class="empty"/g)).toHaveLength(1);
    expect(svg).toContain('3 of 4 charges settled');
    expect(svg).toContain('75.0%');
    expect([1, 0, 0.9999, 0.5].map(percent)).toEqual(['100%', '0%', '99.99%', '50.0%']);
  });
});
