/**
 * How long the Redis store waits for a reply, and when slow replies mean
 * Redis is gone: the timer of one decision, and the per-key count of timed-out
 * decisions that sends a key to local state.
 */

import { timerDelay } from '../internal/clock.js';

/** A decision not answered within its patience: its key goes local. */
export class StoreTimeoutError extends Error {
  override name = 'TimeoutError';
}

/** The decision's key went local while it waited: it is answered locally, nothing more to report. */
export class StoreReleasedError extends Error {}

/** No connection (or no first script load) within the start-up timeout: the store as a whole degrades. */
export class StoreStartupError extends Error {
  override name = 'TimeoutError';
}

/**
 * Settles like `promise`, unless `check` rejects it first. `check` answers an
 * error (reject now) or how many ms to wait before asking again; it is first
 * asked after `first` ms. Each verdict waits for the end of the current
 * event-loop turn (`setImmediate`): after a stall of this process (GC, CPU
 * contention) the timer phase runs before the I/O phase, and a reply already
 * in the socket buffer must not count as late. `track`, when given, receives
 * a function that rejects the wait from outside (the store releasing every
 * waiting decision at once, in the order they were sent) and returns the
 * function that forgets it once the wait has settled.
 */
export function within<T>(
  promise: Promise<T>,
  first: number,
  check: () => Error | number,
  track?: (fail: (error: Error) => void) => () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let timer: ReturnType<typeof setTimeout>;
    let untrack: (() => void) | undefined;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      untrack?.();
      return true;
    };
    const fail = (error: Error): void => {
      if (settle()) reject(error);
    };
    const arm = (ms: number): void => {
      timer = setTimeout(() => {
        setImmediate(() => {
          if (settled) return;
          const verdict = check();
          if (typeof verdict === 'number') {
            if (!settled) arm(Math.max(1, verdict));
            return;
          }
          fail(verdict);
        });
      }, timerDelay(ms));
      timer.unref?.();
    };
    arm(first);
    untrack = track?.(fail);
    promise.then(
      (value) => {
        if (settle()) resolve(value);
      },
      (error: unknown) => {
        if (settle()) reject(error);
      },
    );
  });
}

/** Strikes (replies later than the timeout) in a row that send a key to local state; also the most timeouts one decision waits. */
export const DEGRADE_AFTER = 3;
/** …counted within this many ms of the first of them. */
export const DEGRADE_WINDOW = 10_000;
/** Keys with strikes kept at most (a bound on memory; the count starts over beyond it). */
const MAX_TRACKED = 10_000;

interface Strikes {
  count: number;
  first: number;
  /** When the last counted timeout struck. */
  last: number;
}

/**
 * Counts timeouts per key. A timeout counts only if its decision was sent
 * after the previous counted one struck: decisions in flight together during
 * one slow reply (a GC pause of Redis, a busy machine) are one strike, not
 * many. An answer in time clears the key's count.
 */
export class StrikeCounter {
  readonly #keys = new Map<string, Strikes>();

  /** Records a timeout of a decision on `key` sent at `sentAt`; true when the key must degrade. */
  strike(key: string, sentAt: number, now: number): boolean {
    const s = this.#keys.get(key);
    if (s === undefined || now - s.first > DEGRADE_WINDOW) {
      if (this.#keys.size >= MAX_TRACKED) this.#keys.clear();
      this.#keys.set(key, { count: 1, first: now, last: now });
      return DEGRADE_AFTER <= 1;
    }
    if (sentAt < s.last) return false;
    s.count++;
    s.last = now;
    if (s.count < DEGRADE_AFTER) return false;
    this.#keys.delete(key);
    return true;
  }

  /** `key` was answered in time. */
  clear(key: string): void {
    if (this.#keys.size > 0) this.#keys.delete(key);
  }

  clearAll(): void {
    this.#keys.clear();
  }
}
