/**
 * Virtual time for the simulator: a `Clock` whose time moves only when
 * everything scheduled for the current instant has run. The executor and the
 * policies sleep on it exactly as they sleep on the system clock, so the
 * simulator runs the library's own code, only faster than real time.
 *
 * Time has a resolution of 1 ms, like `setTimeout`: a sleep ends at the
 * first whole millisecond at or after its due time, and everything due in
 * one millisecond runs in the order it was scheduled. Between two instants
 * the loop lets every pending promise reaction run (one macrotask turn), so
 * a chain of `await`s started at an instant finishes at that instant.
 */
import type { Clock } from '../internal/clock.js';

function noop(): void {}

interface Entry {
  run: () => void;
  dead: boolean;
}

/** One macrotask turn: every promise reaction queued so far runs first. */
const turn: () => Promise<void> =
  typeof setImmediate === 'function'
    ? () => new Promise<void>((resolve) => setImmediate(resolve))
    : () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * A clock in virtual time. `sleep` and `at` schedule; `run()` advances time
 * from instant to instant until nothing is left to do.
 * @example
 * const clock = new VirtualClock(Date.UTC(2026, 0, 1));
 * clock.at(clock.now() + 500, () => startRequest());
 * await clock.run();
 */
export class VirtualClock implements Clock {
  #now: number;
  /** Entries per instant, in scheduling order. */
  readonly #buckets = new Map<number, Entry[]>();
  /** A binary min-heap of the instants that have a bucket. */
  readonly #instants: number[] = [];
  #running = false;

  /** @param start the first instant, in epoch ms (rounded up to a whole ms). */
  constructor(start: number) {
    this.#now = Math.ceil(start);
  }

  /** The current virtual time, in epoch ms (a whole number). */
  now(): number {
    return this.#now;
  }

  /** Resolves `ms` virtual milliseconds from now; an abort of `signal` rejects at once with its reason. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      if (signal === undefined) {
        this.#schedule(this.#due(ms), { run: resolve as () => void, dead: false });
        return;
      }
      const entry: Entry = {
        run: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        dead: false,
      };
      const onAbort = (): void => {
        // Release the closure now: a cancelled timer may stay queued for a long while.
        entry.dead = true;
        entry.run = noop;
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#schedule(this.#due(ms), entry);
    });
  }

  /**
   * Runs `fn` at virtual time `time` (epoch ms; a past time means the
   * current instant, after what is already scheduled for it).
   */
  at(time: number, fn: () => void): void {
    this.#schedule(Math.max(this.#now, Math.ceil(time)), { run: fn, dead: false });
  }

  /**
   * Runs `fn` after `ms` unless the returned function is called first: a
   * timer without a promise or an `AbortSignal` (what `startTimer` uses when
   * a clock offers it).
   */
  timer(ms: number, fn: () => void): () => void {
    const entry: Entry = { run: fn, dead: false };
    this.#schedule(this.#due(ms), entry);
    return () => {
      entry.dead = true;
      entry.run = noop;
    };
  }

  /** Instants still scheduled (including cancelled sleeps not yet due). */
  get pending(): number {
    return this.#instants.length;
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
      const heap = this.#instants;
      while (heap.length > 0 && heap[0]! < until) {
        const instant = popMin(heap);
        const bucket = this.#buckets.get(instant)!;
        this.#buckets.delete(instant);
        if (instant > this.#now) this.#now = instant;
        let ran = false;
        for (let i = 0; i < bucket.length; i++) {
          const entry = bucket[i]!;
          if (entry.dead) continue;
          ran = true;
          entry.run();
        }
        // An instant of cancelled sleeps only: nothing can have reacted.
        if (ran) await turn();
      }
    } finally {
      this.#running = false;
    }
  }

  #due(ms: number): number {
    const wait = ms > 0 && Number.isFinite(ms) ? ms : ms > 0 ? 2_147_483_647 : 0;
    return Math.ceil(this.#now + wait);
  }

  #schedule(instant: number, entry: Entry): void {
    const bucket = this.#buckets.get(instant);
    if (bucket !== undefined) {
      bucket.push(entry);
      return;
    }
    this.#buckets.set(instant, [entry]);
    pushHeap(this.#instants, instant);
  }
}

function pushHeap(heap: number[], value: number): void {
  let i = heap.length;
  heap.push(value);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const p = heap[parent]!;
    if (p <= value) break;
    heap[i] = p;
    i = parent;
  }
  heap[i] = value;
}

function popMin(heap: number[]): number {
  const top = heap[0]!;
  const last = heap.pop()!;
  const n = heap.length;
  if (n === 0) return top;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= n) break;
    const right = left + 1;
    const child = right < n && heap[right]! < heap[left]! ? right : left;
    if (heap[child]! >= last) break;
    heap[i] = heap[child]!;
    i = child;
  }
  heap[i] = last;
  return top;
}
