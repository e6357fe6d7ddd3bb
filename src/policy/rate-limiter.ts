/**
 * The rate limiter: per origin key, paces requests client-side instead of
 * sending them to be refused. `'adaptive'` (the default) costs nothing until
 * the upstream first says "too many" for a key, then learns its rate; a fixed
 * `{ rps, burst }` is a plain token bucket. Decisions are store operations
 * (./rate-ops.ts), so a fleet sharing a store shares one bucket per key.
 */
import { type Clock, noop } from '../internal/clock.js';
import type { Json, StateStore, StoreOperation } from '../store/store.js';
import { type Meter, meterRate, meterRecord } from './rate-meter.js';
import {
  type RateAcquireArgs,
  type RateAcquireResult,
  type RateConfig,
  type RateSignal,
  rateAcquire,
  rateFeedback,
  rateRefund,
} from './rate-ops.js';
import { runOp } from './store-call.js';
import { describeValue, positiveFinite, readNumber, readObject } from './validate.js';

/** A fixed token bucket (`rateLimit: { rps, burst }` in `createFetch`). */
export interface RateLimitOptions {
  /** Requests per second, sustained. Required. */
  rps: number;
  /**
   * Requests that may go at once after a quiet spell. The default keeps any
   * one-second window within `rps` + a tenth, which is what a server's quota
   * window counts.
   * @default max(1, rps / 10)
   */
  burst?: number | undefined;
}

/** Validated, frozen rate-limit options. */
export type ResolvedRateLimitOptions =
  | { readonly mode: 'adaptive' }
  | { readonly mode: 'fixed'; readonly rps: number; readonly burst: number };

/** The default: adaptive. */
export const rateLimitDefaults: ResolvedRateLimitOptions = Object.freeze({ mode: 'adaptive' });

/** Constants of the adaptive mode (the AWS SDKs' values where they have one). */
export const ADAPTIVE: Readonly<Omit<RateConfig, 'rps' | 'burst'>> = Object.freeze({
  /** A learned rate is forgotten this long (ms) after the key's last use. */
  memoryMs: 300_000,
  /** A throttle multiplies the rate by this. */
  beta: 0.7,
  /** CUBIC's C: how fast the rate grows back. */
  scale: 0.4,
  /** Floor of the learned rate, per second. */
  minRate: 0.5,
  /** The bucket holds a tenth of a second's worth of tokens (at least one). */
  burstSeconds: 0.1,
});

/**
 * Validates `rateLimit`: `'adaptive'`, `true` or `undefined` is adaptive,
 * `false` is off, `{ rps, burst }` is a fixed bucket.
 */
export function resolveRateLimitOptions(
  input: 'adaptive' | RateLimitOptions | boolean | undefined,
): ResolvedRateLimitOptions | false {
  if (input === false) return false;
  if (input === true || input === undefined || input === 'adaptive') return rateLimitDefaults;
  if (typeof input === 'string') {
    throw new TypeError(
      `rateLimit must be 'adaptive', false or { rps, burst }, got ${describeValue(input)}`,
    );
  }
  const o = readObject(input, 'rateLimit', ['rps', 'burst']);
  if (o.rps === undefined)
    throw new TypeError('rateLimit.rps must be a finite number > 0, got undefined');
  const rps = readNumber(o, 'rps', 'rateLimit', 1, positiveFinite, 'a finite number > 0');
  const burst = readNumber(
    o,
    'burst',
    'rateLimit',
    Math.max(1, rps / 10),
    (n) => Number.isFinite(n) && n >= 1,
    'a finite number >= 1',
  );
  return Object.freeze({ mode: 'fixed', rps, burst });
}

/** What a response said about pacing. Times in ms. */
export interface RateLimitHint {
  /** The wait the server asked for (`Retry-After`, or the quota's reset when `remaining` is 0). */
  retryAfter?: number | undefined;
  /** Requests left in the server's quota (`RateLimit` / `X-RateLimit-Remaining`). */
  remaining?: number | undefined;
  /**
   * Clock time the attempt was sent. A 429 for a request sent before the
   * last decrease does not decrease again (one decrease per round trip);
   * without it, every 429 decreases.
   */
  sentAt?: number | undefined;
}

/** What {@link RateLimiter.acquire} decides. `retryAfter`: ms until a token would be due. */
export type RateLimitDecision =
  | { readonly ok: true }
  | { readonly ok: false; readonly retryAfter: number };

/** Store keys of the rate limiter are `rate:` + the origin key. */
export const RATE_KEY_PREFIX = 'rate:';

interface Local {
  meter: Meter | undefined;
  active: boolean;
  readonly waiters: Set<() => void>;
  lastUse: number;
}

const OK: RateLimitDecision = Object.freeze({ ok: true });
const WAKE: unique symbol = Symbol('wake');
const IDLE_MS = 60_000;

/**
 * The rate limiter for every origin key of one client.
 * @example
 * const go = await limiter.acquire(key, remainingMs, signal);
 * if (!go.ok) throw new RateLimitedError(…);   // the wait would not fit
 * const res = await send();
 * limiter.onResponse(key, res.status, { retryAfter, remaining, sentAt });
 */
export class RateLimiter {
  readonly #cfg: RateConfig;
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #keys = new Map<string, Local>();
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
   * Waits for `key`'s next token, in FIFO order. If it would not be due within
   * `maxWait` ms, answers `ok: false` at once and reserves nothing. A `signal`
   * abort rejects with `signal.reason` at once and gives the token back.
   * Adaptive and not engaged for `key`: answers at once, no store call.
   */
  acquire(key: string, maxWait: number, signal?: AbortSignal): Promise<RateLimitDecision> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const local = this.#local(key);
    if (this.#cfg.rps === null && !local.active) {
      this.#sent(local);
      return Promise.resolve(OK);
    }
    return this.#reserve(key, local, maxWait, signal);
  }

  /**
   * Learns from a response of `key`: a 429 (or `remaining: 0`) slows the key
   * down (adaptive) and `retryAfter` pauses every request of the key until
   * then (both modes); a 2xx/3xx lets an engaged adaptive key speed up.
   */
  onResponse(key: string, status: number, hint: RateLimitHint = {}): void | Promise<void> {
    const local = this.#local(key);
    const now = this.#clock.now();
    const wait = hint.retryAfter;
    const pauseUntil = wait !== undefined && wait > 0 && Number.isFinite(wait) ? now + wait : null;
    const throttled = status === 429 || hint.remaining === 0;
    if (this.#cfg.rps !== null) {
      if (throttled && pauseUntil !== null)
        return this.#feedback(key, local, 'pause', pauseUntil, null);
      return;
    }
    if (throttled) {
      local.active = true;
      return this.#feedback(key, local, 'throttle', pauseUntil, hint.sentAt ?? null);
    }
    if (local.active && status >= 200 && status < 400) {
      return this.#feedback(key, local, 'success', null, null);
    }
  }

  /** Whether requests of `key` go through the bucket: always when fixed; once engaged when adaptive. */
  active(key: string): boolean {
    return this.#cfg.rps !== null || (this.#keys.get(key)?.active ?? false);
  }

  async #reserve(
    key: string,
    local: Local,
    maxWait: number,
    signal?: AbortSignal,
  ): Promise<RateLimitDecision> {
    const start = this.#clock.now();
    let held: number | null = null;
    const reserve = (): Promise<[RateAcquireResult, number]> => {
      const now = this.#clock.now();
      const left = maxWait - (now - start);
      const args: RateAcquireArgs = {
        cfg: this.#cfg,
        maxWait: Number.isFinite(left) ? Math.max(0, left) : null,
        epoch: held,
      };
      const late = (r: RateAcquireResult): void => {
        if (r.ok && r.engaged) this.#refund(key, r.epoch);
      };
      return this.#run(rateAcquire, key, args, signal, late).then((r) => [r, now]);
    };
    let next = reserve();
    try {
      for (;;) {
        const [r, asked] = await next;
        if (!r.ok) return { ok: false, retryAfter: r.retryAfter };
        if (!r.engaged) local.active = false;
        if (r.wait <= 0) {
          this.#sent(local);
          return OK;
        }
        held = r.epoch;
        let woken: Promise<[RateAcquireResult, number]> | undefined;
        // Woken by a pause or decrease of this key: the new reservation is made
        // right then, in the order waiters queued, ahead of any newcomer.
        const onWake = (): void => {
          woken = reserve();
          woken.catch(noop); // awaited below; this only keeps an abort in between from going unhandled
        };
        await this.#sleep(local, asked + r.wait - this.#clock.now(), signal, onWake);
        // Slept in full: confirm the reservation still stands (another process
        // may have paused the key) and go.
        next = woken ?? reserve();
      }
    } catch (error) {
      if (held !== null) this.#refund(key, held);
      throw error;
    }
  }

  /** Runs `op`; if `signal` aborts first, rejects at once and hands the late result to `onLate`. */
  #run<A extends Json, R extends Json>(
    op: StoreOperation<A, R>,
    key: string,
    args: A,
    signal: AbortSignal | undefined,
    onLate: (result: R) => void,
  ): Promise<R> {
    const pending = runOp(
      this.#store,
      RATE_KEY_PREFIX + key,
      op,
      args,
      this.#clock.now(),
      (r) => r,
    );
    if (signal === undefined) return pending;
    return new Promise<R>((resolve, reject) => {
      let aborted = false;
      const onAbort = (): void => {
        aborted = true;
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      pending.then(
        (r) => {
          signal.removeEventListener('abort', onAbort);
          if (aborted) onLate(r);
          else resolve(r);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  }

  /**
   * Sleeps `ms`, or until a pause or decrease of this key voids the
   * reservation: then `onWake` runs first, synchronously, in FIFO order.
   */
  async #sleep(
    local: Local,
    ms: number,
    signal: AbortSignal | undefined,
    onWake: () => void,
  ): Promise<void> {
    const controller = new AbortController();
    const wake = (): void => {
      if (controller.signal.aborted) return;
      onWake();
      controller.abort(WAKE);
    };
    const onAbort = (): void => controller.abort(signal?.reason);
    local.waiters.add(wake);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await this.#clock.sleep(Math.max(0, ms), controller.signal);
    } catch (error) {
      if (error !== WAKE || signal?.aborted) throw signal?.aborted ? signal.reason : error;
    } finally {
      local.waiters.delete(wake);
      signal?.removeEventListener('abort', onAbort);
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

  #feedback(
    key: string,
    local: Local,
    signal: RateSignal,
    pauseUntil: number | null,
    sentAt: number | null,
  ): Promise<void> {
    const now = this.#clock.now();
    const args = {
      cfg: this.#cfg,
      signal,
      pauseUntil,
      measured: meterRate(local.meter, now),
      sentAt,
    };
    return runOp(this.#store, RATE_KEY_PREFIX + key, rateFeedback, args, now, (r) => {
      if (this.#cfg.rps === null && !r.engaged) local.active = false;
      if (r.reset) for (const wake of [...local.waiters]) wake();
    });
  }

  #sent(local: Local): void {
    const now = this.#clock.now();
    local.meter = meterRecord(local.meter, now);
    local.lastUse = now;
  }

  #local(key: string): Local {
    let local = this.#keys.get(key);
    if (local === undefined) {
      if (++this.#calls >= 1024 && this.#calls >= this.#keys.size) this.#sweep();
      local = { meter: undefined, active: false, waiters: new Set(), lastUse: this.#clock.now() };
      this.#keys.set(key, local);
    }
    return local;
  }

  /** Forgets keys idle for a minute: their meter has decayed and nothing waits on them. */
  #sweep(): void {
    const before = this.#clock.now() - IDLE_MS;
    for (const [key, local] of this.#keys) {
      if (!local.active && local.waiters.size === 0 && local.lastUse < before)
        this.#keys.delete(key);
    }
    this.#calls = 0;
  }
}
