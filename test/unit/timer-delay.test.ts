/**
 * staunch's timers hand Node whole milliseconds as small integers: one
 * fractional (or boxed) delay changes the representation of the delay field
 * of every `Timeout` in the process, undici's included (clock.ts,
 * `timerDelay`). Each step below would give a `Timeout` a new map if it did.
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { startTimer, systemClock, timerDelay } from '../../src/internal/clock.js';
import { startDeadline, startSteadyDeadline } from '../../src/internal/deadlines.js';

setFlagsFromString('--allow-natives-syntax');
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (
  a: object,
  b: object,
) => boolean;

/** A `Timeout` made with a small-integer delay, cleared at once. */
function probe(): NodeJS.Timeout {
  const t = setTimeout(() => {}, 10);
  clearTimeout(t);
  return t;
}

describe('timerDelay', () => {
  it('rounds up to whole milliseconds', () => {
    expect(timerDelay(1.5)).toBe(2);
    expect(timerDelay(100)).toBe(100);
    expect(timerDelay(0.2)).toBe(1);
    expect(timerDelay(0)).toBe(0);
    expect(timerDelay(59_999.0001)).toBe(60_000);
  });

  it('leaves what Node treats specially as it is (negative, not a number, beyond 2^30)', () => {
    expect(timerDelay(-3.5)).toBe(-3);
    expect(timerDelay(Number.NaN)).toBeNaN();
    expect(timerDelay(2 ** 31)).toBe(2 ** 31);
    expect(timerDelay(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("staunch's timers keep Node's Timeout map", () => {
  it('for a fractional sleep, a timer, and both deadline lists; a fractional setTimeout would not', async () => {
    const before = probe();
    await systemClock.sleep(1.5);
    expect(sameMap(before, probe())).toBe(true);

    await new Promise<void>((resolve) => startTimer(systemClock, 2.25, resolve));
    expect(sameMap(before, probe())).toBe(true);

    // A shorter deadline behind a longer one gets its own timer; the first arms the list's.
    const long = startSteadyDeadline(systemClock, 1000.5, () => {});
    await new Promise<void>((resolve) => startSteadyDeadline(systemClock, 3.75, resolve));
    long.cancel();
    const other = startDeadline(systemClock, 999.5, () => {});
    await new Promise<void>((resolve) => startDeadline(systemClock, 2.5, resolve));
    other.cancel();
    expect(sameMap(before, probe())).toBe(true);

    // The control: the probe sees the change a fractional delay makes (so the checks above could fail).
    clearTimeout(setTimeout(() => {}, 1.5));
    expect(sameMap(before, probe())).toBe(false);
  });
});
