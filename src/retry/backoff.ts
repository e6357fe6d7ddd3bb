import type { Random } from '../internal/clock.js';
import { checkNumber, checkObject, describe } from '../internal/validate.js';

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
  const o = checkObject('backoff', options, ['base', 'cap', 'jitter']);
  const base = o.base === undefined ? 250 : checkNumber('backoff.base', o.base, GREATER_THAN_0);
  const capPath = o.cap === undefined ? 'backoff.cap (default)' : 'backoff.cap';
  const cap = checkNumber(capPath, o.cap ?? 20_000, { min: base });
  const jitter = (o.jitter ?? 'full') as Jitter;
  if (!JITTERS.includes(jitter))
    throw new TypeError(
      `backoff.jitter must be one of ${JITTERS.join(', ')}, got ${describe(o.jitter)}`,
    );

  // n = attempt − 1, clamped so that 2ⁿ stays finite (an out-of-range attempt gives the cap).
  const ceiling = (attempt: number): number =>
    Math.min(cap, base * 2 ** (attempt > 1 ? Math.min(attempt - 1, 1023) : 0));

  switch (jitter) {
    case 'none':
      return (attempt) => ceiling(attempt);
    case 'full':
      return (attempt, _previous, random) => draw(random) * ceiling(attempt);
    case 'equal':
      return (attempt, _previous, random) => {
        const t = ceiling(attempt);
        return t / 2 + draw(random) * (t / 2);
      };
    case 'decorrelated':
      return (_attempt, previous, random) => {
        // The formula's own outputs never exceed cap; clamping keeps 3·previous finite
        // when a caller passes a longer (server-paced) or non-finite previous delay.
        const last = previous > 0 ? Math.min(previous, cap) : base;
        const upper = Math.max(base, last * 3);
        return Math.min(cap, base + draw(random) * (upper - base));
      };
  }
}

/** One draw of `random`, kept in [0, 1] so that a faulty source cannot leave [0, cap]. */
function draw(random: Random): number {
  const r = random();
  return r > 0 ? Math.min(r, 1) : 0;
}

const GREATER_THAN_0 = { min: 0, exclusiveMin: true } as const;

/** A constant delay (no jitter): the naive client the lab compares against. */
export function constantBackoff(ms: number): Backoff {
  checkNumber('constantBackoff ms', ms, { min: 0 });
  return () => ms;
}
