/**
 * The rate limiter's store operations: a token bucket with reservations
 * (waiters are served in the order they reserved, and taking a token is one
 * atomic decision), pauses, and in adaptive mode the learned rate (CUBIC, as
 * in the AWS SDKs' adaptive retry mode). Pure; see docs/policies.md.
 */
import type { Json, StoreOperation, StoreUpdate } from '../../store/store.js';
import {
  METER_BUCKET_MS,
  meterNow,
  meterRate,
  meterRecord,
  meterSettled,
  meterShift,
} from './meter.js';
import {
  CUT_DEEPEST,
  FUTILE_BAND,
  FUTILE_MAX,
  type RateAcquireArgs,
  type RateAcquireResult,
  type RateConfig,
  type RateFeedbackArgs,
  type RateFeedbackResult,
  type RateRefundArgs,
  type RateState,
  type RateTally,
  TALLY_MIN,
  TALLY_REFUSED,
} from './types.js';

export type {
  RateAcquireArgs,
  RateAcquireResult,
  RateConfig,
  RateFeedbackArgs,
  RateFeedbackResult,
  RateRefundArgs,
  RateSignal,
  RateState,
  RateTally,
} from './types.js';

const isNumber = (x: unknown): x is number => typeof x === 'number';
const isMeter = (m: unknown): boolean =>
  m === null || (Array.isArray(m) && isNumber(m[0]) && isNumber(m[1]) && isNumber(m[2]));

function readState(json: Json | undefined): RateState | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const s = json as Partial<Record<keyof RateState, unknown>>;
  const numbers = [s.tokens, s.at, s.epoch, s.plateau, s.low, s.rate, s.wMax, s.lastDecrease];
  if (!numbers.every(isNumber) || !isNumber(s.pausedAt) || !isNumber(s.before)) return undefined;
  if (!isMeter(s.meter) || !isMeter(s.ok)) return undefined;
  const t = s.tally;
  if (!Array.isArray(t) || ![t[0], t[1], t[2], t[3]].every(isNumber)) return undefined;
  if (isNumber(s.stated) && isNumber(s.ceiling)) return json as RateState;
  const [stated, ceiling] = [s.stated ?? 0, s.ceiling ?? 0]; // 0 in states written before them
  if (!isNumber(stated) || !isNumber(ceiling)) return undefined;
  return { ...(json as RateState), stated, ceiling };
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
    plateau: 0,
    ok: null,
    pausedAt: 0,
    before: 0,
    tally: [0, 0, 0, 0],
    low: 0,
    stated: 0,
    ceiling: 0,
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

function bucketOf(t: number): number {
  return Math.floor(t / METER_BUCKET_MS) * METER_BUCKET_MS;
}

/** Epoch ms the growth curve from `rate` passes `wMax` (at once if `rate ≥ wMax`). */
function plateauOf(rate: number, wMax: number, cfg: RateConfig, now: number): number {
  return now + 1000 * Math.cbrt(Math.max(0, 1 - rate / wMax) / cfg.scale);
}

/** Notes the rate in force when a request refused since the last cut was sent. */
function lowered(s: RateState, cfg: RateConfig, sentAt: number): RateState {
  if (sentAt <= s.lastDecrease) return s;
  const t = (sentAt - s.plateau) / 1000;
  const at = Math.max(cfg.minRate, Math.min(s.rate, s.wMax * (1 + cfg.scale * t ** 3)));
  return s.low > 0 && s.low <= at ? s : { ...s, low: at };
}

/** Counts a response in the tally, by when its request was sent (before the last cut: not at all). */
function tallied(s: RateState, cfg: RateConfig, sentAt: number, refused: boolean): RateState {
  if (sentAt <= s.lastDecrease) return s;
  const [n, k, n2, k2] = s.tally;
  const add = refused ? 1 : 0;
  const tally: RateTally =
    sentAt < s.lastDecrease + cfg.holdoffMs ? [n + 1, k + add, n2, k2] : [n, k, n2 + 1, k2 + add];
  return { ...s, tally };
}

/**
 * Where a cut (or the engagement) lands: β × the rate in force, but never
 * below the accepted rate (what the server let through: a quota's own rate,
 * or all but the few a server refuses at random) and never above the rate
 * in force. The curve then regains `wMax`, the rate in force, within about
 * a second (exactly one for a cut by β).
 */
function aim(cfg: RateConfig, base: number, accepted: number, inForce: number, depth: number) {
  const rate = Math.max(cfg.minRate, Math.min(inForce, Math.max(accepted, base * depth)));
  return { rate, wMax: Math.max(rate, base) };
}

/** The key engaged from one process's estimates: its accepted rate, or β × its send rate. */
function engage(
  epoch: number,
  cfg: RateConfig,
  measured: number,
  accepted: number,
  fraction: number,
  now: number,
): RateState {
  const { rate, wMax } = aim(cfg, measured, accepted, Number.POSITIVE_INFINITY, cfg.beta);
  return {
    tokens: 0,
    at: now,
    epoch: epoch + 1,
    rate,
    wMax,
    lastDecrease: now,
    meter: [bucketOf(now), 0, measured],
    plateau: plateauOf(rate, wMax, cfg, now),
    ok: [bucketOf(now), 0, accepted],
    pausedAt: 0,
    before: fraction,
    tally: [0, 0, 0, 0],
    low: 0,
    stated: 0,
    ceiling: 0,
  };
}

function increase(s: RateState, cfg: RateConfig, now: number): RateState {
  const settled = settle(s, cfg, now);
  const t = (now - s.plateau) / 1000;
  const cubic = s.wMax * (1 + cfg.scale * t ** 3);
  // Twice the measured send rate bounds the growth, so an unused rate does not
  // run away; it never pulls the rate down (idle time is not a throttle).
  const ceiling = 2 * meterRate(s.meter ?? undefined, now);
  const rate = Math.max(s.rate, cfg.minRate, Math.min(cubic, ceiling));
  const next = { ...settled, rate, ok: meterRecord(s.ok ?? undefined, now) };
  return { ...next, tokens: Math.min(next.tokens, burstOf(next, cfg)) };
}

/**
 * Cuts from the rate in force (or the send rate, if less) to the accepted
 * rate (see `aim`). The 429 fraction that led here is kept to judge the
 * next cut by.
 */
function decrease(s: RateState, cfg: RateConfig, measured: number, accepted: number, now: number) {
  const settled = settle(s, cfg, now);
  const sent = Math.max(meterNow(s.meter ?? undefined, now), measured);
  const base = Math.min(s.rate, sent, s.low > 0 ? s.low : s.rate);
  const floor = Math.max(meterSettled(s.ok, now), accepted);
  const [n, k, n2, k2] = s.tally;
  const before = n2 >= TALLY_MIN ? k2 / n2 : n + n2 > 0 ? (k + k2) / (n + n2) : s.before;
  // Paced sends refused at a fraction f say the server takes (1 − f) of the
  // rate in force: cut that deep when it is deeper than β (at most to a
  // quarter, against a noisy tally), so that far above a quota the rate
  // gets there in one cut instead of one β per hold-off.
  const depth =
    n + n2 >= TALLY_MIN ? Math.max(CUT_DEEPEST, Math.min(cfg.beta, 1 - before)) : cfg.beta;
  const { rate, wMax } = aim(cfg, base, floor, s.rate, depth);
  const cut = rate < s.rate;
  return {
    ...settled,
    rate,
    wMax,
    lastDecrease: now,
    plateau: plateauOf(rate, wMax, cfg, now),
    // A real cut voids the reservations made at the old rate; none keeps them.
    tokens: cut ? 0 : settled.tokens,
    epoch: cut ? s.epoch + 1 : s.epoch,
    before,
    tally: [0, 0, 0, 0] as RateTally,
    low: 0,
  };
}

/**
 * The last cut did not lower the 429 fraction: the responses to requests
 * sent within the hold-off after it are refused as often as before it. A
 * quota answers a lower rate with fewer 429s; this pattern does not.
 */
function futile(s: RateState): boolean {
  const [n, k] = s.tally;
  if (!(s.before > 0) || s.before > FUTILE_MAX || n < TALLY_MIN || k < TALLY_REFUSED) return false;
  const f = k / n;
  return f <= FUTILE_MAX && f * FUTILE_BAND >= s.before && f <= s.before * FUTILE_BAND;
}

/**
 * A process joining an engaged key (its own first 429). Within the hold-off
 * of the engagement or the last cut, its traffic was not in the estimate
 * the key was set from: it adds its accepted rate (what the server takes
 * from it) to the rate and its send rate to `wMax`, so the key stands at
 * the fleet's rate, not one process's (issue 9: eight processes sharing a
 * key ran at 1/8 of the capacity for seconds). Later, the key's rate already
 * answers for the fleet: the joiner only raises it to the fleet's accepted
 * rate plus its own. Never lowers it.
 */
function join(
  s: RateState,
  cfg: RateConfig,
  measured: number,
  accepted: number,
  now: number,
): RateState {
  // A refusal noted before the join (`low`) was of a request sent at one process's share, not
  // at the fleet's rate: it says nothing of the joined rate, and a cut from it would land far
  // below the quota (issue 9, the fleet's seed 7: a cut from 17.7/s to 76/s under 200/s).
  if (now < s.lastDecrease + cfg.holdoffMs) {
    const rate = s.rate + Math.max(cfg.minRate, accepted);
    const wMax = s.wMax + Math.max(measured, accepted);
    return { ...settle(s, cfg, now), rate, wMax, plateau: plateauOf(rate, wMax, cfg, now), low: 0 };
  }
  const rate = meterSettled(s.ok, now) + accepted;
  if (!(rate > s.rate)) return s;
  const wMax = Math.max(s.wMax, rate);
  return { ...settle(s, cfg, now), rate, wMax, plateau: plateauOf(rate, wMax, cfg, now), low: 0 };
}

/**
 * The server's stated rate and its policy's ceiling (each the latest
 * statement, else the one kept) bound the learned rate: the rate never
 * grows past what the server says it refills or its quota allows, and a
 * `wMax` above is brought down, so growth plateaus there instead of probing
 * for more. The stated rate is floored at `minRate`; the ceiling is not.
 */
function capped(s: RateState, cfg: RateConfig, told: number | null, ceil: number | null) {
  const stated = told ?? s.stated;
  const ceiling = ceil ?? s.ceiling;
  const cap = Math.min(
    stated > 0 ? Math.max(cfg.minRate, stated) : Number.POSITIVE_INFINITY,
    ceiling > 0 ? ceiling : Number.POSITIVE_INFINITY,
  );
  if (s.rate <= cap && s.wMax <= cap && s.stated === stated && s.ceiling === ceiling) return s;
  return { ...s, rate: Math.min(s.rate, cap), wMax: Math.min(s.wMax, cap), stated, ceiling };
}

/** A quota-spent pause: no token before `until`; the meters skip the paused time. */
function pause(s: RateState, cfg: RateConfig, until: number, now: number): RateState {
  const settled = settle(s, cfg, now);
  const paused = until - Math.max(now, s.at);
  return {
    ...settled,
    at: until,
    tokens: 1,
    epoch: s.epoch + 1,
    pausedAt: now,
    meter: meterShift(s.meter, paused),
    ok: meterShift(s.ok, paused),
  };
}

/**
 * `staunch.rate.feedback`: learns from a response; see docs/policies.md for
 * each rule and why. `success` grows an engaged adaptive key along the
 * CUBIC curve. `throttle` engages the key from the process's estimates, or
 * joins it, or cuts it (once per hold-off, for requests sent after the last
 * cut, unless the last cut proved futile). `pauseUntil` (any signal): the
 * quota is spent, no token before then (once per window: only for requests
 * sent after the last pause began).
 */
export const rateFeedback: StoreOperation<RateFeedbackArgs, RateFeedbackResult> = Object.freeze({
  name: 'staunch.rate.feedback',
  apply(
    json: Json | undefined,
    args: RateFeedbackArgs,
    now: number,
  ): StoreUpdate<RateFeedbackResult> {
    const { cfg, signal, pauseUntil, measured, accepted } = args;
    const sentAt = args.sentAt ?? now;
    const told = args.stated ?? null;
    const ceiling = args.ceiling ?? null;
    const stored = readState(json);
    let s: RateState | undefined = engaged(stored, cfg) ? stored : undefined;
    let reset = false;
    if (cfg.rps === null) {
      if (s === undefined) {
        // A policy engages at its ceiling; a spent quota with a stated refill rate, at that
        // rate (the measured and accepted estimates both that rate: aim lands on it).
        const given =
          signal === 'policy'
            ? ceiling
            : signal === 'pause' && told !== null && told > 0
              ? told
              : null;
        if (signal !== 'success' && (signal !== 'policy' || (given !== null && given > 0))) {
          const sent = given ?? measured;
          const took = given ?? accepted;
          s = engage(stored?.epoch ?? 0, cfg, sent, took, args.fraction, now);
          // The meters lag a ramp of demand: the curve heads for the recent rates if higher
          // (the rate itself still starts from the meters; docs/policies.md).
          const peak = args.peak ?? 0;
          if (given === null && peak > s.wMax) {
            s = { ...s, wMax: peak, plateau: plateauOf(s.rate, peak, cfg, now) };
          }
          reset = true;
        }
      } else if (signal === 'success') {
        s = increase(tallied(s, cfg, sentAt, false), cfg, now);
      } else if (signal === 'throttle') {
        s = lowered(tallied(s, cfg, sentAt, true), cfg, sentAt);
        if (args.joining === true) {
          s = join(s, cfg, measured, accepted, now);
        } else if (sentAt >= s.lastDecrease && now >= s.lastDecrease + cfg.holdoffMs) {
          if (futile(s)) {
            // Hold: keep the rate and grow from it afresh (the curve's plateau
            // here, so growth resumes gently instead of where a second of
            // convex growth had left it); judge again on the next hold-off.
            s = {
              ...s,
              wMax: Math.max(s.rate, cfg.minRate),
              plateau: now,
              lastDecrease: now,
              tally: [0, 0, 0, 0],
              low: 0,
            };
          } else {
            const cut = decrease(s, cfg, measured, accepted, now);
            reset = cut.epoch !== s.epoch;
            s = cut;
          }
        }
      }
    }
    if (s !== undefined && cfg.rps === null) s = capped(s, cfg, told, ceiling);
    if (pauseUntil !== null && pauseUntil > now) {
      if (s === undefined && cfg.rps !== null) s = fixedFresh(cfg, now);
      if (s !== undefined && pauseUntil > s.at && sentAt >= s.pausedAt) {
        s = pause(s, cfg, pauseUntil, now);
        reset = true;
      }
    }
    if (s === undefined)
      return { state: undefined, ttl: 0, result: { engaged: false, reset: false } };
    return write(s, cfg, now, { engaged: true, reset });
  },
});
