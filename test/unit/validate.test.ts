import fc from 'fast-check';
import { expect, describe as group, it } from 'vitest';
import { checkNumber, checkObject, describe } from '../../src/internal/validate.js';

const ERRORS = { TypeError, RangeError };

group('describe', () => {
  it.each([
    ['abc', '"abc"'],
    ['', '""'],
    ['5', '"5"'],
    [5, '5'],
    [Number.NaN, 'NaN'],
    [Number.NEGATIVE_INFINITY, '-Infinity'],
    [-0, '-0'],
    [null, 'null'],
    [undefined, 'undefined'],
    [true, 'true'],
    [10n, '10n'],
    [Symbol('s'), 'Symbol(s)'],
    [() => 1, 'a function'],
    [[1, 2], 'an array'],
    [{ a: 1 }, 'an object'],
    [Object.create(null), 'an object'],
    [new Date(0), 'a Date'],
    [new Map(), 'a Map'],
    [new Error('x'), 'an Error'],
    [Promise.resolve(), 'a Promise'],
  ])('%o → %s', (value, expected) => {
    expect(describe(value)).toBe(expected);
  });

  it('tells a numeric string from a number', () => {
    expect(describe('100')).not.toBe(describe(100));
  });
});

group('checkNumber', () => {
  it.each<[unknown, Parameters<typeof checkNumber>[2], number]>([
    [5, {}, 5],
    [0, { min: 0 }, 0],
    [100, { max: 100 }, 100],
    [0.5, { min: 0, exclusiveMin: true }, 0.5],
    [3, { min: 1, max: 5, integer: true }, 3],
    [-7, undefined, -7],
  ])('accepts %o with %o', (value, rule, expected) => {
    expect(checkNumber('retry.attempts', value, rule)).toBe(expected);
  });

  it.each<[unknown, Parameters<typeof checkNumber>[2], 'TypeError' | 'RangeError', string]>([
    ['3', {}, 'TypeError', 'retry.attempts must be a number, got "3"'],
    [null, {}, 'TypeError', 'retry.attempts must be a number, got null'],
    [undefined, {}, 'TypeError', 'retry.attempts must be a number, got undefined'],
    [Number.NaN, {}, 'TypeError', 'retry.attempts must be a number, got NaN'],
    [{}, {}, 'TypeError', 'retry.attempts must be a number, got an object'],
    [5n, {}, 'TypeError', 'retry.attempts must be a number, got 5n'],
    [Number.POSITIVE_INFINITY, {}, 'RangeError', 'retry.attempts must be a number, got Infinity'],
    [0, { min: 1 }, 'RangeError', 'retry.attempts must be a number >= 1, got 0'],
    [0, { min: 0, exclusiveMin: true }, 'RangeError', 'retry.attempts must be a number > 0, got 0'],
    [101, { max: 100 }, 'RangeError', 'retry.attempts must be a number <= 100, got 101'],
    [
      1.5,
      { min: 1, max: 100, integer: true },
      'RangeError',
      'retry.attempts must be an integer >= 1 and <= 100, got 1.5',
    ],
    [
      -1,
      { min: 0, max: 10, integer: true },
      'RangeError',
      'retry.attempts must be an integer >= 0 and <= 10, got -1',
    ],
    [-0.5, { min: -0 }, 'RangeError', 'retry.attempts must be a number >= 0, got -0.5'],
  ])('rejects %o with %o: %s', (value, rule, type, message) => {
    expect(() => checkNumber('retry.attempts', value, rule)).toThrow(ERRORS[type]);
    expect(() => checkNumber('retry.attempts', value, rule)).toThrow(message);
  });

  it('distinguishes -0 from 0 in its message only as JavaScript does', () => {
    // -0 passes min 0 (it equals 0); nothing to report.
    expect(checkNumber('x', -0, { min: 0 })).toBe(-0);
  });

  it('property: every message names the path and the value', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z][a-zA-Z.[\]0-9]{0,20}$/),
        fc.oneof(fc.double(), fc.string(), fc.constant(null), fc.boolean()),
        fc.record(
          {
            min: fc.double({ noNaN: true, min: -1e6, max: 1e6 }),
            max: fc.double({ noNaN: true, min: -1e6, max: 1e6 }),
            exclusiveMin: fc.boolean(),
            integer: fc.boolean(),
          },
          { requiredKeys: [] },
        ),
        (path, value, rule) => {
          try {
            const ok = checkNumber(path, value, rule);
            return typeof ok === 'number' && Number.isFinite(ok);
          } catch (error) {
            const { message } = error as Error;
            return (
              (error instanceof TypeError || error instanceof RangeError) &&
              message.startsWith(`${path} must be `) &&
              message.endsWith(`, got ${describe(value)}`)
            );
          }
        },
      ),
    );
  });
});

group('checkObject', () => {
  it('returns the object when every key is allowed', () => {
    const value = { attempt: 1, total: 2 };
    expect(checkObject('timeout', value, ['attempt', 'total'])).toBe(value);
    expect(checkObject('timeout', {}, ['attempt'])).toEqual({});
  });

  it.each([
    [null, 'timeout must be an object, got null'],
    [undefined, 'timeout must be an object, got undefined'],
    [5, 'timeout must be an object, got 5'],
    ['5000', 'timeout must be an object, got "5000"'],
    [[1], 'timeout must be an object, got an array'],
    [() => 1, 'timeout must be an object, got a function'],
    [new Date(0), 'timeout must be an object, got a Date'],
    [new Map([['attempt', 1]]), 'timeout must be an object, got a Map'],
    [/x/, 'timeout must be an object, got a RegExp'],
  ])('rejects %o: %s', (value, message) => {
    expect(() => checkObject('timeout', value, ['attempt'])).toThrow(TypeError);
    expect(() => checkObject('timeout', value, ['attempt'])).toThrow(message);
  });

  it('names an unknown key with its path and lists the allowed ones', () => {
    expect(() => checkObject('timeout', { atempt: 1 }, ['attempt', 'total'])).toThrow(
      'timeout.atempt is not an option (expected one of: attempt, total)',
    );
    expect(() => checkObject('retry', { attempts: 3, statues: [] }, ['attempts'])).toThrow(
      TypeError,
    );
  });

  it('accepts null-prototype objects and instances of user classes', () => {
    class Options {
      attempt = 1;
    }
    expect(checkObject('timeout', new Options(), ['attempt'])).toEqual({ attempt: 1 });
    expect(checkObject('timeout', Object.create(null), ['attempt'])).toEqual({});
  });

  it('ignores inherited keys and symbols', () => {
    const inherited = Object.create({ extra: 1 }) as object;
    expect(() => checkObject('x', inherited, [])).not.toThrow();
    expect(() => checkObject('x', { [Symbol('s')]: 1 }, [])).not.toThrow();
  });
});
