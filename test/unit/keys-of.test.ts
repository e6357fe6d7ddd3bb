/**
 * Option key lists are checked against their types at compile time
 * (internal/validate.ts `keysOf`): `npm run typecheck` fails on a list that
 * drifts from its type, which is what the `@ts-expect-error` lines assert.
 */
import { expect, test } from 'vitest';
import { CLIENT_KEYS } from '../../src/client.js';
import { keysOf } from '../../src/internal/validate.js';

interface Options {
  a?: number;
  b?: string;
}

test('a complete list is kept as given, frozen', () => {
  const keys = keysOf<Options>()(['a', 'b']);
  expect(keys).toEqual(['a', 'b']);
  expect(Object.isFrozen(keys)).toBe(true);
});

test('a list that misses a key of its type, or names one it lacks, does not compile', () => {
  // @ts-expect-error 'b' is missing
  expect(keysOf<Options>()(['a'])).toEqual(['a']);
  // @ts-expect-error 'c' is not a key of Options
  expect(keysOf<Options>()(['a', 'b', 'c'])).toHaveLength(3);
});

test('the client keys are the hooks and policies the options declare', () => {
  expect(CLIENT_KEYS).toContain('hold');
  expect(CLIENT_KEYS).toContain('pacing');
  expect(new Set(CLIENT_KEYS).size).toBe(CLIENT_KEYS.length);
});
