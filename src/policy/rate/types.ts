/**
 * The rate limiter's store state and the operations' arguments and results:
 * the JSON that src/policy/rate/ops.ts and its Lua mirror
 * (src/redis/lua/rate.ts) read and write; docs/policies.md is the spec.
 */
import type { Meter } from './meter.js';

/** Rate limiter settings as the operations receive them. Rates per second, times in ms. */
export type RateConfig = {
  /** Fixed rate; `null` = adaptive (the rate is learned and kept in the state). */
  rps: number | null;
  /** Fixed bucket size; `null` = adaptive (`max(1, rate × burstSeconds)`). */
  burst: number | null;
  /** Adaptive: how long a learned rate outlives the key's last use. */
  memoryMs: number;
  /** Adaptive: a cut multiplies the rate in force by this (never below the accepted rate). */
  beta: number;
  /**
   * Adaptive: CUBIC's C relative to the rate, per s³: the rate follows
   * `wMax × (1 + scale × (t − plateau)³)`. With `scale = 1 − beta` a cut by
   * beta is regained in one second, at any rate.
   */
  scale: number;
  /** Adaptive: the learned rate never goes below this. */
  minRate: number;
  /** Adaptive: the bucket holds this many seconds' worth of tokens (at least 1). */
  burstSeconds: number;
  /**
   * Adaptive: after a cut, 429s are not taken as news for this long (ms).
   * A quota counted in fixed windows keeps refusing until its window ends,
   * whatever the new rate: those refusals say nothing about it. The
   * responses to requests sent in this span are also what tells whether the
   * cut lowered the 429 fraction.
   */
  holdoffMs: number;
};

/**
 * `[n, k, n2, k2]`: responses and 429s among them, to requests sent since
 * the last cut: within `holdoffMs` of it (`n`, `k`), and later (`n2`, `k2`).
 */
export type RateTally = [number, number, number, number];

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
  /** Adaptive: the rate in force at the last cut (CUBIC's W_max). */
  wMax: number;
  /** Adaptive: epoch ms of the last cut, or of the last cut found futile and skipped. */
  lastDecrease: number;
  /** Adaptive: the fleet's send rate, measured on granted tokens at their due time. */
  meter: Meter | null;
  /** Adaptive: epoch ms the growth curve passes `wMax` again. */
  plateau: number;
  /** Adaptive: the fleet's accepted rate (responses that were not throttled). */
  ok: Meter | null;
  /** Epoch ms the last quota-spent pause began; 0 = none yet. */
  pausedAt: number;
  /** Adaptive: the 429 fraction of the period that led to the last cut. */
  before: number;
  /** Adaptive: what the responses since the last cut said. */
  tally: RateTally;
  /**
   * Adaptive: the lowest rate in force (on the growth curve) at which a
   * request sent since the last cut was refused; 0 = none. The next cut is
   * taken from there: a rate that drew 429s while growing back is too high.
   */
  low: number;
  /**
   * Adaptive: the sustained rate the server last stated for the key, per
   * second (a provider's `limit`, `remaining` and time-to-full reset); 0 =
   * none. The learned rate never grows past it, and a quota-spent pause
   * engages the key at it. Absent in states written before it existed: 0.
   */
  stated: number;
  /**
   * Adaptive: the ceiling the server's `RateLimit-Policy` sets on the key's
   * rate, per second; 0 = none. The learned rate never exceeds it. Unlike
   * `stated`, it never shortens a pause. Absent in states written before it
   * existed: 0.
   */
  ceiling: number;
};

/** Arguments of {@link rateAcquire}. `maxWait: null` = no limit. `epoch`: the reservation held, if any. */
export type RateAcquireArgs = { cfg: RateConfig; maxWait: number | null; epoch: number | null };
/** Result of {@link rateAcquire}. */
export type RateAcquireResult =
  | { ok: true; wait: number; epoch: number; engaged: boolean; rate: number }
  | { ok: false; retryAfter: number };
/** Arguments of {@link rateRefund}. */
export type RateRefundArgs = { cfg: RateConfig; epoch: number };
/**
 * What the server said: slow down (a 429), the quota is spent (a pause
 * only: `pauseUntil`), a response that was not throttled (growth), or, to a
 * key this process does not pace yet, the quota its `RateLimit-Policy`
 * states (`policy`: engages the key at `ceiling`, grows nothing).
 */
export type RateSignal = 'throttle' | 'pause' | 'success' | 'policy';
/** Arguments of {@link rateFeedback}. */
export type RateFeedbackArgs = {
  cfg: RateConfig;
  signal: RateSignal;
  /** Epoch ms the server's quota resets when it said it is spent, or `null`. */
  pauseUntil: number | null;
  /** This process's measured send rate, per second. */
  measured: number;
  /** This process's accepted rate (responses not throttled), per second. */
  accepted: number;
  /** This process's recent 429 fraction, in [0, 1]. */
  fraction: number;
  /** Epoch ms the request was sent, or `null` if unknown. */
  sentAt: number | null;
  /**
   * A throttle from a process whose limiter was not pacing this key yet (its
   * first 429): an engaged key is not cut for it; the process joins, adding
   * its accepted rate to the fleet's (absent = false).
   */
  joining?: boolean;
  /** The sustained rate the server states for the key, per second, or `null` (absent = null). */
  stated?: number | null;
  /**
   * The ceiling the response's `RateLimit-Policy` sets, per second, or
   * `null` (absent = null): the rate never exceeds it, and `policy` engages
   * a key at it.
   */
  ceiling?: number | null;
  /**
   * The mean of this process's accepted and send rates (429s included) over
   * the last few hundred ms, per second: an engagement's curve regains at
   * least this (absent = 0).
   */
  peak?: number;
};
/** Result of {@link rateFeedback}: `reset` = outstanding reservations are now void. */
export type RateFeedbackResult = { engaged: boolean; reset: boolean };

/** A cut is judged once this many responses to requests sent after the last one are in. */
export const TALLY_MIN = 10;
/** ... of which at least this many 429s, */
export const TALLY_REFUSED = 3;
/**
 * ... at a fraction within this factor of the one before the cut, either
 * way: the cut did not lower it, and the rate growing since did not raise it.
 */
export const FUTILE_BAND = 1.5;
/**
 * A 429 fraction above this is always taken as a quota: a quota counted in
 * fixed windows refuses the rest of each window at about the same fraction
 * after a shallow cut. (At 0.5 such quotas drew 0.85 429s per success in the
 * simulation, at 0.35 0.49; at 0.2 a server refusing 20 % at random
 * spiralled the caller down to 0.65 ×. docs/policies.md has the figures.)
 */
export const FUTILE_MAX = 0.35;
/** A cut keeps at least this share of the rate in force, however high the 429 fraction. */
export const CUT_DEEPEST = 0.25;
