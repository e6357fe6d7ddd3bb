/**
 * staunch/testing/server: the script on real sockets. Every test counts what
 * the server received; time is a test clock, advanced by the test.
 */
import { describe, expect, test } from 'vitest';
import { createFetch, NetworkError } from '../../src/index.js';
import { faultFetch, testClock } from '../../src/testing/index.js';
import { faultServer } from '../../src/testing/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const open = closeAfterEach();

/** A staunch fetch over the global fetch, whose backoff runs at once whenever no attempt is in flight. */
function client(timeout?: { attempt: number }) {
  const clock = testClock();
  const tracked = faultFetch({ fetch: globalThis.fetch });
  open.defer(clock.autoAdvance(() => tracked.inFlight === 0));
  const fetch = createFetch({
    random: () => 0.5,
    fetch: tracked,
    clock,
    ...(timeout ? { timeout } : {}),
  });
  return { clock, fetch };
}

describe('faultServer', () => {
  test('reset destroys the socket after the request: a GET is retried on a new connection', async () => {
    const server = open.add(await faultServer({ script: ['reset', { status: 200, body: 'ok' }] }));
    const { fetch } = client();
    const res = await fetch(`${server.url}/items?id=1`);
    expect(await res.text()).toBe('ok');
    expect(server.seen.attempts).toBe(2);
    expect(server.seen.urls).toEqual(Array(2).fill(`${server.url}/items?id=1`));
    expect(server.seen.requests.map((r) => r.fault)).toEqual(['reset', 200]);
    expect(server.connections).toBe(2);
  });

  test('a POST without a key is not retried after a reset; the server saw it once, body included', async () => {
    const server = open.add(await faultServer({ script: ['reset'] }));
    const { fetch } = client();
    const error = await fetch(server.url, { method: 'POST', body: 'charge' }).catch((e) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(server.seen.bodies).toEqual(['charge']);
  });

  test('429 with Retry-After, then 503, then pass: the same key on all three', async () => {
    const server = open.add(
      await faultServer({
        script: [{ status: 429, retryAfter: 1 }, 503],
        handler: (_req, res) => res.end('created'),
      }),
    );
    const { fetch } = client();
    const res = await fetch(server.url, { method: 'POST', body: 'x', idempotencyKey: 'k-7' });
    expect([res.status, await res.text()]).toEqual([200, 'created']);
    expect(server.seen.idempotencyKeys).toEqual(['k-7', 'k-7', 'k-7']);
    expect(server.seen.count(429) + server.seen.count(503) + server.seen.count('pass')).toBe(3);
  });

  test('stall sends no byte: the attempt deadline ends it when the clock reaches it', async () => {
    const server = open.add(await faultServer({ script: ['stall'] }));
    const { clock, fetch } = client({ attempt: 2000 });
    const pending = fetch(server.url, { staunch: { retry: false } }).catch((e) => e);
    await server.arrived(1);
    await clock.advance(2000);
    expect((await pending).name).toBe('TimeoutError');
    expect(server.seen.count('stall')).toBe(1);
  });

  test('truncate: the head says 10 bytes, 4 arrive, then the connection ends', async () => {
    const server = open.add(await faultServer({ script: [{ body: '0123456789', truncate: 4 }] }));
    const res = await fetch(server.url);
    expect(res.headers.get('content-length')).toBe('10');
    await expect(res.text()).rejects.toThrow();
    expect(server.seen.count(200)).toBe(1);
  });

  test('drip and delay run on the clock: the head after 300 ms, then a chunk every 50 ms', async () => {
    const clock = testClock();
    const server = open.add(
      await faultServer({ script: [{ body: 'abcd', delay: 300, drip: 50, chunk: 1 }], clock }),
    );
    let head = false;
    const pending = fetch(server.url).then((res) => {
      head = true;
      return res.text();
    });
    await server.arrived(1);
    await clock.advance(299);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(head).toBe(false);
    open.defer(clock.autoAdvance());
    expect(await pending).toBe('abcd');
    expect(clock.sleeps).toEqual([300, 50, 50, 50]);
  });

  test('refuse destroys the connection at the head: nothing of the body is recorded', async () => {
    const server = open.add(await faultServer({ script: ['refuse'] }));
    await expect(fetch(server.url, { method: 'POST', body: 'x' })).rejects.toThrow();
    expect(server.seen.requests.map((r) => [r.fault, r.bytes.length])).toEqual([['refuse', 0]]);
  });

  test('bad input is a TypeError naming the option', async () => {
    await expect(faultServer({ handler: 'nope' as never })).rejects.toThrow(
      'faultServer options.handler must be a function, got "nope"',
    );
    await expect(faultServer({ script: ['boom' as never] })).rejects.toThrow(TypeError);
  });
});
