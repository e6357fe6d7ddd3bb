/** The limiter's local meter: counting in place gives what the pure record gives. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Meter, meterCount, meterRecord } from '../../src/policy/rate/meter.js';

describe('meterCount', () => {
  it('counts in place within a bucket and starts a new meter past it', () => {
    const m = meterCount(undefined, 1_000);
    expect(m).toEqual([1_000, 1, 0]);
    expect(meterCount(m, 1_499)).toBe(m);
    expect(m).toEqual([1_000, 2, 0]);
    const next = meterCount(m, 1_500);
    expect(next).not.toBe(m);
    expect(next[0]).toBe(1_500);
    expect(next[1]).toBe(1);
  });

  it('any sequence of events: the same meter as meterRecord', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5_000 }), { maxLength: 60 }), (times) => {
        let pure: Meter | undefined;
        let counted: Meter | undefined;
        for (const t of times) {
          pure = meterRecord(pure, t);
          counted = meterCount(counted, t);
          expect(counted).toEqual(pure);
        }
      }),
    );
  });
});
