import { errors } from 'undici';
import { describe, expect, it } from 'vitest';
import { SsrfBlockedError } from '../../src/errors.js';
import { classifyError, isStaleConnection, STALE_CONNECTION } from '../../src/retry/classify.js';
import { markIfStale, type Probe } from '../../src/undici/stale.js';

const withCode = (code: string) => Object.assign(new Error(code), { code });

describe('undici error codes', () => {
  it.each([
    ['UND_ERR_CONNECT_TIMEOUT', 'unsent'],
    ['ECONNREFUSED', 'unsent'],
    ['ENOTFOUND', 'unsent'],
    ['EAI_AGAIN', 'unsent'],
    ['UND_ERR_SOCKET', 'maybe-sent'],
    ['ECONNRESET', 'maybe-sent'],
    ['EPIPE', 'maybe-sent'],
    ['UND_ERR_HEADERS_TIMEOUT', 'maybe-sent'],
    ['UND_ERR_BODY_TIMEOUT', 'maybe-sent'],
    ['UND_ERR_INVALID_ARG', 'fatal'],
    ['UND_ERR_NOT_SUPPORTED', 'fatal'],
    ['UND_ERR_REQ_CONTENT_LENGTH_MISMATCH', 'fatal'],
    ['UND_ERR_RES_EXCEEDED_MAX_SIZE', 'fatal'],
    ['UND_ERR_DESTROYED', 'fatal'],
    ['UND_ERR_CLOSED', 'fatal'],
    ['ERR_TOO_MANY_REDIRECTS', 'fatal'],
  ])('%s is %s', (code, kind) => {
    expect(classifyError(withCode(code))).toBe(kind);
    // As undici's fetch reports it: a TypeError whose cause carries the code.
    expect(classifyError(new TypeError('fetch failed', { cause: withCode(code) }))).toBe(kind);
  });

  it("undici's own error classes carry the codes", () => {
    expect(classifyError(new errors.ConnectTimeoutError())).toBe('unsent');
    expect(classifyError(new errors.SocketError('other side closed'))).toBe('maybe-sent');
    expect(classifyError(new errors.HeadersTimeoutError())).toBe('maybe-sent');
    expect(classifyError(new errors.ClientDestroyedError())).toBe('fatal');
  });

  it('an SSRF refusal is never retried', () => {
    expect(classifyError(new SsrfBlockedError('refused'))).toBe('fatal');
  });
});

describe('the stale-connection mark', () => {
  const socket = (bytesRead: number, encrypted = false) => ({ bytesRead, encrypted });
  const probe = (over: Partial<Probe>): Probe => ({
    socket: socket(100),
    reused: true,
    bytesRead: 100,
    ...over,
  });

  it('marks a closed-connection error on a reused socket with no byte read since the request', () => {
    const error = withCode('UND_ERR_SOCKET');
    markIfStale(error, probe({}));
    expect(isStaleConnection(error)).toBe(true);
    // Found along the cause chain, as the fetch adapter sees it.
    expect(isStaleConnection(new TypeError('fetch failed', { cause: error }))).toBe(true);
    // Not enumerable: logs and JSON do not show it.
    expect(Object.keys(error)).not.toContain(String(STALE_CONNECTION));
  });

  it.each<[string, Partial<Probe>, string]>([
    ['a fresh connection', { reused: false }, 'ECONNRESET'],
    ['bytes read after the request', { socket: socket(150) }, 'ECONNRESET'],
    ['an unknown socket', { socket: undefined }, 'UND_ERR_SOCKET'],
    ['a timeout, not a close', {}, 'UND_ERR_HEADERS_TIMEOUT'],
    ['a refused connection', {}, 'ECONNREFUSED'],
  ])('leaves %s unmarked', (_name, over, code) => {
    const error = withCode(code);
    markIfStale(error, probe(over));
    expect(isStaleConnection(error)).toBe(false);
  });

  it('on TLS, where alerts count as bytes read, the response not having started is the test', () => {
    const error = withCode('EPIPE');
    markIfStale(error, probe({ socket: socket(180, true) }));
    expect(isStaleConnection(error)).toBe(true);
  });

  it('leaves a frozen error alone without throwing', () => {
    const error = Object.freeze(withCode('ECONNRESET'));
    expect(() => markIfStale(error, probe({}))).not.toThrow();
    expect(isStaleConnection(error)).toBe(false);
  });
});
