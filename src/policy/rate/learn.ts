/**
 * What the rate limiter learns from its key's traffic, apart from how it
 * paces it (./limiter.ts): the send and accepted rates this process
 * measures, the recent 429 fraction, the server's quota window, and the
 * reading of one response into a signal for the store (`rateFeedback`,
 * ./ops.ts, decides what the signal does to the key's rate).
 */
import { type Meter, meterCount, meterCountMany, meterRate, meterSettled } from './meter.js';
import type { RateConfig, RateFeedbackArgs, RateSignal } from './ops.js';
import { ADAPTIVE } from './options.js';
import {
  locateReset,
  type QuotaWindow,
  quotaWindow,
  spentBy,
  windowEnded,
  windowSeen,
} from './window.js';

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
   * With requests left: ms until the server's window resets (whole seconds,
   * rounded up). Where the windows' length is not known yet, a window found
   * spent by the others' pace (./window.ts) pauses the key until then.
   */
  window?: number | undefined;
  /**
   * The sustained rate, per second, at which the server says its quota
   * refills (a provider's limit over its time-to-full reset). An adaptive key
   * never grows past it; a spent quota pauses only until the next request
   * fits (`1000 / rate` ms, if sooner than `reset`) and then goes at it.
   */
  rate?: number | undefined;
  /**
   * The response's `RateLimit-Policy` quota that paces: `quota` requests per
   * `window` seconds. An adaptive key engages at once at a rate that keeps
   * within it ({@link policyCeiling}), and never grows past that rate; it is
   * no pause, and does not shorten one.
   */
  policy?: { quota: number; window: number } | undefined;
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

/** What one process has measured of one key. */
export interface Learned {
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
  /** The server's quota counter as last seen, and when that request was sent (./window.ts). */
  readonly window: QuotaWindow;
  /** The refill rate the last response stated (`RateLimitHint.rate`), or `null`. */
  stated: number | null;
  /** The ceiling of the last response's policy (`RateLimitHint.policy`), or `null`. */
  ceiling: number | null;
  /** Sends and accepted responses, decayed with a time constant of `RECENT_MS`, as of `*At`. */
  recentSent: number;
  recentSentAt: number;
  recentOk: number;
  recentOkAt: number;
}

/** A key's measures before its first send. */
export function learned(): Learned {
  return {
    meter: undefined,
    accepted: undefined,
    responses: 0,
    refused: 0,
    firstAt: 0,
    halved: false,
    window: quotaWindow(),
    stated: null,
    ceiling: null,
    recentSent: 0,
    recentSentAt: 0,
    recentOk: 0,
    recentOkAt: 0,
  };
}

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

/** Counts a send for the measured and the recent send rates. */
export function countSent(l: Learned, now: number): void {
  l.meter = meterCount(l.meter, now);
  l.recentSent = decayed(l.recentSent, now - l.recentSentAt) + 1;
  l.recentSentAt = now;
}

/** Counts a response for the accepted rate and the recent 429 fraction. */
function countResponse(l: Learned, refused: boolean, now: number): void {
  tally(l, refused, now, 1);
  if (!refused) {
    l.recentOk = decayed(l.recentOk, now - l.recentOkAt) + 1;
    l.recentOkAt = now;
  }
}

/**
 * Counts `count` responses at `now` (within one meter bucket) for the
 * recent 429 fraction and, unless `refused` (429s), the accepted meter.
 */
function tally(l: Learned, refused: boolean, now: number, count: number): void {
  if (l.responses === 0) l.firstAt = now;
  for (let i = 0; i < count; i++) {
    if (l.responses >= 64) {
      l.responses /= 2;
      l.refused /= 2;
      l.halved = true;
    }
    l.responses++;
    if (refused) l.refused++;
  }
  if (!refused) l.accepted = meterCountMany(l.accepted, now, count);
}

/**
 * The highest rate, per second, at which the limiter's bucket keeps within
 * `quota` requests in any `window` seconds: `quota / window`, less where the
 * bucket's burst (`burstSeconds` of the rate, at least one token) would add
 * to a window's count. A bucket of `b` tokens at rate `r` lets through at
 * most `b + r × window − 1` requests in a window; `b = r × burstSeconds`.
 */
export function policyCeiling(quota: number, window: number): number {
  return Math.min(quota / window, (quota + 1) / (window + ADAPTIVE.burstSeconds));
}

function enough(l: Learned, now: number): boolean {
  return l.responses >= ENGAGE_SAMPLES && now - l.firstAt >= ENGAGE_SPAN_MS;
}

/** What a response asks of the key's shared state; `joining` and `released` only with a throttle. */
export interface Lesson {
  readonly signal: RateSignal;
  readonly pauseUntil: number | null;
  readonly sentAt: number | null;
  readonly joining?: boolean;
  readonly released?: boolean;
}

/**
 * Reads a response of a key into what it asks of the store: the rules are
 * `RateLimiter.onResponse`'s (./limiter.ts; docs/policies.md, "Signals").
 * Notes the quota window in both modes (`fixed` or adaptive) and, when
 * adaptive, counts the response. `active`: the key is engaged in this
 * process. `undefined`: nothing to tell the store.
 */
export function readResponse(
  l: Learned,
  fixed: boolean,
  active: boolean,
  status: number,
  hint: RateLimitHint,
  now: number,
): Lesson | undefined {
  const reset = hint.reset;
  const spent = hint.remaining === 0 && reset !== undefined && reset > 0 && Number.isFinite(reset);
  const sentAt = hint.sentAt ?? null;
  /** The window's end, when its count says it is spent by now, though not 0 (window.ts). */
  let ahead: number | undefined;
  if (hint.remaining !== undefined && sentAt !== null) {
    const told = hint.window;
    if (told !== undefined && told > 0 && Number.isFinite(told)) l.window.told = now + told;
    const predicted = spentBy(l.window, hint.remaining, sentAt, now);
    if (!spent) ahead = predicted;
    windowSeen(l.window, hint.remaining, sentAt);
  }
  // A located reset (window.ts) ends the pause, and so the refusals,
  // at the window's own end: a 429 of an engaged key then is no cut.
  const located = spent ? locateReset(l.window, now, reset) : undefined;
  const rate = hint.rate;
  const told = rate !== undefined && rate > 0 && Number.isFinite(rate) ? rate : null;
  // A window that refills at a stated rate has room for the next request sooner than full.
  const refill = told === null ? Number.POSITIVE_INFINITY : now + Math.ceil(1000 / told);
  const pauseUntil = spent ? Math.min(located ?? now + reset, refill) : (ahead ?? null);
  if (spent && refill === Number.POSITIVE_INFINITY) {
    windowEnded(l.window, located ?? now + reset);
    l.window.paused = Math.max(l.window.paused, located ?? now + reset);
  }
  if (fixed) return pauseUntil === null ? undefined : { signal: 'pause', pauseUntil, sentAt };
  l.stated = told;
  const policy = hint.policy;
  l.ceiling = policy === undefined ? null : policyCeiling(policy.quota, policy.window);
  // A key not paced here yet learns its quota from the policy, before any 429.
  const learn: Lesson | undefined =
    !active && l.ceiling !== null ? { signal: 'policy', pauseUntil: null, sentAt } : undefined;
  const throttled = status === 429 && (hint.retryAfter !== 0 || spent);
  const neutral =
    !throttled && (status === 429 || (status === 503 && hint.retryAfter !== undefined));
  if (!neutral) countResponse(l, throttled, now);
  if (throttled && !(located !== undefined && active)) {
    const joining = !active;
    if (joining && !spent && !enough(l, now)) return learn;
    return { signal: 'throttle', pauseUntil, sentAt, joining, released: hint.released === true };
  }
  if (pauseUntil !== null) return { signal: 'pause', pauseUntil, sentAt };
  if (!neutral && active) return { signal: 'success', pauseUntil: null, sentAt };
  return learn;
}

/** The arguments of `rateFeedback` for a lesson of a key, from what this process measured. */
export function feedbackArgs(
  cfg: RateConfig,
  l: Learned,
  lesson: Lesson,
  now: number,
): RateFeedbackArgs {
  const { signal, pauseUntil, sentAt, joining = false, released = false } = lesson;
  // Until the counts are halved they span firstAt..now: a mean over that
  // span, unlike the meter, is not deflated by a client's idle spells
  // (every loop sleeping out a Retry-After, say).
  const span = Math.max(ENGAGE_SPAN_MS, now - l.firstAt) / 1000;
  const mean = (n: number) => (l.halved ? 0 : n / span);
  // A 429 in the release of a backlog after an outage: also the rates of the last few
  // hundred ms, so that the key engages at the backlog's own pace and a cut stops at what it
  // was just accepted at, not at meters the outage's silence deflated (issue 9: 66/s against
  // a capacity of 120; a flapping upstream's drains cut to 0.85 ×). Not otherwise: at the
  // start of a quota they would count the server's burst as its rate. A count decayed since each
  // event over-counts a steady stream by half an event: taken off, 50/s reads 50/s.
  const recentRate = (count: number, at: number) =>
    (Math.max(0, decayed(count, now - at) - 0.5) * 1000) / RECENT_MS;
  const recent = (count: number, at: number) => (released ? recentRate(count, at) : 0);
  return {
    cfg,
    signal,
    pauseUntil,
    measured: Math.max(
      meterRate(l.meter, now),
      mean(l.responses),
      recent(l.recentSent, l.recentSentAt),
    ),
    accepted: Math.max(
      meterSettled(l.accepted, now),
      mean(l.responses - l.refused),
      recent(l.recentOk, l.recentOkAt),
    ),
    fraction: l.responses > 0 ? l.refused / l.responses : 0,
    sentAt,
    // Where an engagement's curve heads, ungated: only wMax, never the rate itself. Midway
    // between the recent accepted and send rates: the first 429 of a ramp comes just past
    // the quota, where the accepted rate still lags, but where several unshared processes
    // share a quota each one's send rate is past its share (docs/policies.md). A success
    // never engages, so growth does not pay for it.
    ...(signal !== 'success' && {
      peak: (recentRate(l.recentOk, l.recentOkAt) + recentRate(l.recentSent, l.recentSentAt)) / 2,
    }),
    ...(joining && { joining }),
    ...(l.stated !== null && { stated: l.stated }),
    ...(l.ceiling !== null && { ceiling: l.ceiling }),
  };
}
