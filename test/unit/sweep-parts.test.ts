import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { partsOf } from '../../src/sweep/parts.js';
import { checkProperty } from '../support/properties.js';

const slice = { from: new Date('2026-11-10T02:00:00Z'), to: new Date('2026-11-10T03:00:00Z') };
const LEASE = 120_000;
const listed = { from: new Date(slice.from.getTime() - LEASE), to: new Date(slice.to.getTime() + LEASE) };
const second = (offset: number) => slice.from.getTime() / 1000 + offset;

describe('partsOf (a dense slice judged in parts)', () => {
  it('keeps a slice of at most maxCharges whole, with its listed window', () => {
    expect(partsOf(slice, listed, [second(0), second(5), second(3599)], 3)).toEqual([{ slice, listed, charges: 3 }]);
    expect(partsOf(slice, listed, [], 1)).toEqual([{ slice, listed, charges: 0 }]);
  });

  it('cuts at the first second of the charge that would overflow a part; margins go to the first and last parts', () => {
    const parts = partsOf(slice, listed, [second(10), second(20), second(30), second(40), second(50)], 2);
    const at = (offset: number) => new Date((second(0) + offset) * 1000);
    expect(parts).toEqual([
      { slice: { from: slice.from, to: at(30) }, listed: { from: listed.from, to: at(30) }, charges: 2 },
      { slice: { from: at(30), to: at(50) }, listed: { from: at(30), to: at(50) }, charges: 2 },
      { slice: { from: at(50), to: slice.to }, listed: { from: at(50), to: listed.to }, charges: 1 },
    ]);
  });

  it('never splits a second: charges sharing one stay in one part, even beyond maxCharges', () => {
    const parts = partsOf(slice, listed, [second(1), second(7), second(7), second(7), second(7), second(9)], 2);
    expect(parts.map((p) => p.charges)).toEqual([1, 4, 1]);
    expect(parts[1]?.slice).toEqual({ from: new Date(second(7) * 1000), to: new Date(second(9) * 1000) });
  });

  it("leaves out the margins' charges, and cuts only between whole seconds when the slice starts mid-second", () => {
    const odd = { from: new Date(slice.from.getTime() + 400), to: slice.to };
    const parts = partsOf(odd, listed, [second(-60), second(0), second(1), second(2), second(3600), second(3700)], 1);
    expect(parts.map((p) => p.charges)).toEqual([1, 1]); // second(0) is before the slice's start
    expect(parts[0]?.slice).toEqual({ from: odd.from, to: new Date(second(2) * 1000) });
    expect(parts[1]?.slice).toEqual({ from: new Date(second(2) * 1000), to: odd.to });
  });

  it('refuses a part size that is not a positive integer', () => {
    expect(() => partsOf(slice, listed, [], 0)).toThrow(RangeError);
    expect(() => partsOf(slice, listed, [], 1.5)).toThrow(RangeError);
  });

  it('tiles the slice: contiguous parts, each charge in exactly one, none over maxCharges unless one second holds more', async () => {
    await checkProperty(
      'sweep-parts: tiles',
      { normal: 500, deep: 10_000 },
      [fc.array(fc.integer({ min: 0, max: 3599 }), { maxLength: 300 }), fc.integer({ min: 1, max: 40 })],
      (offsets, max) => {
        const created = offsets.map(second);
        const parts = partsOf(slice, listed, created, max);
        expect(parts[0]?.slice.from).toEqual(slice.from);
        expect(parts.at(-1)?.slice.to).toEqual(slice.to);
        expect(parts[0]?.listed.from).toEqual(listed.from);
        expect(parts.at(-1)?.listed.to).toEqual(listed.to);
        for (const [k, part] of parts.entries()) {
          expect(part.slice.from.getTime()).toBeLessThan(part.slice.to.getTime());
          if (k > 0) expect(part.slice.from).toEqual(parts[k - 1]?.slice.to);
          if (k > 0) expect(part.listed.from).toEqual(part.slice.from);
          if (k < parts.length - 1) expect(part.listed.to).toEqual(part.slice.to);
          const inPart = created.filter(
            (s) => s * 1000 >= part.slice.from.getTime() && s * 1000 < part.slice.to.getTime(),
          );
          expect(part.charges).toBe(inPart.length);
          if (part.charges > max) expect(new Set(inPart).size, 'an oversized part spans more than one second').toBe(1);
        }
        expect(parts.reduce((n, p) => n + p.charges, 0)).toBe(created.length);
        // As few parts as whole seconds allow: two neighbours together would overflow.
        for (let k = 1; k < parts.length; k += 1) {
          expect((parts[k - 1]?.charges ?? 0) + (parts[k]?.charges ?? 0)).toBeGreaterThan(max);
        }
      },
    );
  });
});
