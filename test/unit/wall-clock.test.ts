import { describe, expect, it } from 'vitest';
import { systemClock, wallClock } from '../../src/internal/clock.js';

/** A monotonic and a wall clock the test moves by hand, counting the wall clock's readings. */
function sources(wallStart: number, monoStart = 5_000.25) {
  // `exact`: the wall time to the fraction; `wall` reads it in whole ms, as `Date.now` does.
  const t = {
    mono: monoStart,
    exact: wallStart,
    wallReads: 0,
    get wall() {
      return Math.floor(this.exact);
    },
  };
  const now = wallClock(
    () => t.mono,
    () => {
      t.wallReads++;
      return t.wall;
    },
  );
  /** Both clocks move `ms` on. */
  const advance = (ms: number) => {
    t.mono += ms;
    t.exact += ms;
  };
  return { t, now, advance };
}

describe('wallClock: the wall clock read once a second, the monotonic clock between', () => {
  it('answers the wall clock in whole ms, reading it at most once a second', () => {
    const { t, now, advance } = sources(1_800_000_000_000);
    expect(now()).toBe(1_800_000_000_000);
    expect(t.wallReads).toBe(1);
    advance(0.4);
    expect(now()).toBe(1_800_000_000_000);
    advance(2.7);
    expect(now()).toBe(1_800_000_000_003);
    advance(996.8);
    expect(now()).toBe(1_800_000_000_999);
    expect(t.wallReads).toBe(1);
    // A second after the last reading: the wall clock again.
    advance(0.2);
    expect(now()).toBe(t.wall);
    expect(t.wallReads).toBe(2);
  });

  it('lags the wall clock by at most 1 ms, never leads it', () => {
    const { t, now, advance } = sources(1_800_000_000_000.625, 0.875);
    for (let i = 0; i < 5_000; i++) {
      advance(0.375);
      const read = now();
      expect(Number.isInteger(read)).toBe(true);
      expect(read).toBeLessThanOrEqual(t.wall);
      expect(read).toBeGreaterThanOrEqual(t.wall - 1);
    }
    expect(t.wallReads).toBe(2);
  });

  it('a step of the wall clock shows within a second', () => {
    const { t, now, advance } = sources(1_800_000_000_000);
    now();
    advance(300);
    t.exact += 3_600_000; // set forward an hour
    expect(now()).toBe(1_800_000_000_300);
    advance(700);
    expect(now()).toBe(t.wall);
    expect(now()).toBe(1_800_003_601_000);
  });

  it('reads the wall clock when the monotonic clock goes back (a fake clock replaced)', () => {
    const { t, now } = sources(1_800_000_000_000);
    now();
    t.mono -= 10;
    t.exact += 5;
    expect(now()).toBe(1_800_000_000_005);
    expect(t.wallReads).toBe(2);
  });

  it("the system clock agrees with Date.now() (within the 1 ms, and the two clocks' slew)", () => {
    for (let i = 0; i < 1_000; i++) {
      const before = Date.now();
      const read = systemClock.now();
      const after = Date.now();
      expect(Number.isInteger(read)).toBe(true);
      expect(read).toBeGreaterThanOrEqual(before - 2);
      expect(read).toBeLessThanOrEqual(after);
    }
  });
});
