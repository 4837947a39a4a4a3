import { describe, expect, it } from 'vitest';
import { parseShard, scheduledWindow, shardOf, slicesOf, widen } from '../../src/sweep/window.js';

const t = (iso: string) => new Date(iso);
const H = 3_600_000;

describe('scheduledWindow', () => {
  it('is [watermark − overlap, now − settle)', () => {
    expect(
      scheduledWindow({
        watermark: t('2026-11-01T10:00:00Z'),
        now: t('2026-11-01T12:00:00Z'),
        overlapMs: H / 4,
        settleMs: H / 2,
        firstRunLookbackMs: 24 * H,
      }),
    ).toEqual({ from: t('2026-11-01T09:45:00Z'), to: t('2026-11-01T11:30:00Z') });
  });

  it('starts a first run the lookback before now', () => {
    expect(
      scheduledWindow({
        watermark: null,
        now: t('2026-11-02T00:00:00Z'),
        overlapMs: 0,
        settleMs: H,
        firstRunLookbackMs: 24 * H,
      }),
    ).toEqual({ from: t('2026-11-01T00:00:00Z'), to: t('2026-11-01T23:00:00Z') });
  });

  it('is empty when nothing has settled since the watermark', () => {
    expect(
      scheduledWindow({
        watermark: t('2026-11-01T11:50:00Z'),
        now: t('2026-11-01T12:00:00Z'),
        overlapMs: 0,
        settleMs: H,
        firstRunLookbackMs: H,
      }),
    ).toBeNull();
  });
});

describe('slicesOf', () => {
  it('cuts at aligned boundaries, so a resumed run cuts the same slices', () => {
    const slices = slicesOf({ from: t('2026-11-01T09:45:00Z'), to: t('2026-11-01T12:10:00Z') }, H);
    expect(slices.map((s) => [s.from.toISOString().slice(11, 16), s.to.toISOString().slice(11, 16)])).toEqual([
      ['09:45', '10:00'],
      ['10:00', '11:00'],
      ['11:00', '12:00'],
      ['12:00', '12:10'],
    ]);
    const resumed = slicesOf({ from: t('2026-11-01T11:00:00Z'), to: t('2026-11-01T12:10:00Z') }, H);
    expect(resumed).toEqual(slices.slice(2));
  });

  it('covers the window exactly, without gaps or overlaps', () => {
    const window = { from: t('2026-11-01T00:00:07Z'), to: t('2026-11-03T05:00:01Z') };
    const slices = slicesOf(window, 7 * 60_000);
    expect(slices[0]?.from).toEqual(window.from);
    expect(slices.at(-1)?.to).toEqual(window.to);
    slices.slice(1).forEach((s, i) => expect(s.from).toEqual(slices[i]?.to));
  });
});

describe('widen', () => {
  it('adds the margin on both sides but never reads past the cap', () => {
    expect(
      widen({ from: t('2026-11-01T10:00:00Z'), to: t('2026-11-01T11:00:00Z') }, 120_000, t('2026-11-01T11:01:00Z')),
    ).toEqual({
      from: t('2026-11-01T09:58:00Z'),
      to: t('2026-11-01T11:01:00Z'),
    });
  });
});

describe('shards', () => {
  it.each(['0/1', '0/4', '3/4'])('parses %s', (text) => expect(parseShard(text)).toBeDefined());
  it.each(['3/2', '2/2', '1/0', '-1/2', 'a/b', '1', '1/2/3', ''])('rejects %j', (text) =>
    expect(parseShard(text)).toBeUndefined(),
  );

  it('assigns every account to exactly one shard, stably', () => {
    const accounts = Array.from({ length: 200 }, (_, i) => `acct_${i}`);
    const counts = [0, 0, 0, 0];
    for (const a of accounts) {
      const s = shardOf(a, 4);
      expect(shardOf(a, 4)).toBe(s);
      counts[s] = (counts[s] ?? 0) + 1;
    }
    expect(counts.reduce((a, b) => a + b)).toBe(200);
    expect(Math.min(...counts)).toBeGreaterThan(20); // spread, not all in one shard
  });
});
