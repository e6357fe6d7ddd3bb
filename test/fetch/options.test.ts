/** Bad options fail loudly when the client is built; events are typed and safe. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  type AttemptEvent,
  createFetch,
  exponentialBackoff,
  type GiveUpEvent,
} from '../../src/index.js';
import { client } from '../helpers/harness.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

describe('createFetch rejects bad options with an error naming the option and the value', () => {
  test.each([
    [{ retry: 0 }, RangeError, /retry must be an integer >= 1 and <= 100, got 0/],
    [{ retry: { attempts: 2.5 } }, RangeError, /retry\.attempts .* got 2\.5/],
    [{ retry: { attemps: 3 } }, TypeError, /retry\.attemps is not an option/],
    [{ retry: { statuses: [503, 99] } }, RangeError, /retry\.statuses\[1\] .* got 99/],
    [
      { retry: { statuses: [200] } },
      RangeError,
      /retry\.statuses\[0\] must be an integer >= 400 and <= 599, got 200/,
    ],
    [{ retry: { statuses: [503, 399] } }, RangeError, /retry\.statuses\[1\] .* got 399/],
    [{ retry: { methods: 'GET' } }, TypeError, /retry\.methods must be an array .* got "GET"/],
    [{ retry: { backoff: 250 } }, TypeError, /retry\.backoff must be a function, got 250/],
    [{ retry: { maxRetryAfter: -1 } }, RangeError, /retry\.maxRetryAfter .* got -1/],
    [{ timeout: { attempt: 0 } }, RangeError, /timeout\.attempt must be a number > 0 .* got 0/],
    [{ timeout: { total: Number.NaN } }, TypeError, /timeout\.total must be a number, got NaN/],
    [{ timeout: { total: 2 ** 40 } }, RangeError, /timeout\.total .* got 1099511627776/],
    [{ timeout: 'soon' }, TypeError, /timeout must be an object, got "soon"/],
    [{ idempotency: { header: 'bad header' } }, TypeError, /idempotency\.header .* "bad header"/],
    [{ idempotency: { auto: 'yes' } }, TypeError, /idempotency\.auto must be a boolean, got "yes"/],
    [{ fetch: 'nope' }, TypeError, /fetch must be a function, got "nope"/],
    [{ on: { retyr: () => {} } }, TypeError, /on\.retyr is not an option/],
    [{ on: { retry: 1 } }, TypeError, /on\.retry must be a function, got 1/],
    [{ clock: {} }, TypeError, /clock must have now\(\) and sleep/],
    [{ random: 4 }, TypeError, /random must be a function/],
    [{ retries: 3 }, TypeError, /createFetch options\.retries is not an option/],
  ])('%o', (options, type, message) => {
    expect(() => createFetch(options as never)).toThrow(type);
    expect(() => createFetch(options as never)).toThrow(message);
  });

  test('exponentialBackoff validates too', () => {
    expect(() => exponentialBackoff({ base: 0 })).toThrow(/backoff\.base .* got 0/);
    expect(() => exponentialBackoff({ base: 100, cap: 50 })).toThrow(/backoff\.cap .* got 50/);
    expect(() => exponentialBackoff({ jitter: 'some' as never })).toThrow(
      /backoff\.jitter .*"some"/,
    );
  });

  test('a bad per-request field rejects that request with a TypeError, before any attempt', async () => {
    let calls = 0;
    const fetch = createFetch({
      fetch: async () => {
        calls++;
        return new Response('');
      },
    });
    await expect(
      fetch('http://127.0.0.1/', { staunch: { retry: { attempts: -1 } } }),
    ).rejects.toThrow(/init\.staunch\.retry\.attempts .* got -1/);
    await expect(fetch('http://127.0.0.1/', { staunch: { retyr: 2 } as never })).rejects.toThrow(
      /init\.staunch\.retyr is not an option/,
    );
    await expect(
      fetch('http://127.0.0.1/', { staunch: { idempotencyKey: 7 } as never }),
    ).rejects.toThrow(/init\.staunch\.idempotencyKey must be a non-empty string, got 7/);
    await expect(fetch('http://127.0.0.1/', { idempotencyKey: '' })).rejects.toThrow(TypeError);
    await expect(
      fetch('http://127.0.0.1/', { staunch: { retry: { statuses: [304] } } }),
    ).rejects.toThrow(/init\.staunch\.retry\.statuses\[0\] .* got 304/);
    expect(calls).toBe(0);
  });

  test('a signal that is not an AbortSignal: a TypeError naming init.signal and the value', async () => {
    let calls = 0;
    const fetch = createFetch({
      fetch: async () => {
        calls++;
        return new Response('');
      },
    });
    for (const [signal, shown] of [
      ['abort', '"abort"'],
      [{ aborted: false }, 'an object'],
      [true, 'true'],
    ] as const) {
      const err = await fetch('http://127.0.0.1/', { signal: signal as never }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(TypeError);
      expect((err as Error).message).toBe(`init.signal must be an AbortSignal, got ${shown}`);
    }
    expect(calls).toBe(0);
    // None (null, as fetch allows) and a real one still go through.
    expect((await fetch('http://127.0.0.1/', { signal: null })).status).toBe(200);
    expect(
      (await fetch('http://127.0.0.1/', { signal: new AbortController().signal })).status,
    ).toBe(200);
    expect(calls).toBe(2);
  });
});

describe('events', () => {
  let server: TestServer;
  const open = closeAfterEach();

  test('attempt, retry and giveUp carry typed, redacted payloads; a throwing listener breaks nothing', async () => {
    server = await httpServer((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    open.add(server);
    const seen: string[] = [];
    const attempts: AttemptEvent[] = [];
    const c = client({
      on: {
        attempt: (e) => {
          attempts.push(e);
          throw new Error('listener bug');
        },
        retry: (e) => {
          seen.push(`retry ${e.attempt} ${e.reason} ${e.status} ${e.delay}`);
          throw new Error('listener bug');
        },
        giveUp: (e) => {
          seen.push(`giveUp ${e.reason} ${e.attempts} ${e.method} ${e.url}`);
          throw new Error('listener bug');
        },
      },
    });
    open.defer(c.stop);
    const res = await c.fetch(`${server.url}/a?token=abc123&x=1`);
    expect(res.status).toBe(503);
    expect(seen).toEqual([
      'retry 1 status 503 500',
      'retry 2 status 503 875',
      `giveUp attempts 3 GET ${server.url}/a?token=***&x=1`,
    ]);
    expect(attempts.map((a) => [a.attempt, a.status, a.method])).toEqual([
      [1, 503, 'GET'],
      [2, 503, 'GET'],
      [3, 503, 'GET'],
    ]);
    for (const a of attempts) expect(a.duration).toBeGreaterThanOrEqual(0);
  });
});

test('the core entry imports no node: module and no package', () => {
  // ipaddr.js serves the SSRF guard of staunch/undici only; nothing under the core imports it.
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as Record<string, unknown>;
  expect(Object.keys(pkg.dependencies ?? {})).toEqual(['ipaddr.js']);
  const subpaths = new Set(['undici', 'redis', 'otel', 'sse', 'lab', 'cli', 'testing']);
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (!subpaths.has(name)) walk(path);
      } else if (path.endsWith('.ts')) files.push(path);
    }
  };
  walk('src');
  expect(files.length).toBeGreaterThan(5);
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    expect(text, file).not.toMatch(/from ['"]node:|require\(|from ['"](?!\.)/);
  }
});

describe('giveUp carries what a deferred replay needs', () => {
  let server: TestServer;
  const open = closeAfterEach();

  test('a keyed POST: method, URL, body, key; no secret header; not printed with the event', async () => {
    server = await httpServer((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    open.add(server);
    const events: GiveUpEvent[] = [];
    const c = client({ on: { giveUp: (e) => events.push(e) } });
    open.defer(c.stop);
    await c.fetch(`${server.url}/orders`, {
      method: 'POST',
      body: '{"sku":42}',
      headers: { authorization: 'Bearer SENTINEL-replay', 'content-type': 'application/json' },
      idempotencyKey: 'order-42',
    });
    expect(events).toHaveLength(1);
    const { replay } = events[0]!;
    expect(replay).toEqual({
      method: 'POST',
      url: `${server.url}/orders`,
      headers: [
        ['content-type', 'application/json'],
        ['idempotency-key', 'order-42'],
      ],
      body: '{"sku":42}',
      bodyEncoding: 'utf8',
      idempotencyKey: 'order-42',
      // Named, so that the replayer puts its own credentials back.
      removed: { headers: ['authorization'] },
    });
    expect(JSON.stringify(events[0])).not.toContain('replay');
    expect(JSON.stringify(replay)).not.toContain('SENTINEL');
  });

  test('bytes travel as base64; a non-replayable POST carries none; so does a deadline give-up', async () => {
    server = await httpServer((_req, res) => {
      res.statusCode = 500;
      res.end();
    });
    open.add(server);
    const events: GiveUpEvent[] = [];
    const c = client({ on: { giveUp: (e) => events.push(e) } });
    open.defer(c.stop);
    await c.fetch(server.url, { method: 'PUT', body: new Uint8Array([1, 2, 255]) });
    await c.fetch(server.url, { method: 'POST', body: 'x' });
    expect(events[0]!.replay).toMatchObject({ body: 'AQL/', bodyEncoding: 'base64' });
    expect(events[1]).toMatchObject({ reason: 'not-replayable' });
    expect(events[1]!.replay).toBeUndefined();
    // 100 ms of total time cannot hold the 125 ms backoff: given up on the deadline.
    expect((await c.fetch(server.url, { staunch: { timeout: { total: 100 } } })).status).toBe(500);
    expect(events.at(-1)).toMatchObject({ reason: 'deadline' });
    expect(events.at(-1)!.replay).toMatchObject({ method: 'GET' });
  });
});

describe('the end event: once per logical request, after every other event of it', () => {
  let server: TestServer | undefined;
  const open = closeAfterEach();

  test('a response after a retry, a refusal without retry, and a network error', async () => {
    server = await httpServer((_req, res, index) => {
      res.statusCode = index === 0 ? 503 : index === 1 ? 200 : 404;
      res.end();
    });
    open.add(server);
    const order: string[] = [];
    const ends: unknown[] = [];
    const c = client({
      on: {
        retry: () => order.push('retry'),
        attempt: () => order.push('attempt'),
        end: (e) => {
          order.push('end');
          ends.push(e);
        },
      },
    });
    open.defer(c.stop);
    expect((await c.fetch(`${server.url}/a?api_key=SENTINEL`)).status).toBe(200);
    expect(order).toEqual(['attempt', 'retry', 'attempt', 'end']);
    expect((await c.fetch(`${server.url}/b`)).status).toBe(404);
    const port = server.port;
    await server.close();
    server = undefined;
    await expect(c.fetch(`http://127.0.0.1:${port}/c`)).rejects.toThrow();
    expect(ends).toHaveLength(3);
    expect(ends[0]).toMatchObject({ method: 'GET', attempts: 2, status: 200 });
    expect(JSON.stringify(ends[0])).not.toContain('SENTINEL');
    expect(ends[1]).toMatchObject({ attempts: 1, status: 404 });
    expect(ends[2]).toMatchObject({ code: expect.any(String) });
    expect((ends[2] as { attempts: number }).attempts).toBeGreaterThanOrEqual(1);
  });
});
