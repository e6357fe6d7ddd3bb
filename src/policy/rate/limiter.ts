/**
 * The rate limiter: per origin key, paces requests client-side instead of
 * sending them to be refused. `'adaptive'` (the default) costs nothing until
 * the upstream first says "too many" for a key, then learns its rate; a fixed
 * `{ rps, burst }` is a plain token bucket. Decisions are store operations,
 * so a fleet sharing a store shares one bucket per key.
 *
 * Where each decision lives:
 * - when does it engage, cut, grow or pause? `rateFeedback` (./ops.ts);
 * - how long must this attempt wait for its token, or is it refused?
 *   `rateAcquire` (./ops.ts);
 * - what does a response tell the store, and with what measured rates?
 *   `readResponse` and `feedbackArgs` (./learn.ts);
 * - is the server's quota spent, and when does its window end? ./window.ts
 *   (`spentBy`, `spentNow`, `locateReset`).
 * This file queues each key's attempts and paces them token by token.
 */
import { type Clock, noop, startTimer } from '../../internal/clock.js';
import { linkSignal } from '../../internal/signals.js';
import type { StateStore } from '../../store/store.js';
import { runOp } from '../store-call.js';
import {
  countSent,
  feedbackArgs,
  type Learned,
  type Lesson,
  learned,
  type RateLimitHint,
  readResponse,
} from './learn.js';
import {
  type RateAcquireArgs,
  type RateAcquireResult,
  type RateConfig,
  rateAcquire,
  rateFeedback,
  rateRefund,
} from './ops.js';
import { ADAPTIVE, type ResolvedRateLimitOptions } from './options.js';
import { spentNow } from './window.js';

export type { RateLimitHint } from './learn.js';
export {
  ADAPTIVE,
  type RateLimitOptions,
  type ResolvedRateLimitOptions,
  rateLimitDefaults,
  resolveRateLimitOptions,
} from './options.js';

import { LastMap } from '../../internal/last-map.js';

/**
 * What {@link RateLimiter.acquire} decides. `waited`: ms spent waiting for
 * the token (0 when none was needed). `retryAfter`: ms until a token would be due.
 */
export type RateLimitDecision =
  | { readonly ok: true; readonly waited: number }
  | { readonly ok: false; readonly retryAfter: number };

/** Store keys of the rate limiter are `rate:` + the origin key. */
export const RATE_KEY_PREFIX = 'rate:';

interface Waiter {
  /** Clock time after which it gives up; Infinity for never. */
  readonly deadline: number;
  /** Clock time it started waiting. */
  readonly since: number;
  done: boolean;
  resolve(decision: RateLimitDecision): void;
  reject(reason: unknown): void;
}

/** One key in this process: what it learned (./learn.ts) and its queue of attempts. */
interface Local extends Learned {
  /** Whether an adaptive key is engaged here: its attempts go through the bucket. */
  active: boolean;
  lastUse: number;
  /** Waiters of this process for this key, in arrival order, from `head` on. */
  readonly queue: Waiter[];
  /** Index of the first waiter still in `queue` (a deque: no `shift()`, which is O(n)). */
  head: number;
  pumping: boolean;
  /** ms per token at the last known rate, to refuse at once a wait that cannot fit. */
  interval: number;
  /** Wakes the pump's sleep when a pause or a decrease voids its reservation. */
  wake: (() => void) | undefined;
}

const OK: RateLimitDecision = Object.freeze({ ok: true, waited: 0 });
const WAKE: unique symbol = Symbol('wake');
const IDLE_MS = 60_000;
/**
 * The rate limiter for every origin key of one client.
 * @example
 * const go = await limiter.acquire(key, remainingMs, signal);
 * if (!go.ok) throw new RateLimitedError(…);   // the wait would not fit
 * if (go.waited > 0) emit(wait, { reason: 'rate-limit', duration: go.waited });
 * const res = await send();
 * limiter.onResponse(key, res.status, { retryAfter, remaining, reset, sentAt });
 */
export class RateLimiter {
  readonly #cfg: RateConfig;
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #keys = new LastMap<string, Local>();
  #calls = 0;

  constructor(options: ResolvedRateLimitOptions, store: StateStore, clock: Clock) {
    const fixed = options.mode === 'fixed';
    this.#cfg = Object.freeze({
      ...ADAPTIVE,
      rps: fixed ? options.rps : null,
      burst: fixed ? options.burst : null,
    });
    this.#store = store;
    this.#clock = clock;
  }

  /**
   * Waits for `key`'s next token, in FIFO order. If it cannot be due within
   * `maxWait` ms, answers `ok: false` (at once when the queue ahead already
   * says so). A `signal` abort rejects with `signal.reason` at once.
   * Adaptive and not engaged for `key`: answers at once, no store call.
   *
   * Only the head of this process's queue holds a reservation in the store,
   * so every token is taken at the rate in force when it is taken: a rate
   * that grows back speeds up the whole queue, and a decrease or a pause
   * slows it at once.
   */
  acquire(key: string, maxWait: number, signal?: AbortSignal): Promise<RateLimitDecision> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const local = this.#local(key);
    if (this.#cfg.rps === null && !local.active) {
      this.#sent(local);
      return Promise.resolve(OK);
    }
    const ahead = (local.queue.length - local.head) * local.interval;
    if (ahead > maxWait) return Promise.resolve({ ok: false, retryAfter: Math.ceil(ahead) });
    return new Promise<RateLimitDecision>((resolve, reject) => {
      let cancelTimer = noop;
      let unlink = noop;
      const finish = (): void => {
        waiter.done = true;
        cancelTimer();
        unlink();
      };
      const since = this.#clock.now();
      const waiter: Waiter = {
        deadline: since + maxWait,
        since,
        done: false,
        resolve: (decision) => {
          finish();
          resolve(decision);
        },
        reject: (reason) => {
          finish();
          reject(reason);
        },
      };
      // One listener per caller signal however many waiters share it (src/internal/signals.ts).
      if (signal !== undefined) {
        unlink = linkSignal(signal, (reason) => {
          if (!waiter.done) waiter.reject(reason);
        });
      }
      // The head's wait is bounded by its reservation; a waiter behind others needs a timer.
      if (local.queue.length > local.head && Number.isFinite(maxWait)) {
        cancelTimer = startTimer(this.#clock, maxWait, () => {
          if (!waiter.done) waiter.resolve({ ok: false, retryAfter: local.interval });
        });
      }
      local.queue.push(waiter);
      if (!local.pumping) void this.#pump(key, local);
    });
  }

  /**
   * Learns from a response of `key` (docs/policies.md, "Signals"): a 429
   * cuts an adaptive key (engaging it once this process has seen enough
   * responses); a quota-spent response (`remaining: 0` with a `reset`)
   * pauses the key until the reset, in both modes (located from the
   * remaining counts when they show where windows start, and then a 429 is
   * no cut: ./window.ts); every other response
   * but a 503 with a hint (404s too) lets an engaged adaptive key grow.
   * A 429's `retryAfter` paces its own retry only; `Retry-After: 0` is no
   * throttle at all. The reading is `readResponse` (./learn.ts).
   */
  onResponse(
    key: string,
    status: number,
    hint: RateLimitHint = {},
    now: number = this.#clock.now(),
  ): void | Promise<void> {
    const local = this.#local(key, now);
    const fixed = this.#cfg.rps !== null;
    const lesson = readResponse(local, fixed, local.active, status, hint, now);
    if (lesson === undefined) return;
    // A throttle or a pause engages an adaptive key here (a success comes only once engaged).
    if (!fixed && lesson.signal !== 'success') local.active = true;
    return this.#feedback(key, local, lesson);
  }

  /**
   * The hot path: adaptive and not engaged for `key`, counts the send and
   * answers `true` at once (no store call, no promise). Otherwise answers
   * `false` and does nothing: call {@link RateLimiter.acquire}.
   */
  pass(key: string, now: number = this.#clock.now()): boolean {
    if (this.#cfg.rps !== null) return false;
    const local = this.#local(key, now);
    if (local.active) return false;
    this.#sent(local, now);
    return true;
  }

  /** Whether requests of `key` go through the bucket: always when fixed; once engaged when adaptive. */
  active(key: string): boolean {
    return this.#cfg.rps !== null || (this.#keys.get(key)?.active ?? false);
  }

  /**
   * Serves `key`'s queue head by head: reserve the next token in the store,
   * sleep until it is due (or until a pause/decrease voids it), grant it.
   * The reservation belongs to the pump, so a head that leaves (abort,
   * timeout) hands it to the next one instead of wasting it.
   */
  async #pump(key: string, local: Local): Promise<void> {
    local.pumping = true;
    let held: number | null = null;
    try {
      while (local.queue.length > local.head) {
        const head = local.queue[local.head]!;
        if (head.done) {
          this.#shift(local);
          continue;
        }
        const now = this.#clock.now();
        const left = head.deadline - now;
        const args: RateAcquireArgs = {
          cfg: this.#cfg,
          maxWait: Number.isFinite(left) ? Math.max(0, left) : null,
          epoch: held,
        };
        let r: RateAcquireResult;
        try {
          r = await runOp(this.#store, RATE_KEY_PREFIX + key, rateAcquire, args, now, (x) => x);
        } catch {
          // The store failed: let the head go rather than block on it.
          r = { ok: true, wait: 0, epoch: held ?? 0, engaged: true, rate: 0 };
        }
        if (!r.ok) {
          if (!head.done) head.resolve({ ok: false, retryAfter: r.retryAfter });
          continue;
        }
        if (r.rate > 0) local.interval = 1000 / r.rate;
        if (!r.engaged) {
          // The learned rate was forgotten: everyone goes, at no cost again.
          local.active = false;
          const rest = local.queue.splice(local.head);
          local.queue.length = 0;
          local.head = 0;
          for (const w of rest) if (!w.done) this.#grant(local, w);
          held = null;
          break;
        }
        if (r.wait > 0) {
          held = r.epoch;
          await this.#sleep(local, r.wait);
          continue;
        }
        held = null;
        if (head.done) continue;
        // The other clients spent the window since the last count (window.ts): the
        // head would be refused; the key pauses to the window's end first (once a window).
        const spent = spentNow(local.window, this.#clock.now());
        if (spent !== undefined) {
          await this.#feedback(key, local, {
            signal: 'pause',
            pauseUntil: spent,
            sentAt: null,
          }).catch(noop);
          continue;
        }
        this.#shift(local);
        this.#grant(local, head);
      }
    } finally {
      local.pumping = false;
      local.wake = undefined;
      if (held !== null) this.#refund(key, held);
    }
  }

  /** Drops the queue's head; compacts the array once half of it is spent. */
  #shift(local: Local): void {
    local.head++;
    if (local.head === local.queue.length) {
      local.queue.length = 0;
      local.head = 0;
    } else if (local.head >= 1024 && local.head * 2 >= local.queue.length) {
      local.queue.splice(0, local.head);
      local.head = 0;
    }
  }

  #grant(local: Local, waiter: Waiter): void {
    this.#sent(local);
    const waited = this.#clock.now() - waiter.since;
    waiter.resolve(waited > 0 ? { ok: true, waited } : OK);
  }

  /** Sleeps `ms`, or until a pause or decrease of this key wakes the pump. */
  async #sleep(local: Local, ms: number): Promise<void> {
    const controller = new AbortController();
    local.wake = () => controller.abort(WAKE);
    try {
      await this.#clock.sleep(Math.max(0, ms), controller.signal);
    } catch {
      // Woken: the caller re-reserves at the new rate.
    } finally {
      local.wake = undefined;
    }
  }

  #refund(key: string, epoch: number): void {
    runOp(
      this.#store,
      RATE_KEY_PREFIX + key,
      rateRefund,
      { cfg: this.#cfg, epoch },
      this.#clock.now(),
      noop,
    ).catch(noop);
  }

  /** Tells the store what a response taught (`rateFeedback`), and acts on its answer here. */
  #feedback(key: string, local: Local, lesson: Lesson): Promise<void> {
    const now = this.#clock.now();
    const args = feedbackArgs(this.#cfg, local, lesson, now);
    return runOp(this.#store, RATE_KEY_PREFIX + key, rateFeedback, args, now, (r) => {
      if (this.#cfg.rps === null && !r.engaged) local.active = false;
      if (r.reset) local.wake?.();
    });
  }

  #sent(local: Local, now: number = this.#clock.now()): void {
    countSent(local, now);
    local.lastUse = now;
  }

  #local(key: string, now?: number): Local {
    let local = this.#keys.get(key);
    if (local === undefined) {
      if (++this.#calls >= 1024 && this.#calls >= this.#keys.size) this.#sweep();
      local = {
        ...learned(),
        active: false,
        lastUse: now ?? this.#clock.now(),
        queue: [],
        head: 0,
        pumping: false,
        interval: 0,
        wake: undefined,
      };
      this.#keys.set(key, local);
    }
    return local;
  }

  /** Forgets keys idle for a minute: their meter has decayed and nothing waits on them. */
  #sweep(): void {
    const before = this.#clock.now() - IDLE_MS;
    for (const [key, local] of this.#keys) {
      if (!local.active && local.queue.length === local.head && local.lastUse < before)
        this.#keys.delete(key);
    }
    this.#calls = 0;
  }
}
