/**
 * staunch's defaults as the lab shows them, read from the library's own
 * resolved options: never written here as text, so the report and the
 * strategies' descriptions cannot drift from the code. A backoff is a
 * closure, so its shape is recognised by what it returns: the candidate
 * that answers like it on a grid of probes is the one named.
 */
import { DEFAULT_RETRY } from '../options.js';
import { breakerDefaults } from '../policy/breaker/breaker.js';
import { budgetDefaults } from '../policy/budget/budget.js';
import { resolveRateLimitOptions } from '../policy/rate/options.js';
import { type Backoff, exponentialBackoff, type Jitter } from '../retry/backoff.js';

/** What a backoff was recognised as. */
export type BackoffShape =
  | {
      readonly kind: 'exponential';
      readonly jitter: Jitter;
      readonly base: number;
      readonly cap: number;
    }
  | { readonly kind: 'constant'; readonly ms: number }
  | { readonly kind: 'custom' };

const JITTERS: readonly Jitter[] = ['none', 'full', 'equal', 'decorrelated'];
const DRAWS: readonly number[] = [0, 0.13, 0.5, 0.77, 1];
const always =
  (r: number): (() => number) =>
  () =>
    r;

/** Whether `a` and `b` answer alike for attempts 1–8, these previous delays and draws. */
function alike(a: Backoff, b: Backoff, previous: readonly number[]): boolean {
  for (let attempt = 1; attempt <= 8; attempt++) {
    for (const prev of previous) {
      for (const r of DRAWS) {
        if (a(attempt, prev, always(r)) !== b(attempt, prev, always(r))) return false;
      }
    }
  }
  return true;
}

/** Recognises `backoff`: an `exponentialBackoff` (its jitter, base and cap), a constant, or custom. */
export function backoffShape(backoff: Backoff): BackoffShape {
  // A constant first: it is also an exponential whose base is its cap.
  const first = backoff(1, 0, always(0.5));
  if (alike(backoff, () => first, [0, 1000])) return Object.freeze({ kind: 'constant', ms: first });
  // Every jitter answers its cap for a late attempt after a long delay at the top draw.
  const cap = backoff(64, Number.MAX_SAFE_INTEGER, always(1));
  for (const jitter of JITTERS) {
    // The base: the first delay at the top draw, or at the bottom one for decorrelated (U(base, …)).
    const base = backoff(1, 0, always(jitter === 'decorrelated' ? 0 : 1));
    if (!(base > 0 && Number.isFinite(cap) && cap >= base)) continue;
    const candidate = exponentialBackoff({ base, cap, jitter });
    if (alike(backoff, candidate, [0, base, base * 2.7, cap / 3, cap])) {
      return Object.freeze({ kind: 'exponential', jitter, base, cap });
    }
  }
  return Object.freeze({ kind: 'custom' });
}

const ms = (x: number): string => (x >= 1000 && x % 100 === 0 ? `${x / 1000} s` : `${x} ms`);

/** How each jitter draws the n-th delay (the AWS formulas, as `exponentialBackoff` documents them). */
const FORMULA: Readonly<Record<Jitter, (base: string) => string>> = {
  none: (b) => `${b} × 2ⁿ`,
  full: (b) => `U(0, ${b} × 2ⁿ)`,
  equal: (b) => `half of ${b} × 2ⁿ, plus U(0, that half)`,
  decorrelated: (b) => `U(${b}, 3 × previous)`,
};

/** `backoff` in words: `decorrelated jitter: U(250 ms, 3 × previous), cap 20 s`. */
export function describeBackoff(backoff: Backoff): string {
  const shape = backoffShape(backoff);
  if (shape.kind === 'constant') return `constant ${ms(shape.ms)}`;
  if (shape.kind === 'custom') return 'a custom backoff';
  const name = shape.jitter === 'none' ? 'exponential, no jitter' : `${shape.jitter} jitter`;
  return `${name}: ${FORMULA[shape.jitter](ms(shape.base))}, cap ${ms(shape.cap)}`;
}

/** One default the report shows: what it is, in words, and the raw values it came from. */
export interface ShownDefault {
  /** `backoff`, `budget`, `breaker`, `rateLimit`. */
  readonly option: string;
  readonly text: string;
}

/** staunch's defaults for the policies the lab exercises, each from the library's resolved options. */
export function staunchDefaults(): readonly ShownDefault[] {
  const b = breakerDefaults;
  const limiter = resolveRateLimitOptions(undefined);
  return Object.freeze([
    { option: 'backoff', text: describeBackoff(DEFAULT_RETRY.backoff) },
    {
      option: 'budget',
      text: `retry budget: ${budgetDefaults.ratio * 100} % of first attempts + ${budgetDefaults.minPerSecond}/s`,
    },
    {
      option: 'breaker',
      text: `circuit breaker: opens at ${b.failureRatio * 100} % failures over ${ms(b.window)} (at least ${b.minimumVolume}), ${ms(b.breakDuration)} open`,
    },
    {
      option: 'rateLimit',
      text: `rate limiter: ${limiter === false ? 'off' : limiter.mode}`,
    },
  ]);
}
