/**
 * Option validation, for every entry (the core, the policies, the adapters,
 * the lab): one module, one message format. Every message names the option's
 * path and the value: `breaker.failureRatio must be a number in (0, 1], got
 * 1.5`, `retry.attemps is not an option (expected one of: attempts, …)`. A
 * value of the wrong type (NaN included: it is not a number to a caller) is a
 * `TypeError`; a number out of range is a `RangeError`.
 */

/** The value as a message shows it: strings quoted, so `"5"` is told from `5`, and `5n` from both. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (Object.is(value, -0)) return '-0';
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object' && value !== null) {
    const tag = Object.prototype.toString.call(value).slice(8, -1);
    if (tag === 'Object') return 'an object';
    return `${/^[AEIOU]/.test(tag) ? 'an' : 'a'} ${tag}`;
  }
  return String(value);
}

/** An object literal (of any realm) or an instance of a user class; not an array, Date, Map… */
function isOptionsObject(value: unknown): value is object {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.prototype.toString.call(value) === '[object Object]'
  );
}

/**
 * The keys of an options type as a runtime list, checked against the type at
 * compile time: a key the type has and the list lacks, or one the list has
 * and the type lacks, is a type error. So the type is the one declaration and
 * the list that `checkObject` validates with cannot drift from it.
 *
 * @example const RETRY_KEYS = keysOf<RetryOptions>()(['attempts', 'methods']);
 */
export function keysOf<T extends object>() {
  return <const K extends readonly (keyof T & string)[]>(
    keys: K & (Exclude<keyof T & string, K[number]> extends never ? unknown : MissingKeys<T, K>),
  ): readonly (keyof T & string)[] => Object.freeze([...keys]);
}

/** The error a {@link keysOf} list shows when it misses keys of its type. */
type MissingKeys<T, K extends readonly unknown[]> = {
  readonly missing: Exclude<keyof T & string, K[number]>;
};

/** Throws a TypeError unless `value` is a plain object; rejects keys not in `allowed`. */
export function checkObject(
  path: string,
  value: unknown,
  allowed: readonly string[],
): Record<string, unknown> {
  if (!isOptionsObject(value)) {
    throw new TypeError(`${path} must be an object, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new TypeError(
        `${path}.${key} is not an option (expected one of: ${allowed.join(', ')})`,
      );
    }
  }
  return value as Record<string, unknown>;
}

export interface NumberRule {
  min?: number;
  max?: number;
  /** Reject the minimum itself. */
  exclusiveMin?: boolean;
  integer?: boolean;
}

/** A finite number within bounds, or a Type/RangeError naming `path` and the value. */
export function checkNumber(path: string, value: unknown, rule: NumberRule = {}): number {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new TypeError(`${path} must be a number, got ${describe(value)}`);
  }
  const { min = Number.NEGATIVE_INFINITY, max = Number.POSITIVE_INFINITY } = rule;
  const tooLow = rule.exclusiveMin ? value <= min : value < min;
  if (
    !Number.isFinite(value) ||
    tooLow ||
    value > max ||
    (rule.integer && !Number.isInteger(value))
  ) {
    const kind = rule.integer ? 'an integer' : 'a number';
    const low = rule.exclusiveMin ? `> ${min}` : `>= ${min}`;
    const range = [Number.isFinite(min) ? low : '', Number.isFinite(max) ? `<= ${max}` : '']
      .filter(Boolean)
      .join(' and ');
    throw new RangeError(
      `${path} must be ${kind}${range ? ` ${range}` : ''}, got ${describe(value)}`,
    );
  }
  return value;
}

/**
 * Reads `object[key]` as a number: `undefined` gives `fallback`; a non-number
 * (or NaN) is a `TypeError`; a number failing `valid` is a `RangeError`.
 * `expected` completes "must be …", e.g. `'a number in (0, 1]'`.
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
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new TypeError(`${name} must be ${expected}, got ${describe(value)}`);
  }
  if (!valid(value)) throw new RangeError(`${name} must be ${expected}, got ${describe(value)}`);
  return value;
}

/** A finite number > 0. */
export const positiveFinite = (n: number): boolean => Number.isFinite(n) && n > 0;
/** A finite number >= 0. */
export const nonNegativeFinite = (n: number): boolean => Number.isFinite(n) && n >= 0;
/** An integer >= 1. */
export const positiveInteger = (n: number): boolean => Number.isSafeInteger(n) && n >= 1;
