/** Option validation helpers: every message names the option path and the value. */

export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}

/** Throws a TypeError unless `value` is a plain object; rejects keys not in `allowed`. */
export function checkObject(
  path: string,
  value: unknown,
  allowed: readonly string[],
): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
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
    throw new RangeError(`${path} must be ${kind}${range ? ` ${range}` : ''}, got ${value}`);
  }
  return value;
}
