import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isoTimestamptzMs } from '../../src/db/timestamps.js';
import { checkProperty } from '../support/properties.js';

const generic = pg.types.getTypeParser(1184, 'text') as (text: string) => Date | number | null;

/** How PostgreSQL prints `ms` (plus `micros` µs) in a zone `offsetSeconds` east of UTC, DateStyle ISO. */
function printed(ms: number, micros: number, offsetSeconds: number): string {
  const local = new Date(ms + offsetSeconds * 1000);
  const p2 = (v: number) => String(v).padStart(2, '0');
  const date = `${String(local.getUTCFullYear()).padStart(4, '0')}-${p2(local.getUTCMonth() + 1)}-${p2(local.getUTCDate())}`;
  const time = `${p2(local.getUTCHours())}:${p2(local.getUTCMinutes())}:${p2(local.getUTCSeconds())}`;
  const fraction = (local.getUTCMilliseconds() * 1000 + micros).toString().padStart(6, '0').replace(/0+$/, '');
  const abs = Math.abs(offsetSeconds);
  const [h, m, s] = [Math.floor(abs / 3600), Math.floor((abs % 3600) / 60), abs % 60];
  const zone = `${offsetSeconds < 0 ? '-' : '+'}${p2(h)}${m || s ? `:${p2(m)}` : ''}${s ? `:${p2(s)}` : ''}`;
  return `${date} ${time}${fraction ? `.${fraction}` : ''}${zone}`;
}

describe('timestamptz as PostgreSQL prints it (DateStyle ISO)', () => {
  it('reads every instant in years 1000–9999, any offset, any fraction, to the millisecond (truncated)', async () => {
    await checkProperty(
      'timestamps: read',
      { normal: 2_000, deep: 50_000 },
      [
        fc.integer({ min: Date.UTC(1000, 0, 2), max: Date.UTC(9999, 11, 30) }),
        fc.integer({ min: 0, max: 999 }),
        fc.oneof(
          fc.integer({ min: -15 * 3600, max: 15 * 3600 }),
          fc.integer({ min: -15, max: 15 }).map((h) => h * 3600),
        ),
      ],
      (ms, micros, offset) => {
        const text = printed(ms, micros, offset);
        expect(isoTimestamptzMs(text), text).toBe(ms);
        expect((generic(text) as Date).getTime(), text).toBe(ms);
      },
    );
  });

  it('examples as PostgreSQL prints them', () => {
    expect(isoTimestamptzMs('2026-11-26 03:14:15+00')).toBe(Date.UTC(2026, 10, 26, 3, 14, 15));
    expect(isoTimestamptzMs('2026-11-26 03:14:15.5+00')).toBe(Date.UTC(2026, 10, 26, 3, 14, 15, 500));
    expect(isoTimestamptzMs('2026-11-26 03:14:15.123999+00')).toBe(Date.UTC(2026, 10, 26, 3, 14, 15, 123));
    expect(isoTimestamptzMs('2026-11-26 08:59:15+05:45')).toBe(Date.UTC(2026, 10, 26, 3, 14, 15));
    expect(isoTimestamptzMs('2026-11-25 23:44:15.25-03:30')).toBe(Date.UTC(2026, 10, 26, 3, 14, 15, 250));
    expect(isoTimestamptzMs('1900-01-01 00:00:00-00:44:30')).toBe(Date.UTC(1900, 0, 1, 0, 44, 30));
  });

  it('leaves whatever it does not know to the generic parser (null)', () => {
    for (const text of [
      'infinity',
      '-infinity',
      '0099-01-01 00:00:00+00',
      '0044-03-15 12:00:00+00 BC',
      '10000-01-01 00:00:00+00',
      '11/26/2026 03:14:15.123 UTC',
      'Thu Nov 26 03:14:15 2026 UTC',
      '2026-11-26 03:14:15',
      '2026-11-26 03:14:15.+00',
      '2026-11-26 03:14:15.1234567+00',
      '2026-11-26 03:14:15+0',
      '2026-11-26 03:14:15+00:0',
      '2026-11-26 03:14:15+00:00:00:00',
      '2026-11-26T03:14:15+00',
      '2026-1a-26 03:14:15+00',
      '2026-11-26 03:14:15 +00',
      '',
    ]) {
      expect(isoTimestamptzMs(text), text).toBeNull();
    }
  });
});
