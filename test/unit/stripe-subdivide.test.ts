import { describe, expect, it } from 'vitest';
import { planNext, splitPoint, type PageOutline } from '../../src/providers/stripe/subdivide.js';

const full = (newest: number, oldest: number, id = 'ch_last', count = 100): PageOutline => ({
  hasMore: true,
  count,
  newestCreated: newest,
  last: { id, created: oldest },
});

describe('planNext', () => {
  it('ends a sub-window when Stripe says there is no more', () => {
    expect(
      planNext(
        { gte: 0, lt: 100 },
        { hasMore: false, count: 3, newestCreated: 9, last: { id: 'a', created: 1 } },
        { wantMore: true, limit: 100 },
      ),
    ).toEqual({
      ok: true,
      tasks: [],
      split: false,
    });
  });

  it('continues after the last charge, narrowed to the seconds not yet fully seen', () => {
    const plan = planNext({ gte: 0, lt: 10_000 }, full(9_999, 9_000), { wantMore: false, limit: 100 });
    expect(plan).toEqual({ ok: true, tasks: [{ gte: 0, lt: 9_001, startingAfter: 'ch_last' }], split: false });
  });

  it('splits the rest in two halves when more work is wanted', () => {
    const plan = planNext({ gte: 0, lt: 10_000 }, full(9_999, 9_000), { wantMore: true, limit: 100 });
    expect(plan).toEqual({
      ok: true,
      tasks: [
        { gte: 4_500, lt: 9_001, startingAfter: 'ch_last' },
        { gte: 0, lt: 4_500 },
      ],
      split: true,
    });
  });

  it('pages through a single second with starting_after, since it cannot be split', () => {
    const plan = planNext({ gte: 500, lt: 501 }, full(500, 500), { wantMore: true, limit: 100 });
    expect(plan).toEqual({ ok: true, tasks: [{ gte: 500, lt: 501, startingAfter: 'ch_last' }], split: false });
  });

  it('does not split when the page was the oldest second of the range', () => {
    const plan = planNext({ gte: 500, lt: 900 }, full(800, 500), { wantMore: true, limit: 100 });
    expect(plan.ok && plan.tasks).toEqual([{ gte: 500, lt: 501, startingAfter: 'ch_last' }]);
  });

  it('does not pay for a split when the page density says less than two pages remain', () => {
    // 100 charges over 1,000 seconds: the 100 seconds left hold about 10.
    const plan = planNext({ gte: 0, lt: 1_100 }, full(1_099, 100), { wantMore: true, limit: 100 });
    expect(plan.ok && plan.split).toBe(false);
  });

  it('keeps the whole range when the last charge has no usable created', () => {
    const page: PageOutline = { hasMore: true, count: 100, newestCreated: 50, last: { id: 'ch_x', created: null } };
    expect(planNext({ gte: 0, lt: 100 }, page, { wantMore: true, limit: 100 })).toEqual({
      ok: true,
      tasks: [{ gte: 0, lt: 100, startingAfter: 'ch_x' }],
      split: false,
    });
  });

  it('refuses to go on without a cursor', () => {
    expect(
      planNext(
        { gte: 0, lt: 100 },
        { hasMore: true, count: 0, newestCreated: null, last: null },
        { wantMore: true, limit: 100 },
      ).ok,
    ).toBe(false);
    const noId: PageOutline = { hasMore: true, count: 1, newestCreated: 5, last: { id: null, created: 5 } };
    expect(planNext({ gte: 0, lt: 100 }, noId, { wantMore: true, limit: 100 })).toMatchObject({
      ok: false,
      problem: expect.stringContaining('no id'),
    });
  });
});

describe('splitPoint', () => {
  it('is strictly inside the range and never above the cursor second', () => {
    for (let gte = 0; gte < 30; gte += 1) {
      for (let created = gte + 1; created < 60; created += 1) {
        const mid = splitPoint(gte, created);
        expect(mid).toBeGreaterThan(gte);
        expect(mid).toBeLessThanOrEqual(created);
      }
    }
  });
});
