/**
 * staunch/testing/undici: the fault Dispatcher under undici's own callers
 * (request, fetch) and under staunch's retry interceptor; 'pass' goes to a
 * real server that counts what reached it.
 */
import { Agent, request, fetch as undiciFetch } from 'undici';
import { describe, expect, test } from 'vitest';
import { testClock } from '../../src/testing/index.js';
import { faultServer } from '../../src/testing/server.js';
import { FaultDispatcher, faultDispatcher } from '../../src/testing/undici.js';
import { retryInterceptor } from '../../src/undici/index.js';
import { closeAfterEach } from '../helpers/teardown.js';

const open = closeAfterEach();

describe('faultDispatcher', () => {
  test("under staunch's interceptor: a 503 and a reset are retried, the third attempt passes to the server", async () => {
    const server = open.add(await faultServer({ handler: (_req, res) => res.end('done') }));
    const agent = open.add(new Agent());
    const clock = testClock();
    // Backoff runs at once until the third attempt, the real one: its deadline must not fire.
    open.defer(clock.autoAdvance(() => faults.seen.attempts < 3));
    const faults = faultDispatcher({ script: [503, 'reset'], dispatcher: agent });
    const dispatcher = faults.compose(retryInterceptor({ clock, random: () => 0.5 }));
    const res = await request(`${server.url}/orders/1`, { dispatcher });
    expect([res.statusCode, await res.body.text()]).toEqual([200, 'done']);
    expect(faults.seen.requests.map((r) => r.fault)).toEqual([503, 'reset', 'pass']);
    expect(faults.seen.urls).toEqual(Array(3).fill(`${server.url}/orders/1`));
    expect(server.seen.attempts).toBe(1);
  });

  test('undici.request reads a scripted response: status, headers and body', async () => {
    const faults = faultDispatcher({
      script: [{ status: 429, retryAfter: 2, headers: { 'X-Id': 'a' }, body: 'slow down' }],
    });
    const res = await request('http://api.test/x', {
      dispatcher: faults,
      method: 'PUT',
      body: 'v=1',
    });
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('2');
    expect(res.headers['x-id']).toBe('a');
    expect(await res.body.text()).toBe('slow down');
    expect(faults.seen.bodies).toEqual(['v=1']);
    expect(faults.seen.methods).toEqual(['PUT']);
  });

  test("undici's fetch: refuse is a 'fetch failed' with ECONNREFUSED, truncate fails the body", async () => {
    const faults = faultDispatcher({ script: ['refuse', { body: 'abcdef', truncate: 2 }] });
    const refused = await undiciFetch('http://api.test/', { dispatcher: faults }).catch((e) => e);
    expect(refused).toBeInstanceOf(TypeError);
    expect((refused as TypeError).cause).toMatchObject({ code: 'ECONNREFUSED' });
    const res = await undiciFetch('http://api.test/', { dispatcher: faults });
    expect(res.headers.get('content-length')).toBe('6');
    await expect(res.text()).rejects.toThrow();
    expect(faults.seen.attempts).toBe(2);
  });

  test("stall: nothing comes until the caller's signal aborts", async () => {
    const faults = faultDispatcher({ script: ['stall'] });
    const abort = new AbortController();
    const pending = request('http://api.test/', { dispatcher: faults, signal: abort.signal });
    let settled = false;
    void pending.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    abort.abort(new Error('gave up'));
    await expect(pending).rejects.toThrow();
    expect(faults.seen.count('stall')).toBe(1);
  });

  test('a slow first byte and a dripping body run on the clock', async () => {
    const clock = testClock();
    open.defer(clock.autoAdvance());
    const faults = faultDispatcher({
      script: [{ body: 'abc', delay: 400, drip: 10 }],
      clock,
    });
    const res = await request('http://api.test/', { dispatcher: faults });
    expect(await res.body.text()).toBe('abc');
    expect(clock.sleeps).toEqual([400, 10, 10]);
  });

  test('bad input is a TypeError naming the option', () => {
    expect(() => faultDispatcher({ dispatcher: {} as never })).toThrow(
      'faultDispatcher options.dispatcher must be a Dispatcher, got an object',
    );
    expect(() => faultDispatcher({ script: ['nope' as never] })).toThrow(TypeError);
    expect(faultDispatcher()).toBeInstanceOf(FaultDispatcher);
  });
});
