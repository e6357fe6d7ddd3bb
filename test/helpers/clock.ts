/**
 * The test clock is staunch/testing's (`testClock`, the lab's virtual clock
 * with a log of every wait); the suite knows it by its older name. Beside it,
 * two ways to let real I/O run without waiting on the wall clock.
 */
export { type TestClock as FakeClock, testClock as fakeClock } from '../../src/testing/index.js';

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Lets real I/O and promise callbacks run (a few macrotasks; no wall-clock wait). */
export async function flush(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await settle();
}

/** Waits (in macrotask turns, not time) until `check()` holds; throws after `turns` turns. */
export async function until(check: () => boolean, turns = 10_000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (check()) return;
    await settle();
  }
  throw new Error('condition never held');
}
