/**
 * The circuit breaker's options: `breaker` of `createFetch`, validated once
 * when the client is built (docs/policies.md, "Circuit breaker").
 */
import {
  checkObject,
  describe as describeValue,
  positiveFinite,
  positiveInteger,
  readNumber,
} from '../../internal/validate.js';

/** Options of the circuit breaker (`breaker` in `createFetch`). Durations in ms. */
export interface BreakerOptions {
  /**
   * Trip when failures / (failures + successes) over the window reaches this.
   * @default 0.5
   */
  failureRatio?: number | undefined;
  /**
   * Never trip on the ratio with fewer calls than this in the window.
   * @default 20
   */
  minimumVolume?: number | undefined;
  /**
   * Length of the sliding window, in ms, kept as 10 buckets of `window / 10`.
   * @default 10_000
   */
  window?: number | undefined;
  /**
   * How long the circuit stays open after it trips, in ms; doubled after
   * each failed probe, up to `maxBreakDuration`.
   * @default 5_000
   */
  breakDuration?: number | undefined;
  /**
   * Ceiling of the break duration, in ms.
   * @default 60_000 (or `breakDuration` if that is longer and this is not set)
   */
  maxBreakDuration?: number | undefined;
  /**
   * Probes let through at once while half-open; the rest fail fast.
   * @default 1
   */
  halfOpenProbes?: number | undefined;
  /**
   * Trip after this many failures in a row instead of on the ratio
   * (`failureRatio` and `minimumVolume` are then unused).
   * @default undefined (ratio mode)
   */
  consecutiveFailures?: number | undefined;
  /**
   * While requests wait on an open circuit, a probe goes this often (ms): the
   * break neither grows nor outlasts this then, so a waiting caller sees the
   * recovery within about this long.
   * @default 250
   */
  probeInterval?: number | undefined;
  /**
   * `true`: an open circuit always fails fast with `CircuitOpenError`. By
   * default a request that may still be retried, and whose deadline outlasts
   * the next probe, waits for the probe's verdict instead (no attempt counted,
   * no budget charged) and goes once the circuit closes. Fail fast suits an
   * interactive caller that has a fallback.
   * @default false
   */
  failFast?: boolean | undefined;
  /**
   * Requests that may wait on an open circuit per key, in this process; one
   * more fails fast with `CircuitOpenError`. A held request costs about
   * 2.7 KB of heap (docs/policies.md, "Circuit breaker"), so the default
   * holds at most about 270 MB per key: 100 s of an outage at 1,000
   * requests a second, 20 s at 5,000. `0`: nobody waits (as with `failFast`).
   * @default 100_000
   */
  maxWaiting?: number | undefined;
}

/** Validated, frozen breaker options. */
export interface ResolvedBreakerOptions {
  readonly failureRatio: number;
  readonly minimumVolume: number;
  readonly window: number;
  readonly breakDuration: number;
  readonly maxBreakDuration: number;
  readonly halfOpenProbes: number;
  readonly consecutiveFailures: number | undefined;
  readonly probeInterval: number;
  readonly failFast: boolean;
  readonly maxWaiting: number;
}

/** Defaults of {@link BreakerOptions}. */
export const breakerDefaults: ResolvedBreakerOptions = Object.freeze({
  failureRatio: 0.5,
  minimumVolume: 20,
  window: 10_000,
  breakDuration: 5_000,
  maxBreakDuration: 60_000,
  halfOpenProbes: 1,
  consecutiveFailures: undefined,
  probeInterval: 250,
  failFast: false,
  maxWaiting: 100_000,
});

const KNOWN = Object.keys(breakerDefaults);
const MS = 'a finite number of ms > 0';

/**
 * Validates `breaker` options once, when the client is built: `false` turns
 * the breaker off, `true` or `undefined` gives the defaults.
 * @throws TypeError for a wrong type or an unknown key; RangeError for a value out of range.
 */
export function resolveBreakerOptions(
  input: BreakerOptions | boolean | undefined,
): ResolvedBreakerOptions | false {
  if (input === false) return false;
  if (input === true || input === undefined) return breakerDefaults;
  const o = checkObject('breaker', input, KNOWN);
  const d = breakerDefaults;
  const p = 'breaker';
  const ratio = (n: number): boolean => n > 0 && n <= 1;
  const breakDuration = readNumber(o, 'breakDuration', p, d.breakDuration, positiveFinite, MS);
  const maxDefault = Math.max(d.maxBreakDuration, breakDuration);
  const maxBreakDuration = readNumber(o, 'maxBreakDuration', p, maxDefault, positiveFinite, MS);
  if (maxBreakDuration < breakDuration) {
    throw new RangeError(
      `breaker.maxBreakDuration must be >= breaker.breakDuration (${breakDuration}), got ${maxBreakDuration}`,
    );
  }
  const consecutive = o.consecutiveFailures;
  const failFast = o.failFast ?? d.failFast;
  if (typeof failFast !== 'boolean') {
    throw new TypeError(`breaker.failFast must be a boolean, got ${describeValue(failFast)}`);
  }
  return Object.freeze({
    failureRatio: readNumber(o, 'failureRatio', p, d.failureRatio, ratio, 'a number in (0, 1]'),
    minimumVolume: readNumber(
      o,
      'minimumVolume',
      p,
      d.minimumVolume,
      positiveInteger,
      'an integer >= 1',
    ),
    window: readNumber(o, 'window', p, d.window, positiveFinite, MS),
    breakDuration,
    maxBreakDuration,
    halfOpenProbes: readNumber(
      o,
      'halfOpenProbes',
      p,
      d.halfOpenProbes,
      positiveInteger,
      'an integer >= 1',
    ),
    consecutiveFailures:
      consecutive === undefined
        ? undefined
        : readNumber(o, 'consecutiveFailures', p, 1, positiveInteger, 'an integer >= 1'),
    probeInterval: readNumber(o, 'probeInterval', p, d.probeInterval, positiveFinite, MS),
    failFast,
    maxWaiting: readNumber(
      o,
      'maxWaiting',
      p,
      d.maxWaiting,
      (n) => n === Number.POSITIVE_INFINITY || (Number.isSafeInteger(n) && n >= 0),
      'an integer >= 0 or Infinity',
    ),
  });
}
