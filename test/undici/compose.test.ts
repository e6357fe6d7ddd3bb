/**
 * Issue 10, items 1 and 2 for the interceptor: the caller's mistakes are
 * thrown as undici made them and never open the breaker; a handler after
 * `retryInterceptor` that throws in `onResponseData`/`onResponseEnd` (undici's
 * own `interceptors.retry()` does so by design) gets its error back through
 * `onResponseError`, and nothing becomes an unhandled rejection.
 */
import { Agent, type Dispatcher, errors, interceptors, request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isStaunchError } from '../../src/errors.js';
import { constantBackoff } from '../../src/retry/backoff.js';
import { retryInterceptor } from '../../src/undici/index.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from './support.js';

const open = closeAfterEach();

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  return open.add(await httpServer(handler));
}

/** Unhandled rejections seen while a test runs. */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => {
  unhandled.push(reason);
};
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
});

/** Lets pending microtasks and immediates run, so an unhandled rejection would be reported. */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 20));

const staunch = () =>
  retryInterceptor({
    retry: { attempts: 3, backoff: constantBackoff(0) },
    breaker: false,
    budget: false,
  });
const undiciRetry = () =>
  interceptors.retry({ maxRetries: 2, minTimeout: 1, maxTimeout: 1, timeoutFactor: 1 });

function busy(): Promise<TestServer> {
  return serve((_req, res) => {
    res.writeHead(503, { 'content-type': 'text/plain' });
    res.end('busy');
  });
}

describe('retryInterceptor composed with undici’s interceptors.retry()', () => {
  it('staunch inside, undici’s retry outside: settles with undici’s error, layers multiply', async () => {
    const server = await busy();
    const agent = open.add(new Agent().compose(staunch(), undiciRetry()));
    const err = await request(server.url, { dispatcher: agent }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(errors.RequestRetryError);
    expect(err).toMatchObject({ code: 'UND_ERR_REQ_RETRY', statusCode: 503 });
    // 3 staunch attempts for each of undici's 1 + 2 tries: the layers multiply.
    expect(server.received).toHaveLength(9);
    await settle();
    expect(unhandled).toEqual([]);
  });

  it('undici’s retry inside, staunch outside: undici’s error as is, no second layer of retries', async () => {
    const server = await busy();
    const agent = open.add(new Agent().compose(undiciRetry(), staunch()));
    const err = await request(server.url, { dispatcher: agent }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(errors.RequestRetryError);
    expect(isStaunchError(err)).toBe(false);
    expect(err).toMatchObject({ code: 'UND_ERR_REQ_RETRY', statusCode: 503 });
    // undici's layer already retried the status: staunch does not multiply it.
    expect(server.received).toHaveLength(3);
    await settle();
    expect(unhandled).toEqual([]);
  });

  it('ten concurrent requests in each order all settle', async () => {
    const server = await busy();
    for (const agent of [
      open.add(new Agent().compose(staunch(), undiciRetry())),
      open.add(new Agent().compose(undiciRetry(), staunch())),
    ]) {
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, () => request(server.url, { dispatcher: agent })),
      );
      for (const r of results) {
        expect(r.status).toBe('rejected');
        expect((r as PromiseRejectedResult).reason).toMatchObject({ statusCode: 503 });
      }
    }
    await settle();
    expect(unhandled).toEqual([]);
  });
});

/** A handler that throws where undici's RetryHandler does, or anywhere the test says. */
function throwingInterceptor(
  where: 'start' | 'data' | 'end',
): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) =>
    dispatch(opts, {
      onRequestStart: (c, ctx) => handler.onRequestStart?.(c, ctx),
      onResponseStart: (c, status, headers, message) => {
        if (where === 'start') throw new Error(`thrown in ${where}`);
        handler.onResponseStart?.(c, status, headers, message);
      },
      onResponseData: (c, chunk) => {
        if (where === 'data') throw new Error(`thrown in ${where}`);
        handler.onResponseData?.(c, chunk);
      },
      onResponseEnd: (c, trailers) => {
        if (where === 'end') throw new Error(`thrown in ${where}`);
        handler.onResponseEnd?.(c, trailers);
      },
      onResponseError: (c, error) => handler.onResponseError?.(c, error),
    });
}

describe('a handler after retryInterceptor that throws', () => {
  for (const where of ['start', 'data', 'end'] as const) {
    it(`in onResponse${where[0]!.toUpperCase()}${where.slice(1)}: the request rejects with that error`, async () => {
      const server = await serve((_req, res) => res.end('body'));
      const agent = open.add(new Agent().compose(staunch(), throwingInterceptor(where)));
      // undici.request resolves at the headers: a later error comes through the body.
      const err = await request(server.url, { dispatcher: agent })
        .then((res) => res.body.text())
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toBe(`thrown in ${where}`);
      // The connection is usable afterwards: the next request goes through on a plain path.
      const next = await request(server.url, {
        dispatcher: open.add(new Agent().compose(staunch())),
      });
      expect(await next.body.text()).toBe('body');
      await settle();
      expect(unhandled).toEqual([]);
    });
  }
});

describe('the caller’s mistakes through the interceptor', () => {
  it('25 invalid headers: thrown as undici’s own error, the breaker stays closed', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const agent = open.add(
      new Agent().compose(retryInterceptor({ breaker: { consecutiveFailures: 1 } })),
    );
    for (let i = 0; i < 25; i++) {
      const err = await request(server.url, {
        dispatcher: agent,
        headers: { 'x-trace': 'a\nb' },
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(errors.InvalidArgumentError);
      expect(isStaunchError(err)).toBe(false);
      expect((err as Error).message).not.toMatch(/may have been sent/);
    }
    expect(server.received).toHaveLength(0);
    const res = await request(`${server.url}/valid`, { dispatcher: agent });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok');
    expect(server.received.map((r) => r.path)).toEqual(['/valid']);
  });
});
