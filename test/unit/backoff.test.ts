import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { constantBackoff, exponentialBackoff, type Jitter } from '../../src/retry/backoff.js';

const ERRORS = { TypeError, RangeError };
const fixed = (r: number) => () => r;
const ALMOST_ONE = 1 - Number.EPSILON / 2; // the largest double below 1
const JITTERS: Jitter[] = ['none', 'full', 'equal', 'decorrelated'];

/** Valid options, the previous delay, the attempt number and a draw of the random source. */
const setup = fc
  .record({
    base: fc.double({ min: 0.001, max: 1e6, noNaN: true }),
    extra: fc.double({ min: 0, max: 1e9, noNaN: true }),
    jitter: fc.constantFrom(...JITTERS),
  })
  .map(({ base, extra, jitter }) => ({ base, cap: base + extra, jitter }));
const attemptArb = fc.integer({ min: 1, max: 10_000 });
const unitArb = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

describe('exponentialBackoff: the AWS formulas, n = attempt - 1', () => {
  const base = 100;
  const cap = 10_000;

  it.each([
    // attempt, none
    [1, 100],
    [2, 200],
    [3, 400],
    [4, 800],
    [7, 6_400],
    [8, 10_000], // 12_800 capped
    [50, 10_000],
  ])('none: attempt %i → %i ms whatever the random', (attempt, expected) => {
    const backoff = exponentialBackoff({ base, cap, jitter: 'none' });
    for (const r of [0, 0.5, ALMOST_ONE]) expect(backoff(attempt, 0, fixed(r))).toBe(expected);
  });

  it.each([
    // attempt, random, full = U(0, t)
    [1, 0, 0],
    [1, 0.5, 50],
    [3, 0.5, 200],
    [8, 0.5, 5_000],
    [8, 0.25, 2_500],
  ])('full: attempt %i, random %d → %d ms', (attempt, r, expected) => {
    expect(exponentialBackoff({ base, cap, jitter: 'full' })(attempt, 0, fixed(r))).toBe(expected);
  });

  it('full: just below t with random → 1, never t itself', () => {
    const value = exponentialBackoff({ base, cap, jitter: 'full' })(3, 0, fixed(ALMOST_ONE));
    expect(value).toBeLessThan(400);
    expect(value).toBeGreaterThan(399.99);
  });

  it.each([
    // attempt, random, equal = t/2 + U(0, t/2)
    [1, 0, 50],
    [1, 0.5, 75],
    [3, 0, 200],
    [3, 0.5, 300],
    [8, 0, 5_000],
    [8, 0.5, 7_500],
  ])('equal: attempt %i, random %d → %d ms', (attempt, r, expected) => {
    expect(exponentialBackoff({ base, cap, jitter: 'equal' })(attempt, 0, fixed(r))).toBe(expected);
  });

  it.each([
    // previous, random, decorrelated = min(cap, U(base, 3·previous)), previous = base at first
    [0, 0, 100],
    [0, 0.5, 200], // U(100, 300)
    [1_000, 0, 100],
    [1_000, 0.5, 1_550], // U(100, 3000)
    [5_000, 0.5, 7_550], // U(100, 15000)
    [5_000, 0.9, 10_000], // 13_510 capped
  ])('decorrelated: previous %i, random %d → %d ms', (previous, r, expected) => {
    const backoff = exponentialBackoff({ base, cap, jitter: 'decorrelated' });
    expect(backoff(1, previous, fixed(r))).toBe(expected);
    // The attempt number plays no part.
    expect(backoff(9, previous, fixed(r))).toBe(expected);
  });

  it('decorrelated: just below 3·previous with random → 1', () => {
    const value = exponentialBackoff({ base, cap, jitter: 'decorrelated' })(
      2,
      1_000,
      fixed(ALMOST_ONE),
    );
    expect(value).toBeLessThan(3_000);
    expect(value).toBeGreaterThan(2_999.99);
  });

  it('defaults to base 250, cap 20 s, full jitter', () => {
    const backoff = exponentialBackoff();
    expect(backoff(1, 0, fixed(0.5))).toBe(125);
    expect(backoff(2, 0, fixed(0.5))).toBe(250);
    expect(backoff(100, 0, fixed(0.5))).toBe(10_000);
    expect(exponentialBackoff({})(1, 0, fixed(0.5))).toBe(125);
  });

  it('cap equal to base gives a constant ceiling', () => {
    const backoff = exponentialBackoff({ base: 500, cap: 500, jitter: 'none' });
    expect([1, 2, 10].map((a) => backoff(a, 0, fixed(0)))).toEqual([500, 500, 500]);
  });

  it('does not overflow for attempt 10 000 or more', () => {
    for (const jitter of JITTERS) {
      const backoff = exponentialBackoff({ base: 250, cap: 20_000, jitter });
      for (const attempt of [1_024, 1_025, 10_000, 1e9, Number.MAX_SAFE_INTEGER]) {
        const value = backoff(attempt, 20_000, fixed(ALMOST_ONE));
        expect(Number.isFinite(value)).toBe(true);
        expect(value).toBeLessThanOrEqual(20_000);
      }
    }
  });

  it('stays finite in [0, cap] for out-of-contract inputs (NaN/∞ attempt or previous)', () => {
    for (const jitter of JITTERS) {
      const backoff = exponentialBackoff({ base: 100, cap: 1_000, jitter });
      for (const attempt of [Number.NaN, Number.POSITIVE_INFINITY, 0, -3, 1.5]) {
        for (const previous of [Number.NaN, Number.POSITIVE_INFINITY, -1, 1e308]) {
          for (const r of [0, 0.5, ALMOST_ONE]) {
            const value = backoff(attempt, previous, fixed(r));
            expect(Number.isFinite(value), `${jitter} ${attempt} ${previous} ${r}`).toBe(true);
            expect(value).toBeGreaterThanOrEqual(0);
            expect(value).toBeLessThanOrEqual(1_000);
          }
        }
      }
    }
  });

  it('never calls the random source for jitter none', () => {
    const backoff = exponentialBackoff({ jitter: 'none' });
    expect(
      backoff(3, 0, () => {
        throw new Error('random called');
      }),
    ).toBe(1_000);
  });
});

describe('exponentialBackoff properties', () => {
  it('is always finite and within [0, cap]', () => {
    fc.assert(
      fc.property(
        setup,
        attemptArb,
        fc.double({ min: 0, max: 1e12, noNaN: true }),
        unitArb,
        (o, attempt, previous, r) => {
          const value = exponentialBackoff(o)(attempt, previous, fixed(r));
          return Number.isFinite(value) && value >= 0 && value <= o.cap;
        },
      ),
    );
  });

  it('full and equal never exceed the value of jitter none; equal is at least half of it', () => {
    fc.assert(
      fc.property(setup, attemptArb, unitArb, ({ base, cap }, attempt, r) => {
        const none = exponentialBackoff({ base, cap, jitter: 'none' })(attempt, 0, fixed(r));
        const full = exponentialBackoff({ base, cap, jitter: 'full' })(attempt, 0, fixed(r));
        const equal = exponentialBackoff({ base, cap, jitter: 'equal' })(attempt, 0, fixed(r));
        return full <= none && equal <= none && equal >= none / 2;
      }),
    );
  });

  it('decorrelated is at least base, at most min(cap, 3·max(previous, base))', () => {
    fc.assert(
      fc.property(
        setup,
        fc.double({ min: 0, max: 1e12, noNaN: true }),
        unitArb,
        ({ base, cap }, previous, r) => {
          const value = exponentialBackoff({ base, cap, jitter: 'decorrelated' })(
            1,
            previous,
            fixed(r),
          );
          const upper = Math.min(cap, 3 * Math.max(previous > 0 ? previous : base, base));
          return value >= base && value <= upper;
        },
      ),
    );
  });

  it('none is monotone in the attempt and reaches the cap', () => {
    fc.assert(
      fc.property(setup, attemptArb, attemptArb, ({ base, cap }, a, b) => {
        const backoff = exponentialBackoff({ base, cap, jitter: 'none' });
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        return (
          backoff(lo, 0, fixed(0)) <= backoff(hi, 0, fixed(0)) &&
          backoff(2_000, 0, fixed(0)) === cap
        );
      }),
    );
  });

  it('is monotone in the random draw', () => {
    fc.assert(
      fc.property(setup, attemptArb, unitArb, unitArb, (o, attempt, r1, r2) => {
        const backoff = exponentialBackoff(o);
        const [lo, hi] = r1 <= r2 ? [r1, r2] : [r2, r1];
        return backoff(attempt, o.base * 2, fixed(lo)) <= backoff(attempt, o.base * 2, fixed(hi));
      }),
    );
  });
});

describe('exponentialBackoff options validation', () => {
  it.each<[object, 'TypeError' | 'RangeError', RegExp]>([
    [{ base: 0 }, 'RangeError', /backoff\.base.*got 0/],
    [{ base: -1 }, 'RangeError', /backoff\.base.*got -1/],
    [{ base: Number.NaN }, 'TypeError', /backoff\.base.*got NaN/],
    [{ base: Number.POSITIVE_INFINITY }, 'RangeError', /backoff\.base.*got Infinity/],
    [{ base: '100' }, 'TypeError', /backoff\.base.*got "100"/],
    [{ base: null }, 'TypeError', /backoff\.base.*got null/],
    [{ cap: 10 }, 'RangeError', /backoff\.cap.*250.*got 10/],
    [{ base: 100, cap: 99 }, 'RangeError', /backoff\.cap.*100.*got 99/],
    [{ cap: Number.POSITIVE_INFINITY }, 'RangeError', /backoff\.cap.*got Infinity/],
    [{ cap: '5000' }, 'TypeError', /backoff\.cap.*got "5000"/],
    [
      { jitter: 'random' },
      'TypeError',
      /backoff\.jitter.*none, full, equal, decorrelated.*"random"/,
    ],
    [{ jitter: 1 }, 'TypeError', /backoff\.jitter.*got 1/],
    [{ base: 30_000 }, 'RangeError', /backoff\.cap \(default\).*30000.*got 20000/],
    [{ max: 5000 }, 'TypeError', /backoff\.max is not an option/],
  ])('%o → %s', (options, type, message) => {
    expect(() => exponentialBackoff(options as never)).toThrow(ERRORS[type]);
    expect(() => exponentialBackoff(options as never)).toThrow(message);
  });

  it.each([[null], [5], ['full'], [[]]])('rejects %o as options, naming the value', (options) => {
    expect(() => exponentialBackoff(options as never)).toThrow(TypeError);
    expect(() => exponentialBackoff(options as never)).toThrow(/backoff.*must be an object, got/);
  });

  it('accepts undefined fields as defaults', () => {
    const backoff = exponentialBackoff({ base: undefined, jitter: undefined } as never);
    expect(backoff(1, 0, fixed(0.5))).toBe(125);
  });
});

describe('constantBackoff', () => {
  it('always returns the same delay', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        attemptArb,
        unitArb,
        (ms, a, r) => constantBackoff(ms)(a, 123, fixed(r)) === ms,
      ),
    );
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY, '5'])('rejects %o naming the value', (ms) => {
    expect(() => constantBackoff(ms as never)).toThrow(/constantBackoff.*got/);
    expect(() => constantBackoff(ms as never)).toThrow(String(ms));
  });
});
