import fc from 'fast-check';
import { errors as undiciErrors } from 'undici';
import { describe, expect, it } from 'vitest';
import {
  classifyError,
  classifyStatus,
  type ErrorKind,
  errorCode,
  FATAL_CODES,
  INVALID_CODES,
  isInvalidRequest,
  markInvalid,
  type RetryScope,
  refusedByFetch,
  UNSENT_CODES,
} from '../../src/retry/classify.js';
import { closedPort, type RawServer, rawServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504, 529]);
const withCode = (code: unknown, message = `${String(code)} happened`) =>
  Object.assign(new Error(message), { code });

describe('classifyStatus: the retry table of DESIGN.md', () => {
  type Row = [number, Record<string, string>, RetryScope];
  const rows: Row[] = [
    // The server said it did not process the request: every method.
    [429, {}, 'any'],
    [429, { 'retry-after': '3' }, 'any'],
    [408, {}, 'any'],
    [503, { 'retry-after': '3' }, 'any'],
    [503, { 'retry-after': 'Thu, 01 Jan 2026 00:00:09 GMT' }, 'any'],
    [503, { 'retry-after-ms': '250' }, 'any'],
    // Failures of the upstream: replayable requests only.
    [500, {}, 'replayable'],
    [502, {}, 'replayable'],
    [503, {}, 'replayable'],
    [504, {}, 'replayable'],
    [529, {}, 'replayable'],
    [500, { 'retry-after': '3' }, 'replayable'], // only 503 turns pacing into "not processed"
    // A malformed Retry-After is no hint (the parsers are strict): still replayable only.
    [503, { 'retry-after': 'soon' }, 'replayable'],
    [503, { 'retry-after': '' }, 'replayable'],
    [503, { 'retry-after-ms': '-5' }, 'replayable'],
    // Any other 4xx: never.
    [400, {}, 'never'],
    [401, {}, 'never'],
    [403, {}, 'never'],
    [404, {}, 'never'],
    [409, {}, 'never'],
    [422, {}, 'never'],
    [404, { 'retry-after': '3' }, 'never'],
    [501, {}, 'never'], // not in the configured set
    [505, {}, 'never'],
    // The server's word wins either way.
    [400, { 'x-should-retry': 'true' }, 'any'],
    [404, { 'x-should-retry': 'true' }, 'any'],
    [500, { 'x-should-retry': 'true' }, 'any'],
    [503, { 'x-should-retry': 'false' }, 'never'],
    [503, { 'x-should-retry': 'false', 'retry-after': '3' }, 'never'],
    [429, { 'x-should-retry': 'false' }, 'never'],
    [408, { 'x-should-retry': 'false' }, 'never'],
    [500, { 'x-should-retry': 'maybe' }, 'replayable'],
    [400, { 'x-should-retry': 'yes' }, 'never'],
  ];

  describe.each([
    ['record', (h: Record<string, string>) => h],
    [
      'record with upper-case keys',
      (h: Record<string, string>) =>
        Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toUpperCase(), v])),
    ],
    ['Headers', (h: Record<string, string>) => new Headers(h)],
  ])('from a %s', (_kind, make) => {
    it.each(rows)('%i %o → %s', (status, headers, expected) => {
      expect(classifyStatus(status, make(headers), STATUSES)).toBe(expected);
    });
  });

  it('statuses not in the configured set are never retried, whatever they are', () => {
    const only = new Set([502]);
    expect(classifyStatus(502, {}, only)).toBe('replayable');
    expect(classifyStatus(500, {}, only)).toBe('never');
    expect(classifyStatus(429, { 'retry-after': '1' }, only)).toBe('never');
    expect(classifyStatus(503, { 'retry-after': '1' }, only)).toBe('never');
    expect(classifyStatus(408, {}, new Set())).toBe('never');
  });

  it('a configured 4xx other than 408/429 is replayable only', () => {
    expect(classifyStatus(409, {}, new Set([409]))).toBe('replayable');
  });

  it('the Idempotency-Key draft: a keyed 409 is pacing, a keyed 422 is never retried', () => {
    const none = new Set<number>();
    expect(classifyStatus(409, {}, none, true)).toBe('any');
    expect(classifyStatus(409, {}, none, false)).toBe('never');
    expect(classifyStatus(409, { 'x-should-retry': 'false' }, none, true)).toBe('never');
    // The same payload under the same key meets the same 422, whatever else is said.
    expect(classifyStatus(422, { 'x-should-retry': 'true' }, new Set([422]), true)).toBe('never');
    expect(classifyStatus(422, {}, new Set([422]), false)).toBe('replayable');
  });

  it('property: x-should-retry decides alone, for any status and any set', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 599 }),
        fc.uniqueArray(fc.integer({ min: 100, max: 599 })),
        fc.boolean(),
        (status, set, should) =>
          classifyStatus(status, { 'x-should-retry': String(should) }, new Set(set)) ===
          (should ? 'any' : 'never'),
      ),
    );
  });
});

describe('errorCode and classifyError on the error shapes of Node and undici', () => {
  type Row = [string, unknown, string | undefined, ErrorKind];
  const refused = withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1');
  const rows: Row[] = [
    [
      'fetch failed ← ECONNREFUSED',
      new TypeError('fetch failed', { cause: refused }),
      'ECONNREFUSED',
      'unsent',
    ],
    ['bare ECONNREFUSED', refused, 'ECONNREFUSED', 'unsent'],
    [
      'ENOTFOUND',
      new TypeError('fetch failed', { cause: withCode('ENOTFOUND') }),
      'ENOTFOUND',
      'unsent',
    ],
    [
      'EAI_AGAIN',
      new TypeError('fetch failed', { cause: withCode('EAI_AGAIN') }),
      'EAI_AGAIN',
      'unsent',
    ],
    ['EHOSTUNREACH', withCode('EHOSTUNREACH'), 'EHOSTUNREACH', 'unsent'],
    ['ENETUNREACH', withCode('ENETUNREACH'), 'ENETUNREACH', 'unsent'],
    [
      'undici ConnectTimeoutError',
      new TypeError('fetch failed', { cause: new undiciErrors.ConnectTimeoutError() }),
      'UND_ERR_CONNECT_TIMEOUT',
      'unsent',
    ],
    [
      'undici SocketError (other side closed)',
      new TypeError('fetch failed', { cause: new undiciErrors.SocketError('other side closed') }),
      'UND_ERR_SOCKET',
      'maybe-sent',
    ],
    [
      'ECONNRESET',
      new TypeError('fetch failed', { cause: withCode('ECONNRESET') }),
      'ECONNRESET',
      'maybe-sent',
    ],
    ['EPIPE', withCode('EPIPE'), 'EPIPE', 'maybe-sent'],
    ['ETIMEDOUT (phase unknown)', withCode('ETIMEDOUT'), 'ETIMEDOUT', 'maybe-sent'],
    [
      'undici HeadersTimeoutError',
      new undiciErrors.HeadersTimeoutError(),
      'UND_ERR_HEADERS_TIMEOUT',
      'maybe-sent',
    ],
    [
      'undici BodyTimeoutError',
      new undiciErrors.BodyTimeoutError(),
      'UND_ERR_BODY_TIMEOUT',
      'maybe-sent',
    ],
    [
      'nested twice',
      new TypeError('fetch failed', {
        cause: new Error('wrapper', { cause: withCode('ENOTFOUND') }),
      }),
      'ENOTFOUND',
      'unsent',
    ],
    [
      'AggregateError (happy eyeballs), code on the aggregate',
      new TypeError('fetch failed', {
        cause: Object.assign(new AggregateError([refused, withCode('ECONNREFUSED')]), {
          code: 'ECONNREFUSED',
        }),
      }),
      'ECONNREFUSED',
      'unsent',
    ],
    [
      'AggregateError, codes only on errors[]',
      new TypeError('fetch failed', {
        cause: new AggregateError([withCode('ENETUNREACH'), refused]),
      }),
      'ENETUNREACH',
      'unsent',
    ],
    [
      'AggregateError, first entry without a code',
      new AggregateError([new Error('no code'), withCode('ECONNREFUSED')]),
      'ECONNREFUSED',
      'unsent',
    ],
    [
      'AggregateError inside a cause inside an AggregateError',
      new AggregateError([new Error('x', { cause: new AggregateError([withCode('EAI_AGAIN')]) })]),
      'EAI_AGAIN',
      'unsent',
    ],
    [
      'certificate expired',
      new TypeError('fetch failed', { cause: withCode('CERT_HAS_EXPIRED') }),
      'CERT_HAS_EXPIRED',
      'fatal',
    ],
    [
      'self-signed',
      withCode('DEPTH_ZERO_SELF_SIGNED_CERT'),
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'fatal',
    ],
    [
      'self-signed in chain',
      withCode('SELF_SIGNED_CERT_IN_CHAIN'),
      'SELF_SIGNED_CERT_IN_CHAIN',
      'fatal',
    ],
    ['altname', withCode('ERR_TLS_CERT_ALTNAME_INVALID'), 'ERR_TLS_CERT_ALTNAME_INVALID', 'fatal'],
    [
      'leaf signature',
      withCode('UNABLE_TO_VERIFY_LEAF_SIGNATURE'),
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'fatal',
    ],
    ['unknown code', withCode('EWHATEVER'), 'EWHATEVER', 'maybe-sent'],
    [
      'no code at all',
      new TypeError('fetch failed', { cause: new Error('terminated') }),
      undefined,
      'maybe-sent',
    ],
    ['a numeric code is no code (DOMException style)', withCode(20), undefined, 'maybe-sent'],
    [
      'numeric code above a string code',
      Object.assign(new Error('x', { cause: withCode('ECONNREFUSED') }), { code: 20 }),
      'ECONNREFUSED',
      'unsent',
    ],
    ['a string', 'ECONNREFUSED', undefined, 'maybe-sent'],
    ['undefined', undefined, undefined, 'maybe-sent'],
    ['null', null, undefined, 'maybe-sent'],
    ['a plain object with a code', { code: 'ENOTFOUND' }, 'ENOTFOUND', 'unsent'],
    ['AbortError', new DOMException('aborted', 'AbortError'), undefined, 'maybe-sent'],
  ];

  it.each(rows.map(([name, error, code, kind]) => [name, code, kind, error] as const))(
    '%s → %s / %s',
    (_name, code, kind, error) => {
      expect(errorCode(error)).toBe(code);
      expect(classifyError(error)).toBe(kind);
    },
  );

  it('every UNSENT code is unsent and every FATAL code is fatal, wherever it sits', () => {
    for (const code of UNSENT_CODES) {
      expect(classifyError(new TypeError('fetch failed', { cause: withCode(code) }))).toBe(
        'unsent',
      );
    }
    for (const code of FATAL_CODES) {
      expect(classifyError(new TypeError('fetch failed', { cause: withCode(code) }))).toBe('fatal');
    }
    expect([...UNSENT_CODES].filter((c) => FATAL_CODES.has(c))).toEqual([]);
  });

  it('survives cycles in cause and errors[] without throwing', () => {
    const loop = new Error('loop');
    (loop as { cause?: unknown }).cause = loop;
    expect(errorCode(loop)).toBeUndefined();
    expect(classifyError(loop)).toBe('maybe-sent');

    const aggregate = new AggregateError([]);
    aggregate.errors.push(aggregate);
    expect(() => errorCode(aggregate)).not.toThrow();
    expect(classifyError(aggregate)).toBe('maybe-sent');

    const a = new AggregateError([]);
    const b = new AggregateError([a]);
    a.errors.push(b);
    expect(classifyError(a)).toBe('maybe-sent');
    a.errors.push(withCode('ECONNREFUSED'));
    expect(classifyError(a)).toBe('unsent');
  });

  it('survives hostile objects (throwing getters, revoked proxies)', () => {
    const hostile = {
      get code(): string {
        throw new Error('boom');
      },
    };
    expect(classifyError(hostile)).toBe('maybe-sent');
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(classifyError(proxy)).toBe('maybe-sent');
    expect(classifyError(new Error('x', { cause: proxy }))).toBe('maybe-sent');
  });

  it('stops at a depth bound on very deep chains', () => {
    let deep: unknown = withCode('ECONNREFUSED');
    for (let i = 0; i < 10_000; i++) deep = new Error(`level ${i}`, { cause: deep });
    expect(() => classifyError(deep)).not.toThrow();
  });

  it('property: never throws and always returns a kind on arbitrary values', () => {
    fc.assert(
      fc.property(fc.anything({ withObjectString: true, withNullPrototype: true }), (value) => {
        const kind = classifyError(value);
        return kind === 'unsent' || kind === 'maybe-sent' || kind === 'fatal';
      }),
    );
  });
});

describe('classifyError on real errors from Node fetch', () => {
  let server: RawServer | undefined;
  const open = closeAfterEach();

  it('a refused connection (closed port on 127.0.0.1) is unsent', async () => {
    const port = await closedPort();
    const error = await fetch(`http://127.0.0.1:${port}/`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect(errorCode(error)).toBe('ECONNREFUSED');
    expect(classifyError(error)).toBe('unsent');
  });

  it('a socket destroyed after the request was read is maybe-sent', async () => {
    server = await rawServer((socket) => {
      socket.once('data', () => socket.destroy());
    });
    open.add(server);
    const error = await fetch(`${server.url}/charge`, { method: 'POST', body: 'x' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TypeError);
    // The server did receive the request: retrying a POST could double it.
    expect(server.connections).toBe(1);
    expect(server.data[0]?.toString('latin1')).toMatch(/^POST \/charge HTTP\/1\.1\r\n/);
    expect(['UND_ERR_SOCKET', 'ECONNRESET']).toContain(errorCode(error));
    expect(classifyError(error)).toBe('maybe-sent');
  });

  it('an unparsable URL is fatal: no attempt can succeed', async () => {
    const error = await fetch('http://[bad/').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(errorCode(error)).toBe('ERR_INVALID_URL');
    expect(classifyError(error)).toBe('fatal');
  });
});

describe('the caller’s own mistakes (issue 10)', () => {
  const bare = () => new TypeError('refused'); // what a WHATWG fetch throws: no code
  type Row = [string, string, RequestInit, unknown, boolean];
  const rows: Row[] = [
    ['GET with a body', 'http://127.0.0.1:8080/', { body: 'x' }, bare(), true],
    ['HEAD with a body', 'http://127.0.0.1:8080/', { method: 'HEAD', body: 'x' }, bare(), true],
    [
      'a stream body is not read',
      'http://h/',
      { method: 'GET', body: new ReadableStream() },
      bare(),
      true,
    ],
    ['invalid header value', 'http://h/', { headers: { a: 'x\r\ny' } }, bare(), true],
    ['invalid header name', 'http://h/', { headers: [['a b', 'c']] }, bare(), true],
    ['credentials in the URL', 'http://u:p@h/', {}, bare(), true],
    ['user only', 'http://u@h/', {}, bare(), true],
    ['unknown scheme', 'htp://h/', {}, bare(), true],
    ['bad port 1', 'http://h:1/', {}, bare(), true],
    ['bad port 9', 'https://h:9/', {}, bare(), true],
    ['bad port 6000', 'http://h:6000/', {}, bare(), true],
    ['invalid URL', 'http://exa mple.com/', {}, bare(), true],
    ['relative URL', '/x', {}, bare(), true],
    ['invalid method', 'http://h/', { method: 'BAD METHOD' }, bare(), true],
    // Valid requests: a bare TypeError is a network error (a browser's "Failed to fetch").
    ['valid GET', 'http://h:8080/', {}, bare(), false],
    ['valid POST', 'http://h/', { method: 'POST', body: 'x' }, bare(), false],
    ['port 1 elsewhere than http', 'data:text/plain,x', {}, bare(), false],
    ['port 80 explicit', 'http://h:80/', {}, bare(), false],
    // An error with a network code is never a refusal, whatever the request looks like.
    ['bad port, but refused', 'http://h:9/', {}, withCode('ECONNREFUSED'), false],
    ['GET body, but reset', 'http://h/', { body: 'x' }, withCode('ECONNRESET'), false],
  ];
  it.each(rows)('%s', (_name, url, init, error, refused) => {
    expect(refusedByFetch(url, init, error)).toBe(refused);
  });

  it('a marked error, or one with an INVALID code anywhere on its chain, is invalid and fatal', () => {
    const marked = markInvalid(new TypeError('GET with a body'));
    expect(isInvalidRequest(marked)).toBe(true);
    expect(classifyError(marked)).toBe('fatal');
    expect(Object.keys(marked)).toEqual([]); // the mark is not enumerable
    for (const code of INVALID_CODES) {
      const e = new TypeError('wrapped', { cause: withCode(code) });
      expect(isInvalidRequest(e)).toBe(true);
      expect(classifyError(e)).toBe('fatal');
    }
    expect(isInvalidRequest(new undiciErrors.InvalidArgumentError('invalid x-a header'))).toBe(
      true,
    );
    expect(isInvalidRequest(withCode('ECONNRESET'))).toBe(false);
    expect(isInvalidRequest(bare())).toBe(false);
    expect(isInvalidRequest('a string')).toBe(false);
    expect(isInvalidRequest(markInvalid(Object.freeze(new Error('frozen'))))).toBe(false);
  });

  it('undici’s RequestRetryError (a retry layer below gave up) is fatal, not retried again', () => {
    expect(classifyError(new undiciErrors.RequestRetryError('Request failed', 503, {}))).toBe(
      'fatal',
    );
  });
});
