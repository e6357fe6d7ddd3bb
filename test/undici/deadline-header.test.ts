/** `deadlineHeader` on staunch/undici: createAgent, retryInterceptor and its createFetch. */
import { Agent, request } from 'undici';
import { describe, expect, test } from 'vitest';
import { constantBackoff } from '../../src/retry/backoff.js';
import { createAgent, createFetch, retryInterceptor } from '../../src/undici/index.js';
import { fakeClock, until } from '../helpers/clock.js';
import { scriptServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from './support.js';

const open = closeAfterEach();

/** 503, then 200. */
async function flaky(): Promise<TestServer> {
  return open.add(await scriptServer({ script: [503], after: { body: 'ok' } }));
}

const sent = (server: TestServer, name: string) =>
  server.received.map((r) => r.headers[name.toLowerCase()]);

/** Runs `call` to its end, moving the clock over the one backoff of 400 ms. */
async function overBackoff<T>(clock: ReturnType<typeof fakeClock>, call: Promise<T>): Promise<T> {
  await until(() => clock.remaining().includes(400));
  await clock.advance(400);
  return call;
}

const retry = { attempts: 2, backoff: constantBackoff(400) };

describe('deadlineHeader on staunch/undici', () => {
  test('createAgent: attempt 1 (sent by the adapter itself) and the retry, in grpc-timeout form', async () => {
    const server = await flaky();
    const clock = fakeClock();
    const dispatcher = open.add(
      createAgent({
        clock,
        retry,
        timeout: { total: 5_000 },
        deadlineHeader: { name: 'grpc-timeout', format: 'grpc-timeout', margin: 50 },
      }),
    );
    const res = await overBackoff(clock, request(server.url, { dispatcher }));
    expect(res.statusCode).toBe(200);
    await res.body.text();
    expect(sent(server, 'grpc-timeout')).toEqual(['4950m', '4550m']);
  });

  test('retryInterceptor: per-request override, and the caller’s own header kept', async () => {
    const server = await flaky();
    const clock = fakeClock();
    const base = open.add(new Agent());
    const dispatcher = base.compose(
      retryInterceptor({ clock, retry, timeout: { total: 9_000 }, deadlineHeader: 'X-Timeout-Ms' }),
    );
    const res = await overBackoff(
      clock,
      request(server.url, {
        dispatcher,
        staunch: { timeout: { attempt: 1_000 }, deadlineHeader: 'X-Left' },
      } as Parameters<typeof request>[1]),
    );
    await res.body.text();
    expect(sent(server, 'X-Left')).toEqual(['1000', '1000']);
    expect(sent(server, 'X-Timeout-Ms')).toEqual([undefined, undefined]);
    const own = await request(server.url, {
      dispatcher,
      headers: { 'x-timeout-ms': '77' },
    });
    await own.body.text();
    expect(sent(server, 'X-Timeout-Ms')[2]).toBe('77');
  });

  test('createFetch of staunch/undici: ms, the retry’s value smaller by the backoff', async () => {
    const server = await flaky();
    const clock = fakeClock();
    const fetch = createFetch({
      clock,
      retry,
      timeout: { total: 3_000 },
      deadlineHeader: 'X-Timeout-Ms',
    });
    const res = await overBackoff(clock, fetch(server.url));
    await res.text();
    expect(sent(server, 'X-Timeout-Ms')).toEqual(['3000', '2600']);
  });

  test('a bad value names the option', () => {
    expect(() => createAgent({ deadlineHeader: { name: 'x y' } })).toThrow(
      new TypeError('deadlineHeader.name must be a header name, got "x y"'),
    );
  });
});
