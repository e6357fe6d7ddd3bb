/**
 * Option validation shared by the policies' `resolveXOptions()`. Messages name
 * the option path and the value: `breaker.failureRatio must be a number in
 * (0, 1], got 1.5`. A value of the wrong type is a `TypeError`; a number out of
 * range (NaN included) is a `RangeError`.
 */

import { describe as describeValue } from '../internal/validate.js';

/** A short, safe rendering of a value for an error message (one renderer for the whole library). */
export { describeValue };

/**
 * Checks that `value` is a plain object whose keys are all in `known`, and
 * returns it. Unknown keys are a `TypeError` that lists them.
 */
export function readObject(
  value: unknown,
  path: string,
  known: readonly string[],
): Readonly<Record<string, unknown>> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`${path} must be an object, got ${describeValue(value)}`);
  }
  const unknown = Object.keys(value).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    const names = unknown.map((key) => JSON.stringify(key)).join(', ');
    throw new TypeError(
      `${path} has unknown option${unknown.length > 1 ? 's' : ''} ${names} (known: ${known.join(', ')})`,
    );
  }
  return value as Readonly<Record<string, unknown>>;
}

/**
 * Reads `object[key]` as a number: `undefined` gives `fallback`; a non-number
 * is a `TypeError`; a number failing `valid` is a `RangeError`. `expected`
 * completes "must be …", e.g. `'a number in (0, 1]'`.
 */
export function readNumber(
  object: Readonly<Record<string, unknown>>,
  key: string,
  path: string,
  fallback: number,
  valid: (n: number) => boolean,
  expected: string,
): number {
  const value = object[key];
  if (value === undefined) return fallback;
  const name = `${path}.${key}`;
  if (typeof value !== 'number') {
    throw new TypeError(`${name} must be ${expected}, got ${describeValue(value)}`);
  }
  if (Number.isNaN(value) || !valid(value)) {
    throw new RangeError(`${name} must be ${expected}, got ${describeValue(value)}`);
  }
  return value;
}

/** A finite number > 0. */
export const positiveFinite = (n: number): boolean => Number.isFinite(n) && n > 0;
/** A finite number >= 0. */
export const nonNegativeFinite = (n: number): boolean => Number.isFinite(n) && n >= 0;
/** An integer >= 1. */
export const positiveInteger = (n: number): boolean => Number.isSafeInteger(n) && n >= 1;
