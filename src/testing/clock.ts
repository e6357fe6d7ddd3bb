/**
 * The test clock: the lab's virtual clock, with what a test asks of it. Every
 * wait staunch schedules is logged, time moves only when the test (or
 * `autoAdvance`) says so, and a turn of the event loop runs after each
 * instant, so real sockets still get their I/O between two waits.
 */
import { checkNumber } from '../internal/validate.js';
import { turn, VirtualClock } from './virtual-clock.js';

/** 2026-01-01T00:00:00Z: a fixed start, so `Date`s in a test's output do not drift. */
const START = 1_767_225_600_000;

const BOUND = ['now', 'sleep', 'timer', 'advance', 'runNext', 'remaining', 'autoAdvance'] as const;

/**
 * A `Clock` for `createFetch({ clock })` whose time moves only when the test
 * says so: `advance(ms)`, `runNext()`, or `autoAdvance()`.
 */
export class TestClock extends VirtualClock {
  /** Every duration asked of the clock (sleeps and deadline timers), in call order, aborted ones included. */
  readonly sleeps: number[] = [];

  /** @param start the clock's first instant, epoch ms. @default 1767225600000 (2026-01-01) */
  constructor(start: number = START) {
    super(checkNumber('testClock start', start, { min: 0 }), 1);
    // Bound, so that a test may hand `clock.now` or `clock.sleep` on as a plain function.
    for (const name of BOUND) Object.defineProperty(this, name, { value: this[name].bind(this) });
  }

  override sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    return super.sleep(ms, signal);
  }

  override timer(ms: number, fn: () => void): () => void {
    this.sleeps.push(ms);
    return super.timer(ms, fn);
  }

  /**
   * Runs the next wait by itself whenever `idle()` says nothing real is in
   * flight (checked after each macrotask turn), so backoff passes at once
   * while a real attempt still gets its time. Returns a function that stops it.
   * @param idle whether the test's real I/O is done. @default () => true
   */
  autoAdvance(idle: () => boolean = () => true): () => void {
    let stopped = false;
    const loop = async (): Promise<void> => {
      while (!stopped) {
        await turn();
        if (!stopped && idle()) await this.runNext();
      }
    };
    void loop();
    return () => {
      stopped = true;
    };
  }
}

/**
 * A {@link TestClock} starting at `start`.
 * @example
 * const clock = testClock();
 * const fetch = createFetch({ fetch: faults.fetch, clock });
 * const stop = clock.autoAdvance();
 */
export function testClock(start?: number): TestClock {
  return new TestClock(start);
}
