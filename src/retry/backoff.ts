import type { Random } from '../internal/clock.js';

/**
 * A backoff generator: pure, `(attempt, previousDelay, random) → ms`.
 * `attempt` is the number of the attempt that just failed (1 for the first),
 * `previousDelay` the delay chosen before this one (0 before the first retry).
 */
export type Backoff = (attempt: number, previousDelay: number, random: Random) => number;

/** How randomness spreads the exponential curve (AWS Architecture Blog, "Exponential Backoff and Jitter"). */
export type Jitter = 'none' | 'full' | 'equal' | 'decorrelated';

export interface ExponentialBackoffOptions {
  /** First step in ms. @default 250 */
  base?: number;
  /** Largest delay in ms. @default 20_000 */
  cap?: number;
  /** @default 'full' */
  jitter?: Jitter;
}

const JITTERS: readonly Jitter[] = ['none', 'full', 'equal', 'decorrelated'];

/**
 * Exponential backoff with the AWS jitter formulas, n = attempt − 1:
 * - `none`: min(cap, base·2ⁿ)
 * - `full`: U(0, min(cap, base·2ⁿ))
 * - `equal`: t/2 + U(0, t/2) with t = min(cap, base·2ⁿ)
 * - `decorrelated`: min(cap, U(base, 3·previous)), previous = base at first
 *
 * @example exponentialBackoff({ base: 100, cap: 5_000, jitter: 'decorrelated' })
 * @see https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/
 */
export function exponentialBackoff(options: ExponentialBackoffOptions = {}): Backoff {
  if (typeof options !== 'object' || options === null)
    throw new TypeError(`exponentialBackoff options must be an object, got ${String(options)}`);
  const { base = 250, cap = 20_000, jitter = 'full' } = options;
  if (typeof base !== 'number' || !Number.isFinite(base) || base <= 0)
    throw new RangeError(`backoff.base must be a finite number of ms > 0, got ${String(base)}`);
  if (typeof cap !== 'number' || !Number.isFinite(cap) || cap < base)
    throw new RangeError(
      `backoff.cap must be a finite number of ms >= base (${base}), got ${String(cap)}`,
    );
  if (!JITTERS.includes(jitter))
    throw new TypeError(
      `backoff.jitter must be one of ${JITTERS.join(', ')}, got ${String(jitter)}`,
    );

  const ceiling = (attempt: number): number =>
    Math.min(cap, base * 2 ** Math.min(Math.max(attempt - 1, 0), 1023));

  switch (jitter) {
    case 'none':
      return (attempt) => ceiling(attempt);
    case 'full':
      return (attempt, _previous, random) => random() * ceiling(attempt);
    case 'equal':
      return (attempt, _previous, random) => {
        const t = ceiling(attempt);
        return t / 2 + random() * (t / 2);
      };
    case 'decorrelated':
      return (_attempt, previous, random) => {
        const upper = Math.max(base, (previous > 0 ? previous : base) * 3);
        return Math.min(cap, base + random() * (upper - base));
      };
  }
}

/** A constant delay (no jitter): the naive client the lab compares against. */
export function constantBackoff(ms: number): Backoff {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
    throw new RangeError(`constantBackoff ms must be a finite number >= 0, got ${String(ms)}`);
  return () => ms;
}
