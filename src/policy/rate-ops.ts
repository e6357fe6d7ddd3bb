/**
 * The rate limiter's store operations: a token bucket with reservations
 * (waiters are served in the order they reserved, and taking a token is one
 * atomic decision), pauses, and in adaptive mode the learned rate (CUBIC, as
 * in the AWS SDKs' adaptive retry mode). Pure; see docs/policies.md.
 */
import type { Json, StoreOperation, StoreUpdate } from '../store/store.js';
import { METER_BUCKET_MS, type Meter, meterRate, meterRecord } from './rate-meter.js';

/** Rate limiter settings as the operations receive them. Rates per second, times in ms. */
export type RateConfig = {
  /** Fixed rate; `null` = adaptive (the rate is learned and kept in the state). */
  rps: number | null;
  /** Fixed bucket size; `null` = adaptive (`max(1, rate × burstSeconds)`). */
  burst: number | null;
  /** Adaptive: how long a learned rate outlives the key's last use. */
  memoryMs: number;
  /** Adaptive: multiplicative decrease on a throttle. */
  beta: number;
  /** Adaptive: CUBIC scale constant C. */
  scale: number;
  /** Adaptive: the learned rate never goes below this. */
  minRate: number;
  /** Adaptive: the bucket holds this many seconds' worth of tokens (at least 1). */
  burstSeconds: number;
  /**
   * Adaptive: after a decrease, 429s are not taken as news for this long (ms).
   * A quota counted in fixed windows keeps refusing until its window ends,
   * whatever the new rate: those refusals say nothing about it.
   */
  holdoffMs: number;
};

/** State JSON of one rate-limit key. */
export type RateState = {
  /** Tokens at time `at`; negative when tokens are reserved ahead. */
  tokens: number;
  /** Epoch ms the `tokens` count refers to; in the future while paused. */
  at: number;
  /** Bumped whenever outstanding reservations are void (pause, rate decrease). */
  epoch: number;
  /** Adaptive: the learned rate, per second (> 0 once engaged); 0 when fixed. */
  rate: number;
  /** Adaptive: the rate before the last decrease (CUBIC's W_max). */
  wMax: number;
  /** Adaptive: epoch ms of the last decrease. */
  lastDecrease: number;
  /** Adaptive: the fleet's send rate, measured on granted tokens at their due time. */
  meter: Meter | null;
};

/** Arguments of {@link rateAcquire}. `maxWait: null` = no limit. `epoch`: the reservation held, if any. */
export type RateAcquireArgs = { cfg: RateConfig; maxWait: number | null; epoch: number | null };
/** Result of {@link rateAcquire}. */
export type RateAcquireResult =
  | { ok: true; wait: number; epoch: number; engaged: boolean; rate: number }
  | { ok: false; retryAfter: number };
/** Arguments of {@link rateRefund}. */
export type RateRefundArgs = { cfg: RateConfig; epoch: number };
/** What the server said: slow down (429 or quota at 0), a pause only, or a success. */
export type RateSignal = 'throttle' | 'pause' | 'success';
/** Arguments of {@link rateFeedback}. */
export type RateFeedbackArgs = {
  cfg: RateConfig;
  signal: RateSignal;
  /** Epoch ms before which no token is handed out, or `null`. */
  pauseUntil: number | null;
  /** This process's measured send rate, per second. */
  measured: number;
  /** Epoch ms the throttled request was sent, or `null` if unknown. */
  sentAt: number | null;
  /**
   * A throttle from a process whose limiter was not pacing this key yet (its
   * first 429): its request did not test the shared rate, so an engaged key
   * is left as it is and the process joins it (absent = false).
   */
  joining?: boolean;
};
/** Result of {@link rateFeedback}: `reset` = outstanding reservations are now void. */
export type RateFeedbackResult = { engaged: boolean; reset: boolean };

function readState(json: Json | undefined): RateState | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const s = json as Partial<RateState>;
  return typeof s.tokens === 'number' && typeof s.at === 'number' && typeof s.epoch === 'number'
    ? (s as RateState)
    : undefined;
}

function rateOf(s: RateState, cfg: RateConfig): number {
  return cfg.rps ?? s.rate;
}

function burstOf(s: RateState, cfg: RateConfig): number {
  return cfg.burst ?? Math.max(1, s.rate * cfg.burstSeconds);
}

function fixedFresh(cfg: RateConfig, now: number): RateState {
  return {
    tokens: cfg.burst ?? 1,
    at: now,
    epoch: 0,
    rate: 0,
    wMax: 0,
    lastDecrease: 0,
    meter: null,
  };
}

/** An engaged state: adaptive with a learned rate, or any fixed state. */
function engaged(s: RateState | undefined, cfg: RateConfig): s is RateState {
  return s !== undefined && (cfg.rps !== null || s.rate > 0);
}

/** Refills the bucket up to `now` (nothing while paused). */
function settle(s: RateState, cfg: RateConfig, now: number): RateState {
  if (now <= s.at) return s;
  const tokens = Math.min(burstOf(s, cfg), s.tokens + ((now - s.at) * rateOf(s, cfg)) / 1000);
  return { ...s, tokens, at: now };
}

function write<R extends Json>(
  s: RateState,
  cfg: RateConfig,
  now: number,
  result: R,
): StoreUpdate<R> {
  const fullAt = s.at + (Math.max(0, burstOf(s, cfg) - s.tokens) * 1000) / rateOf(s, cfg);
  const keep = cfg.rps === null ? cfg.memoryMs : 1_000;
  return { state: s, ttl: Math.ceil(Math.max(0, fullAt - now)) + keep, result };
}

/**
 * `staunch.rate.acquire`: reserves the next token. Adaptive and not engaged:
 * no limit, no write. Holding a reservation of the current `epoch`: granted at
 * once (it was paid for). Otherwise takes a token, possibly driving the
 * balance negative, and answers `wait` = ms until it is due; a wait over
 * `maxWait` reserves nothing and answers `retryAfter` instead.
 */
export const rateAcquire: StoreOperation<RateAcquireArgs, RateAcquireResult> = Object.freeze({
  name: 'staunch.rate.acquire',
  apply(
    json: Json | undefined,
    { cfg, maxWait, epoch }: RateAcquireArgs,
    now: number,
  ): StoreUpdate<RateAcquireResult> {
    const stored = readState(json);
    if (cfg.rps === null && !engaged(stored, cfg)) {
      return {
        state: undefined,
        ttl: 0,
        result: { ok: true, wait: 0, epoch: 0, engaged: false, rate: 0 },
      };
    }
    if (stored !== undefined && epoch !== null && stored.epoch === epoch) {
      const rate = rateOf(stored, cfg);
      return write(stored, cfg, now, { ok: true, wait: 0, epoch, engaged: true, rate });
    }
    const s = settle(stored ?? fixedFresh(cfg, now), cfg, now);
    const tokens = s.tokens - 1;
    const debt = tokens < 0 ? (-tokens * 1000) / rateOf(s, cfg) : 0;
    const wait = Math.ceil(s.at - now + debt);
    if (maxWait !== null && wait > maxWait) {
      const result = { ok: false, retryAfter: wait } as const;
      return stored === undefined
        ? { state: undefined, ttl: 0, result }
        : write(s, cfg, now, result);
    }
    const meter = cfg.rps === null ? meterRecord(s.meter ?? undefined, now + wait) : null;
    return write({ ...s, tokens, meter }, cfg, now, {
      ok: true,
      wait,
      epoch: s.epoch,
      engaged: true,
      rate: rateOf(s, cfg),
    });
  },
});

/** `staunch.rate.refund`: gives back a token reserved under `epoch`, if that epoch is still current. */
export const rateRefund: StoreOperation<RateRefundArgs, null> = Object.freeze({
  name: 'staunch.rate.refund',
  apply(json: Json | undefined, { cfg, epoch }: RateRefundArgs, now: number): StoreUpdate<null> {
    const stored = readState(json);
    if (!engaged(stored, cfg) || stored.epoch !== epoch) {
      return { state: json, ttl: stored ? write(stored, cfg, now, null).ttl : 0, result: null };
    }
    const s = settle(stored, cfg, now);
    return write({ ...s, tokens: Math.min(burstOf(s, cfg), s.tokens + 1) }, cfg, now, null);
  },
});

function increase(s: RateState, cfg: RateConfig, now: number): RateState {
  const settled = settle(s, cfg, now);
  const t = (now - s.lastDecrease) / 1000;
  const k = Math.cbrt((s.wMax * (1 - cfg.beta)) / cfg.scale);
  const cubic = cfg.scale * (t - k) ** 3 + s.wMax;
  // Twice the measured send rate bounds the growth, so an unused rate does not
  // run away; it never pulls the rate down (idle time is not a throttle).
  const ceiling = 2 * meterRate(s.meter ?? undefined, now);
  const rate = Math.max(s.rate, cfg.minRate, Math.min(cubic, ceiling));
  const next = { ...settled, rate };
  return { ...next, tokens: Math.min(next.tokens, burstOf(next, cfg)) };
}

function decrease(s: RateState, cfg: RateConfig, base: number, now: number): RateState {
  const settled = settle(s, cfg, now);
  const rate = Math.max(cfg.minRate, base * cfg.beta);
  return { ...settled, rate, wMax: base, lastDecrease: now, tokens: 0, epoch: s.epoch + 1 };
}

/**
 * `staunch.rate.feedback`: learns from a response. `success` (adaptive,
 * engaged): the rate follows the CUBIC curve from the last decrease, grown
 * no further than twice the measured send rate, and never lowered.
 * `throttle` (adaptive): engages the key at `beta × measured`, or if engaged
 * decreases from min(rate, measured) unless the throttled request was sent
 * before the last decrease (one decrease per round trip) or the last decrease
 * is less than `holdoffMs` old (a windowed quota refuses until its window ends). `pauseUntil` (any
 * signal but success): no token before then.
 */
export const rateFeedback: StoreOperation<RateFeedbackArgs, RateFeedbackResult> = Object.freeze({
  name: 'staunch.rate.feedback',
  apply(
    json: Json | undefined,
    args: RateFeedbackArgs,
    now: number,
  ): StoreUpdate<RateFeedbackResult> {
    const { cfg, signal, pauseUntil, measured, sentAt } = args;
    const stored = readState(json);
    let s: RateState | undefined = engaged(stored, cfg) ? stored : undefined;
    if (signal === 'success') {
      if (s === undefined || cfg.rps !== null) {
        const result = { engaged: s !== undefined, reset: false };
        return s === undefined ? { state: undefined, ttl: 0, result } : write(s, cfg, now, result);
      }
      return write(increase(s, cfg, now), cfg, now, { engaged: true, reset: false });
    }
    let reset = false;
    if (signal === 'throttle' && cfg.rps === null) {
      if (s === undefined) {
        const fresh: RateState = {
          tokens: 0,
          at: now,
          epoch: stored?.epoch ?? 0,
          rate: 0,
          wMax: 0,
          lastDecrease: now,
          meter: [Math.floor(now / METER_BUCKET_MS) * METER_BUCKET_MS, 0, measured],
        };
        s = decrease(fresh, cfg, measured, now);
        reset = true;
      } else if (args.joining === true) {
        // Joins the shared rate as it is: neither lowered nor raised.
      } else if ((sentAt ?? now) >= s.lastDecrease && now >= s.lastDecrease + cfg.holdoffMs) {
        const fleet = Math.max(meterRate(s.meter ?? undefined, now), measured);
        s = decrease(s, cfg, Math.min(s.rate, fleet), now);
        reset = true;
      }
    }
    if (pauseUntil !== null && pauseUntil > now) {
      if (s === undefined && cfg.rps !== null) s = fixedFresh(cfg, now);
      if (s !== undefined && pauseUntil > s.at) {
        s = { ...settle(s, cfg, now), at: pauseUntil, tokens: 1, epoch: s.epoch + 1 };
        reset = true;
      }
    }
    if (s === undefined)
      return { state: undefined, ttl: 0, result: { engaged: false, reset: false } };
    return write(s, cfg, now, { engaged: true, reset });
  },
});
