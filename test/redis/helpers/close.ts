/**
 * Deep comparison of JSON values where numbers may differ in their last bits:
 * `exp`, `cbrt` and `pow` of V8 (fdlibm) and of the C library Redis's Lua
 * uses are each within an ulp of the true value, not always the same ulp.
 */
const RELATIVE = 1e-12;

function numbersClose(a: number, b: number): boolean {
  if (Object.is(a, b)) return true;
  return Math.abs(a - b) <= RELATIVE * Math.max(1, Math.abs(a), Math.abs(b));
}

/** The first path where `actual` and `expected` differ, or `undefined` if they match. */
export function difference(actual: unknown, expected: unknown, path = '$'): string | undefined {
  if (typeof actual === 'number' && typeof expected === 'number') {
    return numbersClose(actual, expected) ? undefined : `${path}: ${actual} ≠ ${expected}`;
  }
  if (Array.isArray(actual) || Array.isArray(expected)) {
    if (!Array.isArray(actual) || !Array.isArray(expected)) {
      return `${path}: ${JSON.stringify(actual)} ≠ ${JSON.stringify(expected)}`;
    }
    if (actual.length !== expected.length)
      return `${path}: length ${actual.length} ≠ ${expected.length}`;
    for (let i = 0; i < actual.length; i++) {
      const d = difference(actual[i], expected[i], `${path}[${i}]`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  if (
    typeof actual === 'object' &&
    actual !== null &&
    typeof expected === 'object' &&
    expected !== null
  ) {
    const a = actual as Record<string, unknown>;
    const e = expected as Record<string, unknown>;
    const keys = new Set([...Object.keys(a), ...Object.keys(e)]);
    for (const key of keys) {
      const d = difference(a[key], e[key], `${path}.${key}`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  return Object.is(actual, expected)
    ? undefined
    : `${path}: ${JSON.stringify(actual)} ≠ ${JSON.stringify(expected)}`;
}

/** Counts comparisons that matched only within the tolerance. */
export const inexact: { count: number; total: number } = { count: 0, total: 0 };

/** Throws with the path of the first difference. */
export function assertClose(actual: unknown, expected: unknown, context: string): void {
  inexact.total++;
  const d = difference(actual, expected);
  if (d !== undefined) {
    throw new Error(
      `${context}: ${d}\n  actual:   ${JSON.stringify(actual)}\n  expected: ${JSON.stringify(expected)}`,
    );
  }
  if (JSON.stringify(actual) !== JSON.stringify(expected)) inexact.count++;
}
