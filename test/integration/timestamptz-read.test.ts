import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/** The pool reads timestamptz in place (src/db/timestamps.ts); what PostgreSQL prints must mean the same instant. */
let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, { max: 1 });
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

const INSTANTS = [
  '2026-11-26T03:14:15.000Z',
  '2026-11-26T03:14:15.123Z',
  '2026-03-29T01:30:00.999Z',
  '1901-12-13T20:45:52.000Z',
  '1000-01-02T00:00:00.001Z',
  '9999-12-30T23:59:59.999Z',
];

describe('timestamptz through the pool', () => {
  for (const zone of [
    'UTC',
    'Asia/Kathmandu',
    'America/St_Johns',
    'Africa/Monrovia',
    'Europe/Amsterdam',
    'Pacific/Kiritimati',
  ]) {
    it(`every instant reads back as itself with TimeZone = ${zone}`, async () => {
      const client = await pool.connect();
      try {
        await client.query(`SELECT set_config('TimeZone', $1, false)`, [zone]);
        const { rows } = await client.query<{ at: Date; printed: string; micros: Date }>(
          `SELECT t::timestamptz AS at, t::timestamptz::text AS printed,
                  (t::timestamptz + interval '0.000456 seconds') AS micros
             FROM unnest($1::text[]) AS t`,
          [INSTANTS],
        );
        expect(rows.map((r) => r.at.toISOString())).toEqual(INSTANTS);
        // Microseconds are cut, never rounded into the next millisecond.
        expect(rows.map((r) => r.micros.toISOString())).toEqual(INSTANTS);
        // The zones with minutes (and, in 1901 Monrovia, seconds) in their offset print them.
        if (zone !== 'UTC' && zone !== 'Europe/Amsterdam' && zone !== 'Pacific/Kiritimati') {
          expect(rows.some((r) => /[+-]\d\d:\d\d(:\d\d)?$/.test(r.printed))).toBe(true);
        }
      } finally {
        client.release();
      }
    });
  }

  it('infinity and dates before the year 1000 still read through the generic parser', async () => {
    const { rows } = await pool.query<{ inf: unknown; old: Date }>(
      `SELECT 'infinity'::timestamptz AS inf, '0999-06-01 12:00:00+00'::timestamptz AS old`,
    );
    expect(rows[0]?.inf).toBe(Infinity);
    expect(rows[0]?.old.toISOString()).toBe('0999-06-01T12:00:00.000Z');
  });
});
