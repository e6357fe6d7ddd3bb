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
 * - is the server's quota spent, and when does its window end? ./window.ts
 *   (`spentBy`, `spentNow`, `locateReset`).
 * This file keeps each key's local view and paces the attempts.
 */
import { type Clock, noop, startTimer } from '../../internal/clock.js';
import { linkSignal } from '../../internal/signals.js';
import type { StateStore } from '../../store/store.js';
import { runOp } from '../store-call.js';
import { type Meter, meterCount, meterCountMany, meterRate, meterSettled } from './meter.js';
import {
  type RateAcquireArgs,
  type RateAcquireResult,
  type RateConfig,
  type RateSignal,
  rateAcquire,
  rateFeedback,
  rateRefund,
} from './ops.js';
import { ADAPTIVE, type ResolvedRateLimitOptions } from './options.js';
import {
  locateReset,
  type QuotaWindow,
  quotaWindow,
  spentBy,
  spentNow,
  windowEnded,
  windowSeen,
} from './window.js';

export {
  ADAPTIVE,
  type RateLimitOptions,
  type ResolvedRateLimitOptions,
  rateLimitDefaults,
  resolveRateLimitOptions,
} from './options.js';

import { LastMap } from '../../internal/last-map.js';

/** What a response said about pacing. Times in ms. */
export interface RateLimitHint {
  /**
   * The wait the server asked for with this 429 or 503 (`Retry-After`): it
   * paces that request's retry, not the key. `0` on a 429 is not a throttle.
   */
  retryAfter?: number | undefined;
  /** Requests left in the server's quota (`RateLimit` / `X-RateLimit-Remaining`). */
  remaining?: number | undefined;
  /**
   * With `remaining: 0`: ms until the quota resets. The quota is spent, so
   * the whole key pauses until then (once per window).
   */
  reset?: number | undefined;
  /**
   * The sustained rate, per second, at which the server says its quota
   * refills (a provider's limit over its time-to-full reset). An adaptive key
   * never grows past it; a spent quota pauses only until the next request
   * fits (`1000 / rate` ms, if sooner than `reset`) and then goes at it.
   */
  rate?: number | undefined;
  /**
   * The circuit breaker is releasing a backlog of this key after an outage:
   * a 429 then engages the key at the pace of the last few hundred ms, and
   * does not cut an engaged key below what it was accepted at over them,
   * rather than go by meters the outage's silence deflated.
   */
  released?: boolean | undefined;
  /**
   * Clock time the attempt was sent. A 429 for a request sent before the
   * last cut does not cut again (one cut per round trip), and one sent
   * before a pause began does not extend it; without it, every 429 counts.
   */
  sentAt?: number | undefined;
}

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

interface Local {
  /** Sends of this process (the measured send rate). */
  meter: Meter | undefined;
  /** Responses of this process that were not throttled (the accepted rate). */
  accepted: Meter | undefined;
  /** Responses, and 429s among them, halved past 64: the recent 429 fraction. */
  responses: number;
  refused: number;
  /** Clock time of the first response counted. */
  firstAt: number;
  /** Whether the counts were halved: they no longer span `firstAt` to now. */
  halved: boolean;
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
  /** The server's quota counter as last seen, and when that request was sent (./window.ts). */
  readonly window: QuotaWindow;
  /** The refill rate the last response stated (`RateLimitHint.rate`), or `null`. */
  stated: number | null;
  /** Sends and accepted responses, decayed with a time constant of `RECENT_MS`, as of `*At`. */
  recentSent: number;
  recentSentAt: number;
  recentOk: number;
  recentOkAt: number;
}

const OK: RateLimitDecision = Object.freeze({ ok: true, waited: 0 });
const WAKE: unique symbol = Symbol('wake');
const IDLE_MS = 60_000;
/**
 * A 429 engages a key only once this process has seen this many responses
 * over at least `ENGAGE_SPAN_MS`: a rate measured on one or two sends is
 * noise (issue 9: one early 429 slowed a sequential client to 2 req/s).
 */
export const ENGAGE_SAMPLES = 10;
export const ENGAGE_SPAN_MS = 500;

/** Time constant of the recent send and accepted rates (a count decayed by e per this many ms). */
export const RECENT_MS = 250;

/** A count `ms` later, decayed with the time constant {@link RECENT_MS}. */
function decayed(count: number, ms: number): number {
  return ms > 0 ? count * Math.exp(-ms / RECENT_MS) : count;
}

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
   * throttle at all.
   */
  onResponse(
    key: string,
    status: number,
    hint: RateLimitHint = {},
    now: number = this.#clock.now(),
  ): void | Promise<void> {
    const local = this.#local(key, now);
    const reset = hint.reset;
    const spent =
      hint.remaining === 0 && reset !== undefined && reset > 0 && Number.isFinite(reset);
    const sentAt = hint.sentAt ?? null;
    /** The window's end, when its count says it is spent by now, though not 0 (window.ts). */
    let ahead: number | undefined;
    if (hint.remaining !== undefined && sentAt !== null) {
      const predicted = spentBy(local.window, hint.remaining, sentAt, now);
      if (!spent) ahead = predicted;
      windowSeen(local.window, hint.remaining, sentAt);
    }
    // A located reset (window.ts) ends the pause, and so the refusals,
    // at the window's own end: a 429 of an engaged key then is no cut.
    const located = spent ? locateReset(local.window, now, reset) : undefined;
    const rate = hint.rate;
    const told = rate !== undefined && rate > 0 && Number.isFinite(rate) ? rate : null;
    // A window that refills at a stated rate has room for the next request sooner than full.
    const refill = told === null ? Number.POSITIVE_INFINITY : now + Math.ceil(1000 / told);
    const pauseUntil = spent ? Math.min(located ?? now + reset, refill) : (ahead ?? null);
    if (spent && refill === Number.POSITIVE_INFINITY) {
      windowEnded(local.window, located ?? now + reset);
      local.window.paused = Math.max(local.window.paused, located ?? now + reset);
    }
    if (this.#cfg.rps !== null) {
      if (pauseUntil !== null) return this.#feedback(key, local, 'pause', pauseUntil, sentAt);
      return;
    }
    local.stated = told;
    const throttled = status === 429 && (hint.retryAfter !== 0 || spent);
    const neutral =
      !throttled && (status === 429 || (status === 503 && hint.retryAfter !== undefined));
    if (!neutral) this.#count(local, throttled, now);
    if (throttled && !(located !== undefined && local.active)) {
      const joining = !local.active;
      if (joining && !spent && !this.#enough(local, now)) return;
      local.active = true;
      const released = hint.released === true;
      return this.#feedback(key, local, 'throttle', pauseUntil, sentAt, joining, released);
    }
    if (pauseUntil !== null) {
      local.active = true;
      return this.#feedback(key, local, 'pause', pauseUntil, sentAt);
    }
    if (!neutral && local.active) return this.#feedback(key, local, 'success', null, sentAt);
  }

  /** Counts a response for the accepted rate and the recent 429 fraction. */
  #count(local: Local, refused: boolean, now: number): void {
    this.#tally(local, refused, now, 1);
    if (!refused) {
      local.recentOk = decayed(local.recentOk, now - local.recentOkAt) + 1;
      local.recentOkAt = now;
    }
  }

  /**
   * Counts `count` responses at `now` (within one meter bucket) for the
   * recent 429 fraction and, unless `refused` (429s), the accepted meter.
   */
  #tally(local: Local, refused: boolean, now: number, count: number): void {
    if (local.responses === 0) local.firstAt = now;
    for (let i = 0; i < count; i++) {
      if (local.responses >= 64) {
        local.responses /= 2;
        local.refused /= 2;
        local.halved = true;
      }
      local.responses++;
      if (refused) local.refused++;
    }
    if (!refused) local.accepted = meterCountMany(local.accepted, now, count);
  }

  #enough(local: Local, now: number): boolean {
    return local.responses >= ENGAGE_SAMPLES && now - local.firstAt >= ENGAGE_SPAN_MS;
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
          await this.#feedback(key, local, 'pause', spent, null).catch(noop);
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

  #feedback(
    key: string,
    local: Local,
    signal: RateSignal,
    pauseUntil: number | null,
    sentAt: number | null,
    joining = false,
    released = false,
  ): Promise<void> {
    const now = this.#clock.now();
    // Until the counts are halved they span firstAt..now: a mean over that
    // span, unlike the meter, is not deflated by a client's idle spells
    // (every loop sleeping out a Retry-After, say).
    const span = Math.max(ENGAGE_SPAN_MS, now - local.firstAt) / 1000;
    const mean = (n: number) => (local.halved ? 0 : n / span);
    // A 429 in the release of a backlog after an outage: also the rates of the last few
    // hundred ms, so that the key engages at the backlog's own pace and a cut stops at what it
    // was just accepted at, not at meters the outage's silence deflated (issue 9: 66/s against
    // a capacity of 120; a flapping upstream's drains cut to 0.85 ×). Not otherwise: at the
    // start of a quota they would count the server's burst as its rate. A count decayed since each
    // event over-counts a steady stream by half an event: taken off, 50/s reads 50/s.
    const recentRate = (count: number, at: number) =>
      (Math.max(0, decayed(count, now - at) - 0.5) * 1000) / RECENT_MS;
    const recent = (count: number, at: number) => (released ? recentRate(count, at) : 0);
    const args = {
      cfg: this.#cfg,
      signal,
      pauseUntil,
      measured: Math.max(
        meterRate(local.meter, now),
        mean(local.responses),
        recent(local.recentSent, local.recentSentAt),
      ),
      accepted: Math.max(
        meterSettled(local.accepted, now),
        mean(local.responses - local.refused),
        recent(local.recentOk, local.recentOkAt),
      ),
      fraction: local.responses > 0 ? local.refused / local.responses : 0,
      sentAt,
      // Where an engagement's curve heads, ungated: only wMax, never the rate itself. Midway
      // between the recent accepted and send rates: the first 429 of a ramp comes just past
      // the quota, where the accepted rate still lags, but where several unshared processes
      // share a quota each one's send rate is past its share (docs/policies.md). A success
      // never engages, so growth does not pay for it.
      ...(signal !== 'success' && {
        peak:
          (recentRate(local.recentOk, local.recentOkAt) +
            recentRate(local.recentSent, local.recentSentAt)) /
          2,
      }),
      ...(joining && { joining }),
      ...(local.stated !== null && { stated: local.stated }),
    };
    return runOp(this.#store, RATE_KEY_PREFIX + key, rateFeedback, args, now, (r) => {
      if (this.#cfg.rps === null && !r.engaged) local.active = false;
      if (r.reset) local.wake?.();
    });
  }

  #sent(local: Local, now: number = this.#clock.now()): void {
    local.meter = meterCount(local.meter, now);
    local.lastUse = now;
    local.recentSent = decayed(local.recentSent, now - local.recentSentAt) + 1;
    local.recentSentAt = now;
  }

  #local(key: string, now?: number): Local {
    let local = this.#keys.get(key);
    if (local === undefined) {
      if (++this.#calls >= 1024 && this.#calls >= this.#keys.size) this.#sweep();
      local = {
        meter: undefined,
        accepted: undefined,
        responses: 0,
        refused: 0,
        firstAt: 0,
        halved: false,
        active: false,
        lastUse: now ?? this.#clock.now(),
        queue: [],
        head: 0,
        pumping: false,
        interval: 0,
        wake: undefined,
        window: quotaWindow(),
        stated: null,
        recentSent: 0,
        recentSentAt: 0,
        recentOk: 0,
        recentOkAt: 0,
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
