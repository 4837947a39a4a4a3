import { describe, expect, it } from 'vitest';
import { instantProblem, parseInstant } from '../../src/time/instant.js';

describe('parseInstant', () => {
  it.each([
    ['2026-11-01', '2026-11-01T00:00:00.000Z'],
    ['2026-11-01T12:00:00Z', '2026-11-01T12:00:00.000Z'],
    ['2026-11-01T12:00Z', '2026-11-01T12:00:00.000Z'],
    ['2026-11-01T13:30:00+01:30', '2026-11-01T12:00:00.000Z'],
    ['2026-11-01T12:00:00.250Z', '2026-11-01T12:00:00.250Z'],
  ])('reads %s', (text, iso) => expect(parseInstant(text)?.toISOString()).toBe(iso));

  it.each(['', 'yesterday', '2026-11-01T12:00:00', '2026-02-30', '2026-13-01', '01/11/2026', '2026-11-01 12:00Z'])(
    'refuses %j',
    (text) => expect(parseInstant(text)).toBeUndefined(),
  );
});

describe('instantProblem', () => {
  it.each([
    ['2026-11-01T12:00:00', 'a time needs a zone: add one (Z or +hh:mm), e.g. 2026-11-01T12:00:00Z'],
    ['2026-11-01T12:00', 'a time needs a zone: add one (Z or +hh:mm), e.g. 2026-11-01T12:00Z'],
    ['2026-11-01 12:00:00.5', 'a time needs a zone: add one (Z or +hh:mm), e.g. 2026-11-01T12:00:00.5Z'],
    ['yesterday', 'not a time; use 2026-11-01 or 2026-11-01T12:00:00Z'],
    ['2026-02-30', 'not a time; use 2026-11-01 or 2026-11-01T12:00:00Z'],
  ])('%j: %s', (text, message) => {
    expect(parseInstant(text)).toBeUndefined();
    expect(instantProblem(text)).toBe(message);
  });
});
