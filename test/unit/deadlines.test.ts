import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/internal/clock.js';
import {
  STEADY_TICK_MS,
  startDeadline,
  startSteadyDeadline,
} from '../../src/internal/deadlines.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('startDeadline on the system clock (one timer for deadlines of one duration)', () => {
  it('fires each deadline at its own time, in order, one timer for all', () => {
    const fired: [string, number][] = [];
    const t0 = performance.now();
    const at = (name: string) => () => fired.push([name, performance.now() - t0]);
    startDeadline(systemClock, 100, at('a'));
    vi.advanceTimersByTime(30);
    startDeadline(systemClock, 100, at('b'));
    vi.advanceTimersByTime(30);
    startDeadline(systemClock, 100, at('c'));
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(200);
    expect(fired).toEqual([
      ['a', 100],
      ['b', 130],
      ['c', 160],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a cancelled deadline never fires; the timer goes once the list is empty', () => {
    const fire = vi.fn();
    const a = startDeadline(systemClock, 100, fire);
    const b = startDeadline(systemClock, 100, fire);
    a.cancel();
    a.cancel(); // idempotent
    vi.advanceTimersByTime(50);
    b.cancel();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(500);
    expect(fire).not.toHaveBeenCalled();
  });

  it('a shorter deadline behind a longer one gets its own timer and fires on time', () => {
    const fired: string[] = [];
    startDeadline(systemClock, 1000, () => fired.push('long'));
    const short = startDeadline(systemClock, 10, () => fired.push('short'));
    expect(vi.getTimerCount()).toBe(2);
    vi.advanceTimersByTime(10);
    expect(fired).toEqual(['short']);
    short.cancel(); // after it fired: nothing to do
    vi.advanceTimersByTime(990);
    expect(fired).toEqual(['short', 'long']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a deadline set while others fire is still kept on time', () => {
    const fired: [string, number][] = [];
    const t0 = performance.now();
    startDeadline(systemClock, 100, () => {
      fired.push(['a', performance.now() - t0]);
      startDeadline(systemClock, 100, () => fired.push(['from a', performance.now() - t0]));
    });
    vi.advanceTimersByTime(50);
    startDeadline(systemClock, 100, () => fired.push(['b', performance.now() - t0]));
    vi.advanceTimersByTime(500);
    expect(fired).toEqual([
      ['a', 100],
      ['b', 150],
      ['from a', 200],
    ]);
  });

  it.each([
    ['startDeadline', startDeadline],
    ['startSteadyDeadline', startSteadyDeadline],
  ])(
    '%s: any mix of durations, starts and cancellations: each fires once, at its time, unless cancelled',
    (_name, start) => {
      fc.assert(
        fc.property(
          fc.array(
            fc.record({
              wait: fc.integer({ min: 0, max: 50 }),
              ms: fc.constantFrom(10, 40, 100, 250),
              cancelAfter: fc.option(fc.integer({ min: 0, max: 150 }), { nil: undefined }),
            }),
            { maxLength: 20 },
          ),
          (plan) => {
            const t0 = performance.now();
            const fired = new Map<number, number[]>();
            const starts: number[] = [];
            let offset = 0;
            for (const step of plan) {
              offset += step.wait;
              starts.push(offset);
            }
            // Every start and cancellation on one timeline; at equal times a start comes first.
            const events = plan.flatMap((step, i) => [
              { at: starts[i]!, kind: 0, i },
              ...(step.cancelAfter === undefined
                ? []
                : [{ at: starts[i]! + step.cancelAfter, kind: 1, i }]),
            ]);
            events.sort((x, y) => x.at - y.at || x.kind - y.kind || x.i - y.i);
            const deadlines: { cancel(): void }[] = [];
            for (const e of events) {
              const now = performance.now() - t0;
              if (e.at > now) vi.advanceTimersByTime(e.at - now);
              if (e.kind === 1) deadlines[e.i]!.cancel();
              else {
                deadlines[e.i] = start(systemClock, plan[e.i]!.ms, () => {
                  fired.set(e.i, [...(fired.get(e.i) ?? []), performance.now() - t0]);
                });
              }
            }
            vi.advanceTimersByTime(1000);
            for (const [i, step] of plan.entries()) {
              const due = starts[i]! + step.ms;
              const cancelledAt =
                step.cancelAfter === undefined
                  ? Number.POSITIVE_INFINITY
                  : starts[i]! + step.cancelAfter;
              const times = fired.get(i) ?? [];
              if (cancelledAt < due) expect(times).toEqual([]);
              else if (cancelledAt > due) expect(times).toEqual([due]);
              else expect(times.length).toBeLessThanOrEqual(1);
            }
            expect(vi.getTimerCount()).toBe(0);
          },
        ),
      );
    },
  );
});

/** Timers that hold this process open (Node lists one `Timeout` for each). */
function refedTimers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}

describe("startSteadyDeadline: one ref'd timer while deadlines come and go, gone a tick after the last", () => {
  it('fires each deadline at its own time, in order, under one timer', () => {
    const fired: [string, number][] = [];
    const t0 = performance.now();
    const at = (name: string) => () => fired.push([name, performance.now() - t0]);
    startSteadyDeadline(systemClock, 100, at('a'));
    vi.advanceTimersByTime(30);
    startSteadyDeadline(systemClock, 100, at('b'));
    // Shorter than the last: its own timer.
    startSteadyDeadline(systemClock, 10, at('c'));
    const cancelled = startSteadyDeadline(systemClock, 100, at('never'));
    expect(vi.getTimerCount()).toBe(2);
    cancelled.cancel();
    vi.advanceTimersByTime(200);
    expect(fired).toEqual([
      ['c', 40],
      ['a', 100],
      ['b', 130],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('its timer outlives the last cancel and a refill, ticks while one is pending, and goes a tick after the last', () => {
    const fire = vi.fn();
    const a = startSteadyDeadline(systemClock, 1000, fire);
    vi.advanceTimersByTime(40);
    a.cancel();
    // Left armed: nothing to clear and make again when the next attempt comes.
    expect(vi.getTimerCount()).toBe(1);
    const b = startSteadyDeadline(systemClock, 1000, fire);
    expect(vi.getTimerCount()).toBe(1);
    // Ticks while b is pending: still one timer.
    vi.advanceTimersByTime(5 * STEADY_TICK_MS);
    expect(vi.getTimerCount()).toBe(1);
    b.cancel();
    vi.advanceTimersByTime(STEADY_TICK_MS);
    expect(vi.getTimerCount()).toBe(0);
    expect(fire).not.toHaveBeenCalled();
  });

  it("an object's onDeadline in place of a function: on the list, on a timer of its own, on another clock", () => {
    const fired: string[] = [];
    const target = (name: string) => ({ onDeadline: () => fired.push(name) });
    startSteadyDeadline(systemClock, 100, target('listed'));
    startSteadyDeadline(systemClock, 10, target('own'));
    let onFire: (() => void) | undefined;
    const clock = {
      now: () => 0,
      sleep: () => Promise.resolve(),
      timer: (_ms: number, f: () => void) => {
        onFire = f;
        return () => {};
      },
    };
    startSteadyDeadline(clock, 5, target('other clock'));
    onFire?.();
    vi.advanceTimersByTime(100);
    expect(fired).toEqual(['other clock', 'own', 'listed']);
  });

  it('the two lists are apart: each fires its own, and a cancel in one leaves the other armed', () => {
    const fired: string[] = [];
    const strong = startDeadline(systemClock, 50, () => fired.push('strong'));
    startSteadyDeadline(systemClock, 50, () => fired.push('weak'));
    strong.cancel();
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(50);
    expect(fired).toEqual(['weak']);
  });

  it('holds the process open while a deadline is pending, as startDeadline does', () => {
    vi.useRealTimers();
    const before = refedTimers();
    const fire = vi.fn();
    const steady = startSteadyDeadline(systemClock, 60_000, fire);
    expect(refedTimers()).toBe(before + 1);
    // A shorter one behind it gets a timer of its own, which holds it too.
    const shorter = startSteadyDeadline(systemClock, 30_000, fire);
    expect(refedTimers()).toBe(before + 2);
    shorter.cancel();
    steady.cancel();
    // The list's timer stays until its next tick (at most STEADY_TICK_MS).
    expect(refedTimers()).toBe(before + 1);
    expect(fire).not.toHaveBeenCalled();
  });
});

describe('startDeadline on another clock', () => {
  it('goes through the clock', () => {
    const fire = vi.fn();
    let onFire: (() => void) | undefined;
    const cancel = vi.fn();
    const clock = {
      now: () => 0,
      sleep: () => Promise.resolve(),
      timer: (_ms: number, f: () => void) => {
        onFire = f;
        return cancel;
      },
    };
    const d = startDeadline(clock, 5, fire);
    expect(vi.getTimerCount()).toBe(0);
    onFire?.();
    expect(fire).toHaveBeenCalledOnce();
    d.cancel();
    expect(cancel).toHaveBeenCalledOnce();
  });
});
