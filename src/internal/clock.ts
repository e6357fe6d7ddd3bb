/**
 * Time, injected. Every policy and the executor read time and wait through a
 * `Clock`, so the same code runs in real time, under test with a fake clock,
 * and inside the lab's virtual-time simulator.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch (wall time: `Retry-After` dates are compared with it). */
  now(): number;
  /**
   * Resolves after `ms` milliseconds. If `signal` aborts first, rejects with
   * `signal.reason` at once and leaves no timer or listener behind.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Optional: runs `onFire` after `ms` unless the returned function is called
   * first. A clock that has it spares the executor a promise and an
   * `AbortController` per attempt deadline (the lab's virtual clock does);
   * without it, deadlines go through `sleep`.
   */
  timer?(ms: number, onFire: () => void): () => void;
}

/** A source of uniform random numbers in [0, 1), like `Math.random`. */
export type Random = () => number;

/**
 * `ms` as the delay to hand `setTimeout`: whole milliseconds, as a small
 * integer. Node keeps a timer's delay on its `Timeout` object; the first
 * delay that is not a small integer (a jittered backoff, a deadline's
 * remainder computed in optimised code, even when whole) changes that field's
 * representation for every `Timeout` of the process, undici's keep-alive
 * timer of each request included: the timer code is de-optimised, and each
 * later `Timeout` carries a boxed number (docs/benchmarks.md, "Node's timers
 * kept whole"). Rounding up changes nothing else: Node fires a timer once at
 * least `ms` has passed on its whole-millisecond clock, and stores 1 for a
 * delay under 1 or not a number.
 * @internal
 */
export function timerDelay(ms: number): number {
  const whole = Math.ceil(ms);
  // `| 0` makes it an int32, which V8 passes as a small integer (up to 2^30 everywhere).
  return whole < 0x40000000 ? whole | 0 : whole;
}

function systemSleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, timerDelay(ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The real clock: `Date.now()` and `setTimeout`. */
export const systemClock: Clock = Object.freeze({ now: Date.now, sleep: systemSleep });

/**
 * Runs `onFire` after `ms` on `clock` unless the returned function is called
 * first. The system clock uses one `setTimeout`; other clocks go through
 * `sleep` so that virtual time drives them too.
 */
export function startTimer(clock: Clock, ms: number, onFire: () => void): () => void {
  if (clock === systemClock) {
    const timer = setTimeout(onFire, timerDelay(ms));
    return () => clearTimeout(timer);
  }
  if (typeof clock.timer === 'function') return clock.timer(ms, onFire);
  const cancel = new AbortController();
  clock.sleep(ms, cancel.signal).then(onFire, noop);
  // A constant reason: `abort()` without one builds a DOMException and its stack.
  return () => cancel.abort(CANCELLED);
}

const CANCELLED: unique symbol = Symbol('staunch.timerCancelled');

export function noop(): void {}
