import nock from 'nock';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClaimClient, downstreamKey, type ChargeRequest, type ClaimClient } from '../../src/claims/index.js';
import { ClaimValidationError } from '../../src/claims/validate.js';
import { takeClaim } from '../../src/claims/claim-store.js';
import { requestFingerprint } from '../../src/claims/keys.js';
import { ensureDayPartitions } from '../../src/db/partitions.js';
import { createStripeClient } from '../../src/providers/stripe/client.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { deferred } from '../support/promises.js';
import { cardDeclined, interceptPaymentIntents, succeededIntent } from '../support/stripe-nock.js';

const LEASE_MS = 60_000;
const METADATA_KEYS = { tenantId: 'tenant_id', idempotencyKey: 'idempotency_key' };
const stripe = createStripeClient({ apiKey: 'sk_test_claims', maxNetworkRetries: 0 });
const visa = (amount = 1999): ChargeRequest => ({ amount, currency: 'usd', paymentMethod: 'pm_card_visa' });

let db: TestDatabase;
let now: Date;
let keySeq = 0;
const freshKey = () => `order-${++keySeq}-${Math.random().toString(36).slice(2, 8)}`;

function claims(overrides: { clock?: () => Date } = {}): ClaimClient {
  return createClaimClient({
    pool: db.pool,
    stripe,
    leaseMs: LEASE_MS,
    maxAmount: 1_000_000,
    metadataKeys: METADATA_KEYS,
    clock: overrides.clock ?? (() => now),
  });
}

async function claimRows(tenantId: string, key: string) {
  const { rows } = await db.pool.query(
    `SELECT status, attempt, response_status, response_body, tableoid::regclass::text AS partition
       FROM idempotency_keys WHERE tenant_id = $1 AND key = $2`,
    [tenantId, key],
  );
  return rows;
}

async function paymentRows(tenantId: string, key: string) {
  const { rows } = await db.pool.query(
    'SELECT charge_id, status, amount, currency FROM payments WHERE tenant_id = $1 AND idempotency_key = $2',
    [tenantId, key],
  );
  return rows;
}

beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 20 });
  await ensureDayPartitions(db.pool, { from: '2026-03-01', to: '2026-03-20' });
});
afterAll(async () => {
  await db.drop();
});
beforeEach(() => {
  now = new Date('2026-03-10T12:00:00Z');
  nock.disableNetConnect();
});
afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

describe('chargeOnce', () => {
  it('50 concurrent identical requests make exactly one Stripe call and one payment row', async () => {
    const key = freshKey();
    let answered = 0;
    const everyoneElseAnswered = deferred();
    const stripeCalls = interceptPaymentIntents(async (_call, index) => {
      // Hold Stripe's answer until the 49 others have theirs; a second call means
      // the claim failed, so stop holding and let the assertions say so.
      if (index > 0) everyoneElseAnswered.resolve();
      await everyoneElseAnswered.promise;
      return [200, succeededIntent('pi_concurrent1', 1999, 'usd')];
    }, 50);
    const client = claims();
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        client.chargeOnce({ tenantId: 'acme', key, request: visa() }).then((result) => {
          if (result.outcome !== 'charged' && ++answered === 49) everyoneElseAnswered.resolve();
          return result;
        }),
      ),
    );

    expect(stripeCalls.calls).toHaveLength(1);
    const outcomes = results.map((r) => r.outcome).sort();
    expect(outcomes.filter((o) => o === 'charged')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'in_progress' || o === 'replayed')).toHaveLength(49);
    for (const r of results.filter((r) => r.outcome === 'in_progress')) {
      expect(r.status).toBe(409);
      expect(r.retryAfterSeconds).toBe(LEASE_MS / 1000);
    }
    expect(await paymentRows('acme', key)).toEqual([
      { charge_id: 'ch_concurrent1', status: 'succeeded', amount: 1999, currency: 'usd' },
    ]);
    expect(stripeCalls.calls[0]).toMatchObject({
      idempotencyKey: downstreamKey('acme', key),
      body: expect.objectContaining({
        'metadata[tenant_id]': 'acme',
        'metadata[idempotency_key]': key,
        confirm: 'true',
      }),
    });

    const retry = await client.chargeOnce({ tenantId: 'acme', key, request: visa() });
    expect(retry).toEqual({
      outcome: 'replayed',
      status: 200,
      body: results.find((r) => r.outcome === 'charged')?.body,
    });
    expect(stripeCalls.calls).toHaveLength(1);
    expect(client.counters.get('in_progress') + client.counters.get('replayed')).toBe(50);
    expect(client.counters.suppressedDuplicates()).toBe(50);
  });

  it('answers 422 to a reused key with another body, in flight or completed, without calling Stripe', async () => {
    const key = freshKey();
    const release = deferred();
    const inStripe = deferred();
    const stripeCalls = interceptPaymentIntents(async () => {
      inStripe.resolve();
      await release.promise;
      return [200, succeededIntent('pi_mismatch1', 1999, 'usd')];
    });
    const client = claims();
    const first = client.chargeOnce({ tenantId: 'acme', key, request: visa(1999) });
    await inStripe.promise;
    const whileInFlight = await client.chargeOnce({ tenantId: 'acme', key, request: visa(2999) });
    release.resolve();
    expect((await first).outcome).toBe('charged');
    const afterwards = await client.chargeOnce({
      tenantId: 'acme',
      key,
      request: { ...visa(1999), description: 'changed' },
    });
    for (const r of [whileInFlight, afterwards]) {
      expect(r).toMatchObject({ outcome: 'fingerprint_mismatch', status: 422 });
    }
    expect(stripeCalls.calls).toHaveLength(1);
    expect(await paymentRows('acme', key)).toHaveLength(1);
  });

  it('lets exactly one attempt steal an expired lease and refuses the stale attempt its late completion', async () => {
    const key = freshKey();
    const slowStripe = deferred();
    const stealerStripe = deferred();
    const arrivals = [deferred(), deferred()];
    const othersTurnedAway = deferred();
    const stripeCalls = interceptPaymentIntents(async (_call, index) => {
      arrivals[index]?.resolve();
      if (index > 1) othersTurnedAway.resolve(); // a second steal: stop waiting, let the assertions fail
      await (index === 0 ? slowStripe.promise : stealerStripe.promise);
      return [200, succeededIntent('pi_steal1', 1999, 'usd')];
    }, 3);
    const client = claims();

    const slow = client.chargeOnce({ tenantId: 'acme', key, request: visa() });
    await arrivals[0]?.promise;
    now = new Date(now.getTime() + LEASE_MS + 1_000); // the first attempt's lease has run out

    let turnedAway = 0;
    const racers = Array.from({ length: 10 }, () =>
      client.chargeOnce({ tenantId: 'acme', key, request: visa() }).then((result) => {
        if (result.outcome === 'in_progress' && ++turnedAway === 9) othersTurnedAway.resolve();
        return result;
      }),
    );
    await othersTurnedAway.promise;
    await arrivals[1]?.promise;
    expect(stripeCalls.calls).toHaveLength(2);
    expect(turnedAway).toBe(9);
    expect((await claimRows('acme', key))[0]).toMatchObject({ status: 'in_flight', attempt: 2 });

    stealerStripe.resolve();
    const results = await Promise.all(racers);
    expect(results.filter((r) => r.outcome === 'charged')).toHaveLength(1);
    slowStripe.resolve();
    expect(await slow).toMatchObject({ outcome: 'superseded', status: 409 });

    expect(client.counters.steals).toBe(1);
    expect(stripeCalls.calls.map((c) => c.idempotencyKey)).toEqual([
      downstreamKey('acme', key),
      downstreamKey('acme', key),
    ]);
    expect((await claimRows('acme', key))[0]).toMatchObject({ status: 'completed', attempt: 2, response_status: 200 });
    expect(await paymentRows('acme', key)).toHaveLength(1);
  });

  it("finds yesterday's claim when the retry lands in the next day's partition", async () => {
    const key = freshKey();
    now = new Date('2026-03-10T23:59:58Z');
    const stripeCalls = interceptPaymentIntents(() => [200, succeededIntent('pi_nextday1', 1999, 'usd')]);
    const client = claims();
    expect((await client.chargeOnce({ tenantId: 'acme', key, request: visa() })).outcome).toBe('charged');
    now = new Date('2026-03-11T00:00:03Z');
    expect(await client.chargeOnce({ tenantId: 'acme', key, request: visa() })).toMatchObject({
      outcome: 'replayed',
      status: 200,
    });
    now = new Date('2026-03-12T09:00:00Z');
    expect((await client.chargeOnce({ tenantId: 'acme', key, request: visa(5) })).outcome).toBe('fingerprint_mismatch');
    expect(stripeCalls.calls).toHaveLength(1);
    expect((await claimRows('acme', key)).map((r) => r.partition)).toEqual(['idempotency_keys_p20260310']);
  });

  it('releases the claim on a transient Stripe failure and the retry charges with the same downstream key', async () => {
    for (const failure of [
      { name: '500', reply: [500, { error: { type: 'api_error', message: 'boom' } }] as [number, unknown] },
      {
        name: '429',
        reply: [429, { error: { type: 'rate_limit_error', message: 'slow down' } }, { 'Retry-After': '7' }] as [
          number,
          unknown,
          Record<string, string>,
        ],
      },
    ]) {
      const key = freshKey();
      const stripeCalls = interceptPaymentIntents(
        (_c, i) => (i === 0 ? failure.reply : [200, succeededIntent('pi_transient', 1999, 'usd')]),
        2,
      );
      const client = claims();
      const first = await client.chargeOnce({ tenantId: 'acme', key, request: visa() });
      expect(first, failure.name).toMatchObject({ outcome: 'transient_failure', status: 503 });
      if (failure.name === '429') expect(first.retryAfterSeconds).toBe(7);
      expect((await claimRows('acme', key))[0]).toMatchObject({ status: 'released', attempt: 1 });
      expect(await paymentRows('acme', key)).toHaveLength(0);

      const retry = await client.chargeOnce({ tenantId: 'acme', key, request: visa() });
      expect(retry.outcome).toBe('charged');
      expect(stripeCalls.calls.map((c) => c.idempotencyKey)).toEqual([
        downstreamKey('acme', key),
        downstreamKey('acme', key),
      ]);
      expect((await claimRows('acme', key))[0]).toMatchObject({ status: 'completed', attempt: 2 });
    }
  });

  it('releases the claim when the connection to Stripe fails', async () => {
    const key = freshKey();
    nock('https://api.stripe.com').post('/v1/payment_intents').replyWithError('socket hang up');
    const result = await claims().chargeOnce({ tenantId: 'acme', key, request: visa() });
    expect(result).toMatchObject({ outcome: 'transient_failure', status: 503, retryAfterSeconds: 1 });
    expect((await claimRows('acme', key))[0]).toMatchObject({ status: 'released' });
  });

  it('stores a decline with its failed charge and replays it without calling Stripe again', async () => {
    const key = freshKey();
    const stripeCalls = interceptPaymentIntents(() => [402, cardDeclined('ch_declined1', 'pi_declined1')]);
    const client = claims();
    const first = await client.chargeOnce({ tenantId: 'acme', key, request: visa() });
    expect(first).toMatchObject({
      outcome: 'declined',
      status: 402,
      body: {
        error: { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', charge: 'ch_declined1' },
      },
    });
    const retry = await client.chargeOnce({ tenantId: 'acme', key, request: visa() });
    expect(retry).toEqual({ outcome: 'replayed', status: 402, body: first.body });
    expect(stripeCalls.calls).toHaveLength(1);
    expect(await paymentRows('acme', key)).toEqual([
      { charge_id: 'ch_declined1', status: 'failed', amount: 1999, currency: 'usd' },
    ]);
  });

  it('stores an invalid-request rejection and replays it', async () => {
    const key = freshKey();
    const stripeCalls = interceptPaymentIntents(() => [
      400,
      { error: { type: 'invalid_request_error', code: 'resource_missing', message: 'No such PaymentMethod' } },
    ]);
    const client = claims();
    expect(await client.chargeOnce({ tenantId: 'acme', key, request: visa() })).toMatchObject({
      outcome: 'rejected',
      status: 400,
    });
    expect(await client.chargeOnce({ tenantId: 'acme', key, request: visa() })).toMatchObject({
      outcome: 'replayed',
      status: 400,
    });
    expect(stripeCalls.calls).toHaveLength(1);
    expect(await paymentRows('acme', key)).toHaveLength(0);
  });

  it('keeps tenants apart: the same key in two tenants is two claims and two charges', async () => {
    const key = freshKey();
    const stripeCalls = interceptPaymentIntents(
      (c, i) => [200, succeededIntent(`pi_tenant${i}`, Number(c.body.amount), 'usd')],
      2,
    );
    const client = claims();
    expect((await client.chargeOnce({ tenantId: 'acme', key, request: visa() })).outcome).toBe('charged');
    expect((await client.chargeOnce({ tenantId: 'globex', key, request: visa(5000) })).outcome).toBe('charged');
    expect(new Set(stripeCalls.calls.map((c) => c.idempotencyKey)).size).toBe(2);
    expect(await claimRows('acme', key)).toHaveLength(1);
    expect(await claimRows('globex', key)).toHaveLength(1);
    expect((await paymentRows('globex', key))[0]).toMatchObject({ amount: 5000 });
  });

  it('sends Connect charges to the account and records it on the effect', async () => {
    const key = freshKey();
    const stripeCalls = interceptPaymentIntents(() => [200, succeededIntent('pi_connect1', 1999, 'usd')]);
    await claims().chargeOnce({ tenantId: 'acme', key, request: { ...visa(), account: 'acct_123abc' } });
    expect(stripeCalls.calls[0]?.stripeAccount).toBe('acct_123abc');
    const { rows } = await db.pool.query('SELECT account_id FROM payments WHERE charge_id = $1', ['ch_connect1']);
    expect(rows).toEqual([{ account_id: 'acct_123abc' }]);
  });

  it('rejects bad input with a typed error before anything is written or sent', async () => {
    const client = claims();
    const bad: Array<[string, Parameters<ClaimClient['chargeOnce']>[0]]> = [
      ['key', { tenantId: 'acme', key: '', request: visa() }],
      ['key', { tenantId: 'acme', key: 'x'.repeat(256), request: visa() }],
      ['key', { tenantId: 'acme', key: 'caf\u00e9', request: visa() }],
      ['key', { tenantId: 'acme', key: 'tab\there', request: visa() }],
      ['tenantId', { tenantId: '', key: 'k', request: visa() }],
      ['tenantId', { tenantId: 'has space', key: 'k', request: visa() }],
      ['amount', { tenantId: 'acme', key: 'k', request: visa(0) }],
      ['amount', { tenantId: 'acme', key: 'k', request: visa(-5) }],
      ['amount', { tenantId: 'acme', key: 'k', request: visa(10.5) }],
      ['amount', { tenantId: 'acme', key: 'k', request: visa(1_000_001) }],
      ['currency', { tenantId: 'acme', key: 'k', request: { ...visa(), currency: 'us' } }],
      ['currency', { tenantId: 'acme', key: 'k', request: { ...visa(), currency: 'usd1' } }],
      ['paymentMethod', { tenantId: 'acme', key: 'k', request: { ...visa(), paymentMethod: '' } }],
      ['account', { tenantId: 'acme', key: 'k', request: { ...visa(), account: 'acme' } }],
      ['metadata', { tenantId: 'acme', key: 'k', request: { ...visa(), metadata: { tenant_id: 'spoof' } } }],
    ];
    const before = await db.pool.query(
      'SELECT (SELECT count(*) FROM idempotency_keys) + (SELECT count(*) FROM payments) AS n',
    );
    for (const [field, input] of bad) {
      const error = await client.chargeOnce(input).catch((e: unknown) => e);
      expect(error, JSON.stringify(input).slice(0, 80)).toBeInstanceOf(ClaimValidationError);
      expect((error as ClaimValidationError).field).toBe(field);
      expect((error as ClaimValidationError).status).toBe(400);
    }
    const after = await db.pool.query(
      'SELECT (SELECT count(*) FROM idempotency_keys) + (SELECT count(*) FROM payments) AS n',
    );
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });
});

describe('uniqueness of (tenant_id, key) across day partitions', () => {
  it('admits one claim when 40 concurrent takers straddle midnight', async () => {
    const key = freshKey();
    const fingerprint = requestFingerprint(visa());
    const dkey = downstreamKey('acme', key);
    const beforeMidnight = new Date('2026-03-14T23:59:59.999Z');
    const afterMidnight = new Date('2026-03-15T00:00:00.001Z');
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        takeClaim(db.pool, {
          tenantId: 'acme',
          key,
          fingerprint,
          downstreamKey: dkey,
          now: i % 2 === 0 ? beforeMidnight : afterMidnight,
          leaseMs: LEASE_MS,
        }).then((row) => row.outcome),
      ),
    );
    expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'in_flight')).toHaveLength(39);
    expect(await claimRows('acme', key)).toHaveLength(1);
  });

  it("rejects a plain INSERT of a key that exists in another day's partition", async () => {
    const key = freshKey();
    const insert = (day: string) =>
      db.pool.query(
        `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, downstream_key, created_at, updated_at)
         VALUES ('acme', $1, 'f', 'in_flight', $2::timestamptz + interval '1 minute', 'd', $2, $2)`,
        [key, day],
      );
    await insert('2026-03-16T10:00:00Z');
    await expect(insert('2026-03-17T10:00:00Z')).rejects.toMatchObject({ code: '23505' });
    await expect(insert('2026-03-16T11:00:00Z')).rejects.toMatchObject({ code: '23505' });
    expect(await claimRows('acme', key)).toHaveLength(1);
  });

  it('checks a many-row INSERT once for all its rows: one key already in another day, or twice in the statement, refuses it whole', async () => {
    const [a, b, c] = [freshKey(), freshKey(), freshKey()];
    const insert = (rows: Array<[string, string]>) =>
      db.pool.query(
        `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, downstream_key, created_at, updated_at)
         SELECT 'acme', r.key, 'f', 'released', 'd', r.day::timestamptz, r.day::timestamptz
           FROM unnest($1::text[], $2::text[]) AS r(key, day)`,
        [rows.map((r) => r[0]), rows.map((r) => r[1])],
      );
    await insert([[a, '2026-03-16T10:00:00Z']]);
    await expect(
      insert([
        [b, '2026-03-16T10:00:00Z'],
        [a, '2026-03-17T10:00:00Z'],
      ]),
    ).rejects.toMatchObject({ code: '23505' });
    await expect(
      insert([
        [c, '2026-03-16T10:00:00Z'],
        [c, '2026-03-17T10:00:00Z'],
      ]),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await claimRows('acme', b)).toHaveLength(0);
    expect(await claimRows('acme', c)).toHaveLength(0);
    await insert([
      [b, '2026-03-16T10:00:00Z'],
      [c, '2026-03-17T10:00:00Z'],
    ]);
    expect([(await claimRows('acme', b)).length, (await claimRows('acme', c)).length]).toEqual([1, 1]);
  });

  it('two concurrent many-row INSERTs of the same keys on different days, in opposite orders: one claim per key, no deadlock', async () => {
    const keys = Array.from({ length: 100 }, () => freshKey());
    const bulk = (client: Pick<typeof db.pool, 'query'>, ordered: string[], day: string) =>
      client.query(
        `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, downstream_key, created_at, updated_at)
         SELECT 'acme', k, 'f', 'released', 'd', $2::timestamptz, $2::timestamptz FROM unnest($1::text[]) AS k`,
        [ordered, day],
      );
    const first = await db.pool.connect();
    const second = await db.pool.connect();
    try {
      await first.query('BEGIN');
      await bulk(first, keys, '2026-03-16T10:00:00Z'); // holds every key's directory entry until it commits
      await second.query('BEGIN');
      const pid = (await second.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
      const racing = bulk(second, [...keys].reverse(), '2026-03-17T10:00:00Z').then(
        () => 'inserted',
        (e: { code?: string }) => e.code,
      );
      // The second waits for the first's entries (observed, not slept on).
      for (;;) {
        const { rows } = await db.pool.query(`SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted`, [pid]);
        if (rows.length > 0) break;
      }
      await first.query('COMMIT');
      expect(await racing).toBe('23505');
      await second.query('ROLLBACK');
    } finally {
      first.release();
      second.release();
    }
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n, count(DISTINCT key)::int AS keys FROM idempotency_keys WHERE key = ANY($1)`,
      [keys],
    );
    expect(rows[0]).toEqual({ n: 100, keys: 100 });
  });

  it('files every claim in the directory with its day, whoever inserts it; DELETE and TRUNCATE take the entries with them', async () => {
    const [taken, plain] = [freshKey(), freshKey()];
    const directory = async (key: string) =>
      (
        await db.pool.query<{ created_at: Date }>(
          `SELECT created_at FROM idempotency_key_directory WHERE tenant_id = 'acme' AND key = $1`,
          [key],
        )
      ).rows.map((r) => r.created_at.toISOString());
    await takeClaim(db.pool, {
      tenantId: 'acme',
      key: taken,
      fingerprint: 'f',
      downstreamKey: 'd',
      now: new Date('2026-03-16T10:00:00Z'),
      leaseMs: 1000,
    });
    await db.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, downstream_key, created_at, updated_at)
       VALUES ('acme', $1, 'f', 'released', 'd', '2026-03-17T10:00:00Z', '2026-03-17T10:00:00Z')`,
      [plain],
    );
    expect([await directory(taken), await directory(plain)]).toEqual([
      ['2026-03-16T10:00:00.000Z'],
      ['2026-03-17T10:00:00.000Z'],
    ]);
    await db.pool.query(`DELETE FROM idempotency_keys WHERE tenant_id = 'acme' AND key = $1`, [plain]);
    expect(await directory(plain)).toEqual([]);
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('TRUNCATE idempotency_keys');
      expect((await client.query('SELECT count(*)::int AS n FROM idempotency_key_directory')).rows).toEqual([{ n: 0 }]);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
    expect(await directory(taken)).toEqual(['2026-03-16T10:00:00.000Z']);
  });

  it("an INSERT, DELETE or TRUNCATE aimed at one day's partition directly keeps the directory as through the parent", async () => {
    const [a, b] = [freshKey(), freshKey()];
    const insertInto = (table: string, key: string, day: string) =>
      db.pool.query(
        `INSERT INTO ${table} (tenant_id, key, request_fingerprint, status, downstream_key, created_at, updated_at)
         VALUES ('acme', $1, 'f', 'released', 'd', $2, $2)`,
        [key, day],
      );
    await insertInto('idempotency_keys', a, '2026-03-06T10:00:00Z');
    await expect(insertInto('idempotency_keys_p20260307', a, '2026-03-07T10:00:00Z')).rejects.toMatchObject({
      code: '23505',
    });
    await insertInto('idempotency_keys_p20260307', b, '2026-03-07T10:00:00Z');
    const filed = async () =>
      (
        await db.pool.query<{ key: string }>(
          `SELECT key FROM idempotency_key_directory WHERE key = ANY($1) ORDER BY key`,
          [[a, b]],
        )
      ).rows.map((r) => r.key);
    expect(await filed()).toEqual([a, b].sort());
    await db.pool.query(`DELETE FROM idempotency_keys_p20260306 WHERE key = $1`, [a]);
    await db.pool.query('TRUNCATE idempotency_keys_p20260307');
    expect(await filed()).toEqual([]);
  });

  it('a TRUNCATE of one day forgets that UTC day only, whatever DateStyle the partition was made under', async () => {
    const [feb, may] = [freshKey(), freshKey()];
    const client = await db.pool.connect();
    try {
      await client.query(`SET DateStyle = 'SQL, DMY'`);
      await ensureDayPartitions(client, { from: '2026-02-05', to: '2026-02-05' });
    } finally {
      await client.query('RESET DateStyle');
      client.release();
    }
    await ensureDayPartitions(db.pool, { from: '2026-05-02', to: '2026-05-02' });
    for (const [key, day] of [
      [feb, '2026-02-05T10:00:00Z'],
      [may, '2026-05-02T10:00:00Z'],
    ] as const) {
      await db.pool.query(
        `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, downstream_key, created_at, updated_at)
         VALUES ('acme', $1, 'f', 'released', 'd', $2, $2)`,
        [key, day],
      );
    }
    await db.pool.query('TRUNCATE idempotency_keys_p20260205');
    const { rows } = await db.pool.query<{ key: string }>(
      `SELECT key FROM idempotency_key_directory WHERE key = ANY($1)`,
      [[feb, may]],
    );
    expect(rows.map((r) => r.key)).toEqual([may]);
  });

  it('an entry whose claim is gone (its day dropped by hand) is replaced by the next take or insert, never a duplicate', async () => {
    const [a, b, c] = [freshKey(), freshKey(), freshKey()];
    for (const key of [a, b, c]) {
      await db.pool.query(
        `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, downstream_key, created_at, updated_at)
         VALUES ('acme', $1, 'f', 'released', 'd', '2026-03-05T10:00:00Z', '2026-03-05T10:00:00Z')`,
        [key],
      );
    }
    // Outside the sweeper: one day's partition dropped by hand leaves its entries behind.
    await db.pool.query('DROP TABLE idempotency_keys_p20260305');
    try {
      const take = (key: string, at: string) =>
        takeClaim(db.pool, {
          tenantId: 'acme',
          key,
          fingerprint: 'f',
          downstreamKey: 'd',
          now: new Date(at),
          leaseMs: LEASE_MS,
        });
      expect((await take(a, '2026-03-19T10:00:00Z')).outcome).toBe('claimed');
      expect((await take(a, '2026-03-19T10:00:01Z')).outcome).toBe('in_flight');
      await db.pool.query(
        `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, downstream_key, created_at, updated_at)
         VALUES ('acme', $1, 'f', 'released', 'd', '2026-03-19T11:00:00Z', '2026-03-19T11:00:00Z')`,
        [b],
      );
      // Forty takers of c at once, on two days: one claim.
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, (_, i) => take(c, i % 2 ? '2026-03-19T12:00:00Z' : '2026-03-20T12:00:00Z')),
      );
      expect(outcomes.filter((o) => o.outcome === 'claimed')).toHaveLength(1);
      const { rows } = await db.pool.query(
        `SELECT k.key, k.created_at = d.created_at AS filed FROM idempotency_keys k
           JOIN idempotency_key_directory d USING (tenant_id, key) WHERE k.key = ANY($1) ORDER BY k.key`,
        [[a, b, c]],
      );
      expect(rows).toEqual([a, b, c].sort().map((key) => ({ key, filed: true })));
    } finally {
      await ensureDayPartitions(db.pool, { from: '2026-03-05', to: '2026-03-05' });
    }
  });

  it.each(['REPEATABLE READ', 'SERIALIZABLE'])(
    'refuses %s, whose snapshot could miss a claim committed meanwhile',
    async (level) => {
      const client = await db.pool.connect();
      try {
        await client.query(`BEGIN ISOLATION LEVEL ${level}`);
        await expect(
          client.query(
            `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, locked_until, downstream_key, created_at, updated_at)
           VALUES ('acme', 'rr', 'f', 'released', NULL, 'd', '2026-03-16T10:00:00Z', '2026-03-16T10:00:00Z')`,
          ),
        ).rejects.toMatchObject({ code: '25001' });
        await client.query('ROLLBACK');
        await client.query(`BEGIN ISOLATION LEVEL ${level}`);
        await expect(
          takeClaim(client, {
            tenantId: 'acme',
            key: 'rr',
            fingerprint: 'f',
            downstreamKey: 'd',
            now: new Date('2026-03-16T10:00:00Z'),
            leaseMs: 1000,
          }),
        ).rejects.toMatchObject({ code: '25001' });
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
    },
  );

  it('a claim the sweeper re-created replays to any body from its own account only, for the amount it was re-created from', async () => {
    const key = freshKey();
    // As the sweep's repair writes it (src/sweep/repairs.ts recreateClaims).
    await db.pool.query(
      `INSERT INTO idempotency_keys (tenant_id, key, request_fingerprint, status, attempt, downstream_key, account_id,
                                     response_status, response_body, response_outcome, amount, currency, created_at,
                                     completed_at, updated_at)
       VALUES ('acme', $1, sweeper_recreated_fingerprint(), 'completed', 1, 'd', 'acct_1Victim', 200, '{"charge":"ch_x"}',
               'success', 4200, 'usd', '2026-03-10T11:00:00Z', '2026-03-10T11:00:00Z', '2026-03-10T11:00:00Z')`,
      [key],
    );
    const take = (accountId: string | null, amount = 4200, currency = 'usd') =>
      takeClaim(db.pool, {
        tenantId: 'acme',
        key,
        fingerprint: 'any',
        downstreamKey: 'd',
        now,
        leaseMs: LEASE_MS,
        accountId,
        amount,
        currency,
      });
    expect((await take('acct_1Victim')).outcome).toBe('completed');
    expect((await take(null)).outcome).toBe('fingerprint_mismatch');
    expect((await take('acct_1Other')).outcome).toBe('fingerprint_mismatch');
    expect((await take('acct_1Victim', 99)).outcome).toBe('fingerprint_mismatch');
    expect((await take('acct_1Victim', 4200, 'eur')).outcome).toBe('fingerprint_mismatch');
  });

  it('a claim records the request it stands for and a machine-readable outcome of its answer', async () => {
    const key = freshKey();
    interceptPaymentIntents(() => [200, succeededIntent('pi_request1', 1999, 'usd')]);
    await claims().chargeOnce({ tenantId: 'acme', key, request: visa() });
    const { rows } = await db.pool.query(
      `SELECT amount, currency, response_outcome FROM idempotency_keys WHERE key = $1`,
      [key],
    );
    expect(rows).toEqual([{ amount: visa().amount, currency: visa().currency, response_outcome: 'success' }]);
  });
});

describe("Stripe's 24 h idempotency window", () => {
  it('refuses to re-drive a claim whose first attempt is older than 24 h: a retry could charge twice', async () => {
    const key = freshKey();
    const stripeCalls = interceptPaymentIntents(() => [500, { error: { type: 'api_error', message: 'down' } }]);
    const client = claims();
    expect((await client.chargeOnce({ tenantId: 'acme', key, request: visa() })).outcome).toBe('transient_failure');
    now = new Date(now.getTime() + 24 * 3_600_000);
    const late = await client.chargeOnce({ tenantId: 'acme', key, request: visa() });
    expect(late).toMatchObject({ outcome: 'retry_window_expired', status: 409 });
    expect(stripeCalls.calls).toHaveLength(1);
    expect((await claimRows('acme', key))[0]).toMatchObject({ status: 'released', attempt: 1 });
  });
});
