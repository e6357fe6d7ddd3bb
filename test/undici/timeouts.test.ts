import type { LookupFunction } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { NetworkError } from '../../src/errors.js';
import { steadyArmed, steadyHoldsOpen } from '../../src/internal/deadlines.js';
import { constantBackoff } from '../../src/retry/backoff.js';
import { errorCode } from '../../src/retry/classify.js';
import { createAgent, createFetch } from '../../src/undici/index.js';
import { fakeClock } from '../helpers/clock.js';
import { type RawServer, rawServer } from '../helpers/server.js';
import { closeAfterEach, rejection, tracker } from './support.js';

// undici's own timers (connect, headers, body) run in real time: small real
// timeouts, and only generous bounds on how long anything took.
const GENEROUS = 5_000;

/** Closed after each test. */
const open = closeAfterEach();

async function raw(onConnection: Parameters<typeof rawServer>[0]): Promise<RawServer> {
  return open.add(await rawServer(onConnection));
}

function agent(options: Parameters<typeof createAgent>[0]) {
  return open.add(createAgent(options));
}

describe('per-phase timeouts', () => {
  it('connect: a lookup that never answers fails with UND_ERR_CONNECT_TIMEOUT, retried for any method', async () => {
    const calls: string[] = [];
    const never: LookupFunction = (hostname) => {
      calls.push(hostname);
    };
    const t = tracker();
    const dispatcher = agent({
      lookup: never,
      timeouts: { connect: 100 },
      retry: { attempts: 2, backoff: constantBackoff(0) },
      on: t.on,
    });
    const started = Date.now();
    const error = await rejection(
      request('http://never-answers.test/charge', { method: 'POST', body: 'x', dispatcher }),
    );
    expect(Date.now() - started).toBeLessThan(GENEROUS);
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).maybeSent).toBe(false);
    expect(errorCode(error)).toBe('STAUNCH_NETWORK');
    expect(errorCode((error as NetworkError).cause)).toBe('UND_ERR_CONNECT_TIMEOUT');
    // Nothing was sent: even a POST without a key is sent again.
    expect(calls).toEqual(['never-answers.test', 'never-answers.test']);
    expect(t.retries.map((e) => e.reason)).toEqual(['unsent']);
  });

  it('headers: a server that never answers fails with UND_ERR_HEADERS_TIMEOUT, retried only if replayable', async () => {
    const server = await raw(() => {});
    const dispatcher = agent({
      timeouts: { headers: 150 },
      retry: { attempts: 2, backoff: constantBackoff(0) },
    });
    const started = Date.now();
    const get = await rejection(request(server.url, { dispatcher }));
    expect(errorCode((get as NetworkError).cause)).toBe('UND_ERR_HEADERS_TIMEOUT');
    expect((get as NetworkError).maybeSent).toBe(true);
    expect(server.connections).toBe(2);
    const post = await rejection(request(server.url, { method: 'POST', body: 'x', dispatcher }));
    expect(errorCode((post as NetworkError).cause)).toBe('UND_ERR_HEADERS_TIMEOUT');
    expect((post as NetworkError).maybeSent).toBe(true);
    expect(String(post)).toContain('may have been sent');
    expect(server.connections).toBe(3);
    expect(Date.now() - started).toBeLessThan(GENEROUS);
  });

  it('body: a body that stalls after the headers fails while the caller reads, and is not retried', async () => {
    const server = await raw((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfirst bytes');
      });
    });
    const dispatcher = agent({ timeouts: { body: 150 }, retry: { attempts: 3 } });
    const res = await request(server.url, { dispatcher });
    expect(res.statusCode).toBe(200);
    const started = Date.now();
    const error = await rejection(res.body.text());
    expect(errorCode(error)).toBe('UND_ERR_BODY_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(GENEROUS);
    expect(server.connections).toBe(1);
  });

  it('body: the same through createFetch', async () => {
    const server = await raw((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfirst bytes');
      });
    });
    const fetch = createFetch({ timeouts: { body: 150 } });
    open.add(fetch.dispatcher);
    const res = await fetch(server.url);
    expect(res.status).toBe(200);
    const error = await rejection(res.text());
    expect(errorCode(error)).toBe('UND_ERR_BODY_TIMEOUT');
    expect(server.connections).toBe(1);
  });

  it('a peer that accepts and closes at once settles quickly (backoff on the injected clock)', async () => {
    const server = await raw((socket) => socket.destroy());
    const clock = fakeClock();
    const t = tracker();
    const stop = clock.autoAdvance(t.idle);
    const dispatcher = agent({ clock, on: t.on, retry: { attempts: 3 } });
    const started = Date.now();
    try {
      const get = await rejection(request(server.url, { dispatcher }));
      expect(get).toBeInstanceOf(NetworkError);
      expect((get as NetworkError).maybeSent).toBe(true);
      expect(server.connections).toBe(3);
      // A fresh connection each time: a plain maybe-sent failure, with a backoff wait.
      expect(t.retries.map((e) => e.reason)).toEqual(['maybe-sent', 'maybe-sent']);
      const post = await rejection(request(server.url, { method: 'POST', body: 'x', dispatcher }));
      expect((post as NetworkError).maybeSent).toBe(true);
      expect(server.connections).toBe(4);
    } finally {
      stop();
    }
    expect(Date.now() - started).toBeLessThan(GENEROUS);
  });
});

/** Timers that hold this process open (Node lists one `Timeout` for each). */
function refedTimers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}

/** Ref'd timers but the steady deadline list's, which an earlier test may have left for a tick. */
function otherTimers(): number {
  return refedTimers() - (steadyArmed() ? 1 : 0);
}

/** Resolves once `server` has received `n` requests' bytes. */
async function received(server: RawServer, n: number): Promise<void> {
  while (server.data.length < n) await new Promise((resolve) => setImmediate(resolve));
}

describe('attempt deadlines hold the process open while an attempt is under way', () => {
  // The undici adapters' on the steady list (src/internal/deadlines.ts): one timer while attempts
  // come and go, ref'd as any deadline's.
  const LONG = { attempt: 60_000, total: 120_000 };

  it('createAgent: attempt 1 and a retry after a reset, on the system clock', async () => {
    // The first connection is reset once its request arrives; the second never answers.
    const server = await raw((socket, index) => {
      socket.once('data', () => {
        if (index === 0) socket.resetAndDestroy();
      });
    });
    const t = tracker();
    const dispatcher = agent({
      on: t.on,
      timeout: LONG,
      retry: { attempts: 2, backoff: constantBackoff(0) },
    });
    const controller = new AbortController();
    const pending = rejection(request(server.url, { dispatcher, signal: controller.signal }));
    try {
      await received(server, 2);
      expect(server.connections).toBe(2);
      expect(t.retries.map((e) => e.reason)).toEqual(['maybe-sent']);
      expect(steadyHoldsOpen()).toBe(true);
    } finally {
      controller.abort(new Error('test over'));
    }
    expect(String(await pending)).toContain('test over');
  });

  it("createAgent on the system clock: attempt 1's deadline still fires", async () => {
    const server = await raw(() => {});
    const dispatcher = agent({ timeout: { attempt: 100, total: 100 }, retry: false });
    const pending = rejection(request(server.url, { dispatcher }));
    await received(server, 1);
    expect(steadyHoldsOpen()).toBe(true);
    const error = await pending;
    expect(errorCode(error)).toBe('STAUNCH_DEADLINE');
  });

  it("staunch/undici's createFetch: the executor's attempts", async () => {
    const server = await raw(() => {});
    const fetch = createFetch({ timeout: LONG, retry: false });
    open.add(fetch.dispatcher);
    const controller = new AbortController();
    const pending = rejection(fetch(server.url, { signal: controller.signal }));
    try {
      await received(server, 1);
      expect(steadyHoldsOpen()).toBe(true);
    } finally {
      controller.abort(new Error('test over'));
    }
    expect(String(await pending)).toContain('test over');
  });

  it("the core createFetch over any other fetch: the deadline's timer holds the process, and goes with it", async () => {
    const { createFetch: coreFetch } = await import('../../src/fetch.js');
    const before = otherTimers();
    let sent = 0;
    const never = (_url: unknown, init?: RequestInit): Promise<Response> =>
      new Promise((_resolve, reject) => {
        sent++;
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      });
    const fetch = coreFetch({ fetch: never, timeout: LONG, retry: false });
    const controller = new AbortController();
    const pending = rejection(fetch('http://127.0.0.1:9/x', { signal: controller.signal }));
    try {
      await new Promise((resolve) => setImmediate(resolve));
      expect(sent).toBe(1);
      expect(otherTimers()).toBe(before + 1);
    } finally {
      controller.abort(new Error('test over'));
    }
    expect(String(await pending)).toContain('test over');
    expect(otherTimers()).toBe(before);
  });
});
