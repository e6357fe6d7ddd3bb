/**
 * The rate limiter's options: `rateLimit` of `createFetch` validated once,
 * and the constants of the adaptive mode (docs/policies.md says why each).
 */

import {
  checkObject,
  describe as describeValue,
  positiveFinite,
  readNumber,
} from '../../internal/validate.js';
import type { RateConfig } from './ops.js';

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
  /** A cut multiplies the rate in force by this (never below the accepted rate). */
  beta: 0.85,
  /** CUBIC's C relative to the rate (per s³): 1 − beta regains a cut in one second, at any rate. */
  scale: 0.15,
  /** Floor of the learned rate, per second. */
  minRate: 0.5,
  /** The bucket holds a tenth of a second's worth of tokens (at least one). */
  burstSeconds: 0.1,
  /** After a decrease, further 429s are ignored for a second (quota windows are commonly 1 s). */
  holdoffMs: 1_000,
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
  const o = checkObject('rateLimit', input, ['rps', 'burst']);
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
