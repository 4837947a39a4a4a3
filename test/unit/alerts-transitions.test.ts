import { describe, expect, it } from 'vitest';
import { changeOf, isNews } from '../../src/alerts/transitions.js';

const HOUR = 3_600_000;
const NOW = new Date('2026-11-10T12:00:00Z');
const sent = (lastCount: number, minutesAgo: number) => ({
  lastCount,
  lastSentAt: new Date(NOW.getTime() - minutesAgo * 60_000),
});

describe('changeOf', () => {
  it.each([
    ['nothing before, nothing now', 'none', undefined, 0],
    ['nothing before, open now', 'opened', undefined, 2],
    ['resolved before, open again', 'opened', sent(0, 5), 1],
    ['went up', 'increased', sent(2, 5), 3],
    ['unchanged inside the interval', 'none', sent(2, 59), 2],
    ['unchanged at the interval', 'repeat', sent(2, 60), 2],
    ['went down inside the interval', 'decreased', sent(3, 5), 1],
    ['went down, interval passed', 'repeat', sent(3, 61), 1],
    ['back to zero', 'resolved', sent(3, 5), 0],
    ['stays at zero', 'none', sent(0, 600), 0],
  ] as const)('%s → %s', (_name, expected, previous, current) => {
    expect(changeOf(previous, current, NOW, HOUR)).toBe(expected);
  });

  it('sends state changes and repeats, records decreases quietly', () => {
    expect(
      ['opened', 'increased', 'resolved', 'repeat', 'decreased', 'none'].filter((c) => isNews(c as never)),
    ).toEqual(['opened', 'increased', 'resolved', 'repeat']);
  });
});
