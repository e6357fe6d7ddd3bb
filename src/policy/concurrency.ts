/**
 * The concurrency limit: at most `max` requests in flight per origin key, a
 * bounded FIFO queue behind them, and a queue timeout (the "pool timeout"
 * fetch lacks).
 *
 * In-process only, unlike the other policies: a slot is held by a live
 * request of this process and freed when it ends. Kept in a shared store, a
 * process that crashed or was killed would leak its slots for good (or until
 * some lease ran out), and every acquire and release would cost a round
 * trip. A fleet-wide cap is the rate limiter's job.
 */
import { type Clock, noop, startTimer } from '../internal/clock.js';
import { MAX_TIMER_MS } from '../internal/limits.js';
import {
  checkObject,
  describe as describeValue,
  positiveInteger,
  readNumber,
} from '../internal/validate.js';

/** Options of the concurrency limit (`concurrency` in `createFetch`). */
export interface ConcurrencyOptions {
  /** Requests in flight at once per origin key. Required. */
  max: number;
  /**
   * Requests allowed to wait for a slot per origin key; one more is refused
   * at once (`'full'`). 0 = no queue.
   * @default 10 × max
   */
  queue?: number | undefined;
  /**
   * Longest wait for a slot, in ms, before `'timeout'`; the request's own
   * deadline (`maxWait`) also applies, whichever is shorter.
   * @default Infinity (only the request's deadline)
   */
  queueTimeout?: number | undefined;
}

/** Validated, frozen concurrency options. */
export interface ResolvedConcurrencyOptions {
  readonly max: number;
  readonly queue: number;
  readonly queueTimeout: number;
}

/** Queue length per slot when `queue` is not given. */
export const DEFAULT_QUEUE_PER_SLOT = 10;

/**
 * Validates `concurrency` options: `false`/`undefined` is off (the default),
 * a number `n` is `{ max: n }`.
 */
export function resolveConcurrencyOptions(
  input: ConcurrencyOptions | number | false | undefined,
): ResolvedConcurrencyOptions | false {
  if (input === false || input === undefined) return false;
  const o = checkObject('concurrency', typeof input === 'number' ? { max: input } : input, [
    'max',
    'queue',
    'queueTimeout',
  ]);
  if (o.max === undefined) {
    throw new TypeError(`concurrency.max must be an integer >= 1, got ${describeValue(o.max)}`);
  }
  const max = readNumber(o, 'max', 'concurrency', 1, positiveInteger, 'an integer >= 1');
  const queue = readNumber(
    o,
    'queue',
    'concurrency',
    max * DEFAULT_QUEUE_PER_SLOT,
    (n) => n === Number.POSITIVE_INFINITY || (Number.isSafeInteger(n) && n >= 0),
    'an integer >= 0 or Infinity',
  );
  const queueTimeout = readNumber(
    o,
    'queueTimeout',
    'concurrency',
    Number.POSITIVE_INFINITY,
    (n) => n >= 0,
    'a number of ms >= 0 (Infinity for none)',
  );
  return Object.freeze({ max, queue, queueTimeout });
}

/** What {@link ConcurrencyLimiter.acquire} decides. */
export type ConcurrencyDecision =
  | { readonly ok: true; readonly release: () => void }
  | { readonly ok: false; readonly reason: 'full' | 'timeout' };

interface Waiter {
  grant(): void;
}

interface Slots {
  inFlight: number;
  readonly queue: Set<Waiter>;
}

/**
 * Per-key slots of one client, in this process.
 * @example
 * const slot = await limiter.acquire(key, remainingMs, signal);
 * if (!slot.ok) throw slot.reason === 'full' ? new QueueFullError(…) : new QueueTimeoutError(…);
 * try { await attempt(); } finally { slot.release(); }
 */
export class ConcurrencyLimiter {
  readonly #options: ResolvedConcurrencyOptions;
  readonly #clock: Clock;
  readonly #keys = new Map<string, Slots>();

  constructor(options: ResolvedConcurrencyOptions, clock: Clock) {
    this.#options = options;
    this.#clock = clock;
  }

  /**
   * Takes a slot for `key`, waiting in FIFO order if all are taken. Answers
   * `'full'` at once if the queue is full, `'timeout'` once the wait passes
   * min(`queueTimeout`, `maxWait`) ms (at once if that is 0). A `signal`
   * abort rejects with `signal.reason` and leaves the queue as if the waiter
   * had never come. `release` is idempotent; a slot handed over while its
   * signal aborted is still held and must be released.
   */
  acquire(key: string, maxWait: number, signal?: AbortSignal): Promise<ConcurrencyDecision> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    let slots = this.#keys.get(key);
    if (slots === undefined) {
      slots = { inFlight: 0, queue: new Set() };
      this.#keys.set(key, slots);
    }
    if (slots.inFlight < this.#options.max) {
      slots.inFlight++;
      return Promise.resolve({ ok: true, release: this.#releaser(key, slots) });
    }
    if (slots.queue.size >= this.#options.queue) return Promise.resolve(FULL);
    const timeout = Math.min(this.#options.queueTimeout, maxWait);
    if (!(timeout > 0)) return Promise.resolve(TIMEOUT);
    return this.#wait(key, slots, timeout, signal);
  }

  /** Requests of `key` holding a slot now. */
  inFlight(key: string): number {
    return this.#keys.get(key)?.inFlight ?? 0;
  }

  /** Requests of `key` waiting for a slot now. */
  queued(key: string): number {
    return this.#keys.get(key)?.queue.size ?? 0;
  }

  #wait(
    key: string,
    slots: Slots,
    timeout: number,
    signal?: AbortSignal,
  ): Promise<ConcurrencyDecision> {
    return new Promise<ConcurrencyDecision>((resolve, reject) => {
      const leave = (): void => {
        slots.queue.delete(waiter);
        cancelTimer();
        signal?.removeEventListener('abort', onAbort);
        this.#forget(key, slots);
      };
      const onAbort = (): void => {
        leave();
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        grant: () => {
          // The releaser moved the slot to this waiter: inFlight is unchanged.
          slots.queue.delete(waiter);
          cancelTimer();
          signal?.removeEventListener('abort', onAbort);
          resolve({ ok: true, release: this.#releaser(key, slots) });
        },
      };
      const cancelTimer =
        timeout < MAX_TIMER_MS
          ? startTimer(this.#clock, timeout, () => {
              leave();
              resolve(TIMEOUT);
            })
          : noop;
      slots.queue.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #releaser(key: string, slots: Slots): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = slots.queue.values().next();
      if (!next.done) next.value.grant();
      else {
        slots.inFlight--;
        this.#forget(key, slots);
      }
    };
  }

  #forget(key: string, slots: Slots): void {
    if (slots.inFlight === 0 && slots.queue.size === 0 && this.#keys.get(key) === slots) {
      this.#keys.delete(key);
    }
  }
}

/** Longer waits than a timer can hold (about 24.8 days) are treated as no limit. */
const FULL: ConcurrencyDecision = Object.freeze({ ok: false, reason: 'full' });
const TIMEOUT: ConcurrencyDecision = Object.freeze({ ok: false, reason: 'timeout' });
