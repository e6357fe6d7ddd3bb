import type { Clock } from '../../src/internal/clock.js';

interface PendingSleep {
  at: number;
  ms: number;
  seq: number;
  resolve: () => void;
}

/** A clock whose time moves only when the test says so; every sleep is logged. */
export interface FakeClock extends Clock {
  /** Every duration passed to `sleep`, in call order (aborted ones included). */
  readonly sleeps: number[];
  /** Remaining ms of each pending sleep, soonest first. */
  pending(): number[];
  /** Moves time forward by `ms`, firing due sleeps in order. */
  advance(ms: number): Promise<void>;
  /** Fires the earliest pending sleep (moving time to it); false if none. */
  runNext(): Promise<boolean>;
  /**
   * Fires pending sleeps by themselves whenever `idle()` says nothing real is
   * in flight (checked after each macrotask). Returns a function to stop it.
   */
  autoAdvance(idle?: () => boolean): () => void;
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

export function fakeClock(start = 1_767_225_600_000): FakeClock {
  let current = start;
  let seq = 0;
  const queue: PendingSleep[] = [];
  const sleeps: number[] = [];

  const fire = async (until: number) => {
    for (;;) {
      queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = queue[0];
      if (!next || next.at > until) break;
      queue.shift();
      current = Math.max(current, next.at);
      next.resolve();
      await settle();
    }
    current = Math.max(current, until);
  };

  const clock: FakeClock = {
    sleeps,
    now: () => current,
    sleep(ms, signal) {
      sleeps.push(ms);
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise<void>((resolve, reject) => {
        const entry: PendingSleep = {
          at: current + Math.max(0, ms),
          ms,
          seq: seq++,
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
        };
        const onAbort = () => {
          const i = queue.indexOf(entry);
          if (i >= 0) queue.splice(i, 1);
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        queue.push(entry);
      });
    },
    pending: () => queue.map((s) => s.at - current).sort((a, b) => a - b),
    advance: (ms) => fire(current + ms),
    async runNext() {
      queue.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = queue[0];
      if (!next) return false;
      await fire(next.at);
      return true;
    },
    autoAdvance(idle = () => true) {
      let stopped = false;
      const loop = async () => {
        while (!stopped) {
          await settle();
          if (!stopped && queue.length > 0 && idle()) await clock.runNext();
        }
      };
      void loop();
      return () => {
        stopped = true;
      };
    },
  };
  return clock;
}

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
