import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import * as errors from '../../src/errors.js';
import {
  CircuitOpenError,
  DeadlineExceededError,
  isStaunchError,
  NetworkError,
  QueueFullError,
  RateLimitedError,
  StaunchError,
  type StaunchErrorCode,
  type StaunchErrorOptions,
} from '../../src/errors.js';

type Module = typeof errors;
type Factory = (m: Module, options?: StaunchErrorOptions) => StaunchError;

/** Every class, how to build one, its code and its name. */
const CLASSES: [string, Factory, StaunchErrorCode, string][] = [
  ['StaunchError', (m, o) => new m.StaunchError('base', o), 'STAUNCH_ERROR', 'StaunchError'],
  [
    'DeadlineExceededError',
    (m, o) => new m.DeadlineExceededError('too slow', 'total', 5_000, o),
    'STAUNCH_DEADLINE',
    'TimeoutError',
  ],
  [
    'NetworkError',
    (m, o) => new m.NetworkError('refused', false, o),
    'STAUNCH_NETWORK',
    'NetworkError',
  ],
  [
    'CircuitOpenError',
    (m, o) => new m.CircuitOpenError('open', 1_500, o),
    'STAUNCH_CIRCUIT_OPEN',
    'CircuitOpenError',
  ],
  [
    'RateLimitedError',
    (m, o) => new m.RateLimitedError('limited', 250, o),
    'STAUNCH_RATE_LIMITED',
    'RateLimitedError',
  ],
  [
    'QueueFullError',
    (m, o) => new m.QueueFullError('full', o),
    'STAUNCH_QUEUE_FULL',
    'QueueFullError',
  ],
  [
    'QueueTimeoutError',
    (m, o) => new m.QueueTimeoutError('waited', o),
    'STAUNCH_QUEUE_TIMEOUT',
    'QueueTimeoutError',
  ],
  [
    'SsrfBlockedError',
    (m, o) => new m.SsrfBlockedError('blocked', o),
    'STAUNCH_SSRF_BLOCKED',
    'SsrfBlockedError',
  ],
];
const SUBCLASSES = CLASSES.filter(([name]) => name !== 'StaunchError');
const classOf = (m: Module, name: string) =>
  (m as unknown as Record<string, new (...args: never[]) => StaunchError>)[name]!;

describe.each(CLASSES)('%s', (name, make, code, errorName) => {
  it(`has code ${code} and name ${errorName}, on the instance and the class`, () => {
    const error = make(errors);
    expect(error.code).toBe(code);
    expect((classOf(errors, name) as unknown as { code: string }).code).toBe(code);
    expect(error.name).toBe(errorName);
    expect(String(error)).toBe(`${errorName}: ${error.message}`);
    expect(error.stack?.split('\n')[0]).toBe(`${errorName}: ${error.message}`);
    expect(inspect(error)).toContain(errorName);
  });

  it('keeps its cause, and has no own cause when none was given', () => {
    const cause = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    expect(make(errors, { cause }).cause).toBe(cause);
    expect('cause' in make(errors)).toBe(false);
    expect(make(errors, { cause: 'text' }).cause).toBe('text');
  });

  it('keeps method, url and attempts', () => {
    const error = make(errors, { method: 'GET', url: 'https://h.example/', attempts: 3 });
    expect([error.method, error.url, error.attempts]).toEqual(['GET', 'https://h.example/', 3]);
  });

  it('is an Error, a StaunchError and its own class; isStaunchError says so', () => {
    const error = make(errors);
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(StaunchError);
    expect(error).toBeInstanceOf(classOf(errors, name));
    expect(isStaunchError(error)).toBe(true);
  });

  it('is not an instance of a sibling class', () => {
    const error = make(errors);
    for (const [other] of SUBCLASSES) {
      if (other === name) continue;
      expect(error instanceof classOf(errors, other), `${name} instanceof ${other}`).toBe(false);
    }
  });
});

describe('instanceof across two installed copies', () => {
  async function secondCopy(): Promise<Module> {
    // A query string makes the module loader evaluate the file a second time: a
    // second copy with its own classes, as two installed versions of staunch would be.
    const specifier = '../../src/errors.ts?copy';
    const copy = (await import(/* @vite-ignore */ specifier)) as Module;
    return copy;
  }

  it('the second copy really has distinct classes', async () => {
    const copy = await secondCopy();
    expect(copy.StaunchError).not.toBe(StaunchError);
    expect(copy.DeadlineExceededError).not.toBe(DeadlineExceededError);
  });

  it.each(CLASSES)('%s from the other copy matches this copy’s classes', async (name, make) => {
    const copy = await secondCopy();
    const theirs = make(copy);
    const ours = make(errors);
    expect(theirs).toBeInstanceOf(StaunchError);
    expect(theirs).toBeInstanceOf(classOf(errors, name));
    expect(ours).toBeInstanceOf(copy.StaunchError);
    expect(ours).toBeInstanceOf(classOf(copy, name));
    expect(isStaunchError(theirs)).toBe(true);
    expect(copy.isStaunchError(ours)).toBe(true);
    for (const [other] of SUBCLASSES) {
      if (other !== name) expect(theirs instanceof classOf(errors, other)).toBe(false);
    }
  });

  it('a branded object from any copy matches by code', () => {
    const brand = Symbol.for('staunch.error');
    const foreign = Object.assign(new Error('from elsewhere'), {
      [brand]: true,
      code: 'STAUNCH_CIRCUIT_OPEN',
      retryAfter: 10,
    });
    expect(foreign).toBeInstanceOf(StaunchError);
    expect(foreign).toBeInstanceOf(CircuitOpenError);
    expect(foreign instanceof DeadlineExceededError).toBe(false);
    expect(isStaunchError(foreign)).toBe(true);
  });

  it('rejects look-alikes without the brand, or with a brand that is not true', () => {
    const brand = Symbol.for('staunch.error');
    const cases: unknown[] = [
      Object.assign(new Error('x'), { code: 'STAUNCH_DEADLINE', name: 'TimeoutError' }),
      { code: 'STAUNCH_ERROR' },
      { [brand]: 'yes', code: 'STAUNCH_DEADLINE' },
      { [Symbol('staunch.error')]: true, code: 'STAUNCH_DEADLINE' },
      new DOMException('t', 'TimeoutError'),
      null,
      undefined,
      'STAUNCH_ERROR',
      42,
    ];
    for (const value of cases) {
      expect(isStaunchError(value)).toBe(false);
      expect(value instanceof StaunchError).toBe(false);
      expect(value instanceof DeadlineExceededError).toBe(false);
    }
  });

  it('the brand is hidden: not enumerable, not in JSON or keys', () => {
    const error = new QueueFullError('full');
    expect(Object.keys(error)).not.toContain(Symbol.for('staunch.error'));
    expect(Object.getOwnPropertySymbols(error)).toContain(Symbol.for('staunch.error'));
    expect(Object.prototype.propertyIsEnumerable.call(error, Symbol.for('staunch.error'))).toBe(
      false,
    );
  });
});

describe('class-specific fields', () => {
  it('DeadlineExceededError carries which deadline and its length', () => {
    const error = new DeadlineExceededError('GET x: attempt 2 exceeded', 'attempt', 1_000);
    expect(error.timeout).toBe('attempt');
    expect(error.ms).toBe(1_000);
  });

  it('NetworkError says whether the request may have been sent', () => {
    expect(new NetworkError('x', true).maybeSent).toBe(true);
    expect(new NetworkError('x', false).maybeSent).toBe(false);
  });

  it('CircuitOpenError and RateLimitedError carry retryAfter in ms', () => {
    expect(new CircuitOpenError('x', 30_000).retryAfter).toBe(30_000);
    expect(new RateLimitedError('x', 125).retryAfter).toBe(125);
  });
});

describe('toJSON', () => {
  it('gives a plain object with name, code, message, the fields and a described cause', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      code: 'ECONNREFUSED',
    });
    const error = new DeadlineExceededError('GET https://h.example/: exceeded', 'total', 5_000, {
      cause,
      method: 'GET',
      url: 'https://h.example/',
      attempts: 2,
    });
    expect(error.toJSON()).toEqual({
      name: 'TimeoutError',
      code: 'STAUNCH_DEADLINE',
      message: 'GET https://h.example/: exceeded',
      method: 'GET',
      url: 'https://h.example/',
      attempts: 2,
      timeout: 'total',
      ms: 5_000,
      cause: { name: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:1', code: 'ECONNREFUSED' },
    });
    expect(JSON.parse(JSON.stringify(error))).toEqual(error.toJSON());
  });

  it('leaves out absent fields and the cause when there is none', () => {
    expect(new QueueFullError('full').toJSON()).toEqual({
      name: 'QueueFullError',
      code: 'STAUNCH_QUEUE_FULL',
      message: 'full',
    });
    expect(new NetworkError('x', false).toJSON()).toEqual({
      name: 'NetworkError',
      code: 'STAUNCH_NETWORK',
      message: 'x',
      maybeSent: false,
    });
  });

  it.each([
    ['a string', 'boom', 'boom'],
    ['a number', 42, '42'],
    ['null', null, 'null'],
    ['a symbol', Symbol('s'), 'Symbol(s)'],
    ['a plain object', { reason: 'x' }, {}],
    ['a null-prototype object', Object.create(null) as unknown, {}],
    ['an object with a numeric code', { message: 'm', code: 7 }, { message: 'm', code: 7 }],
  ])('describes a non-Error cause (%s) without throwing', (_kind, cause, expected) => {
    const error = new StaunchError('x', { cause });
    expect(() => JSON.stringify(error)).not.toThrow();
    expect(error.toJSON().cause).toEqual(expected);
  });

  it('describes an error-like cause from another realm by its name and message', () => {
    const foreign = {
      name: 'TypeError',
      message: 'fetch failed',
      stack: 'TypeError: fetch failed',
    };
    Object.setPrototypeOf(foreign, null);
    const error = new StaunchError('x', { cause: foreign });
    expect(error.toJSON().cause).toEqual({ name: 'TypeError', message: 'fetch failed' });
  });

  it('describes a staunch cause with its code', () => {
    const error = new NetworkError('x', true, { cause: new CircuitOpenError('open', 5) });
    expect(error.toJSON().cause).toEqual({
      name: 'CircuitOpenError',
      message: 'open',
      code: 'STAUNCH_CIRCUIT_OPEN',
    });
  });
});
