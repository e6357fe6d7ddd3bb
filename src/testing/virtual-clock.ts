/**
 * Virtual time for the simulator: a `Clock` whose time moves only when
 * everything scheduled for the current instant has run. The executor and the
 * policies sleep on it exactly as they sleep on the system clock, so the
 * simulator runs the library's own code, only faster than real time.
 *
 * Time is exact: a sleep ends at its due time to the fraction of a
 * millisecond, timers run in order of due time, and timers due at the same
 * instant run in the order they were scheduled. (An earlier version kept
 * whole-millisecond buckets: an arrival due at 5.7 ms then ran before a retry
 * due at 5.3 ms scheduled later, an error of up to 9.6 points on a spike.)
 * Between two instants the loop lets every pending promise reaction run
 * (and the reactions they queue), so a chain of `await`s started at an
 * instant finishes at that instant.
 */
import type { Clock } from '../internal/clock.js';
import { TimerHeap } from './timer-heap.js';

/** Node's and Bun's `setImmediate`, looked up so that the DOM-only typecheck sees no Node global. */
const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;

/** One macrotask turn: every promise reaction queued so far runs first. */
export const turn: () => Promise<void> =
  typeof immediate === 'function'
    ? () => new Promise<void>((resolve) => immediate(resolve))
    : () => new Promise<void>((resolve) => setTimeout(resolve, 0));

const nextTick = (globalThis as { process?: { nextTick?: (fn: () => void) => void } }).process
  ?.nextTick;
/**
 * Resolves once every promise reaction queued so far, and every reaction
 * those queue, has run: Node runs a `process.nextTick` callback queued from
 * a microtask only after the microtask queue is empty. As exact as a
 * macrotask turn and several times cheaper (no pass through the event
 * loop's poll), which matters at two million instants per run. Elsewhere: a turn.
 */
const drain: () => Promise<void> =
  typeof nextTick === 'function' ? () => new Promise<void>((resolve) => nextTick(resolve)) : turn;
/** Instants between two real macrotask turns, so that I/O and messages still get through. */
const TURN_EVERY = 1024;

/**
 * A clock in virtual time. `sleep` and `at` schedule; `run()` advances time
 * from instant to instant until nothing is left to do.
 * @example
 * const clock = new VirtualClock(Date.UTC(2026, 0, 1));
 * clock.at(clock.now() + 500, () => startRequest());
 * await clock.run();
 */
export class VirtualClock implements Clock {
  readonly #start: number;
  /** ms since `#start`: kept apart from the epoch so that fractions of a ms keep full precision. */
  #now = 0;
  /** Timers by (due, scheduling order). */
  readonly #heap = new TimerHeap();
  #running = false;
  /** Instants between two real macrotask turns. */
  readonly #turnEvery: number;

  /**
   * @param start the first instant, in epoch ms.
   * @param turnEvery instants between two real macrotask turns (1: a turn after
   *   every instant, for tests whose code does real I/O between waits).
   *   @default 1024
   */
  constructor(start: number, turnEvery: number = TURN_EVERY) {
    this.#start = start;
    this.#turnEvery = turnEvery;
  }

  /** The current virtual time, in epoch ms (fractional; an epoch-sized double resolves about 0.2 µs). */
  now(): number {
    return this.#start + this.#now;
  }

  /** Virtual ms since the clock's start, at full precision. */
  elapsed(): number {
    return this.#now;
  }

  /** Runs `fn` at `offset` virtual ms since the clock's start (a past offset: now, after what is due now). */
  atElapsed(offset: number, fn: () => void): void {
    this.#schedule(Math.max(this.#now, offset), fn);
  }

  /** Resolves `ms` virtual milliseconds from now; an abort of `signal` rejects at once with its reason. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      if (signal === undefined) {
        this.#schedule(this.#due(ms), resolve as () => void);
        return;
      }
      const onAbort = (): void => {
        // Releases the closure now: a cancelled timer may stay queued for a long while.
        this.#heap.cancel(handle);
        reject(signal.reason);
      };
      const handle = this.#schedule(this.#due(ms), () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Runs `fn` at virtual time `time` (epoch ms; a past time means the
   * current instant, after what is already scheduled for it).
   */
  at(time: number, fn: () => void): void {
    this.#schedule(Math.max(this.#now, time - this.#start), fn);
  }

  /**
   * Runs `fn` after `ms` unless the returned function is called first: a
   * timer without a promise or an `AbortSignal` (what `startTimer` uses when
   * a clock offers it).
   */
  timer(ms: number, fn: () => void): () => void {
    const handle = this.#schedule(this.#due(ms), fn);
    return () => this.#heap.cancel(handle);
  }

  /** Timers still scheduled (including cancelled ones not yet due). */
  get pending(): number {
    return this.#heap.size;
  }

  /**
   * Advances time until nothing is scheduled, or until `until` (epoch ms,
   * exclusive) if given. Resolves once the last instant's reactions ran.
   */
  async run(until: number = Number.POSITIVE_INFINITY): Promise<void> {
    if (this.#running) throw new Error('VirtualClock.run is already running');
    this.#running = true;
    try {
      await turn();
      await this.#runTo(until - this.#start, false);
    } finally {
      this.#running = false;
    }
  }

  /**
   * Moves time forward by `ms`: runs every timer due up to and including
   * that instant, in order, then the clock reads exactly `now() + ms`. The
   * first instant runs at once, in the caller's turn (with nothing due, the
   * clock has moved when `advance` returns), the next ones after the
   * reactions of the previous one.
   */
  advance(ms: number): Promise<void> {
    const end = this.#now + Math.max(0, ms);
    const moved = () => {
      if (end > this.#now) this.#now = end;
    };
    if (this.#heap.peekDue() > end) {
      moved();
      return Promise.resolve();
    }
    return this.#runTo(end, true).then(moved);
  }

  /** Runs the earliest instant that has a live timer, moving time to it; false if none. */
  async runNext(): Promise<boolean> {
    const due = this.#heap.peekLive();
    if (due === Number.POSITIVE_INFINITY) return false;
    await this.#runTo(due, true);
    return true;
  }

  /** Remaining ms of each live timer, soonest first. */
  remaining(): number[] {
    return this.#heap.liveDues().map((due) => due - this.#now);
  }

  /** Runs the instants before `end` (elapsed ms), and at `end` too if `inclusive`. */
  async #runTo(end: number, inclusive: boolean): Promise<void> {
    let instants = 0;
    const heap = this.#heap;
    while (heap.peekDue() < end || (inclusive && heap.peekDue() === end)) {
      const instant = heap.peekDue();
      if (instant > this.#now) this.#now = instant;
      let ran = false;
      // Everything due at exactly this instant, in scheduling order (the heap's tie-break);
      // timers scheduled now for this instant join the batch, as they would have in a bucket.
      while (heap.peekDue() === instant) {
        const fn = heap.pop();
        if (fn === undefined) continue;
        ran = true;
        fn();
      }
      // An instant of cancelled timers only: nothing can have reacted.
      if (ran) await (++instants % this.#turnEvery === 0 ? turn() : drain());
    }
  }

  #due(ms: number): number {
    const wait = ms > 0 && Number.isFinite(ms) ? ms : ms > 0 ? 2_147_483_647 : 0;
    return this.#now + wait;
  }

  #schedule(due: number, run: () => void): number {
    return this.#heap.push(due, run);
  }
}
