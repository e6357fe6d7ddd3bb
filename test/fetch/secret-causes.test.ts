/**
 * Issue 10, items 4 and 6: a sentinel secret (URL userinfo, an x-api-key
 * value, a credential query parameter) quoted by a failing transport must
 * surface in no error staunch throws, whatever the class (policy refusals
 * carry the failed attempt's error as `cause`), in no event, and in no replay
 * description, which names what it removed instead.
 */
import { inspect } from 'node:util';
import { describe, expect, test } from 'vitest';
import {
  CircuitOpenError,
  createFetch,
  DeadlineExceededError,
  NetworkError,
  QueueFullError,
  QueueTimeoutError,
  RateLimitedError,
  SsrfBlockedError,
  type StaunchListeners,
  type StaunchOptions,
} from '../../src/index.js';
import { createFetch as createUndiciFetch } from '../../src/undici/index.js';
import { httpServer, type RawServer, rawServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const PASSWORD = 'SENTINEL-pw-1b7c';
const API_KEY = 'SENTINEL-key-9e2d';
const TOKEN = 'SENTINEL-qs-4a0f';
const SENTINEL = 'SENTINEL';

const cleanup = closeAfterEach();

/** Every rendering of an error and of the events a logger could make. */
function everything(err: unknown, events: unknown[]): string {
  const parts = [inspect(err, { depth: 20, showHidden: true }), JSON.stringify(err)];
  let e: unknown = err;
  for (let i = 0; i < 10 && e; i++) {
    const { message, stack } = e as Error;
    parts.push(String(message), String(stack), JSON.stringify(e));
    e = (e as Error).cause;
  }
  for (const ev of events) {
    parts.push(JSON.stringify(ev), inspect(ev, { depth: 10, showHidden: true }));
    const replay = (ev as { replay?: unknown }).replay;
    if (replay !== undefined) parts.push(JSON.stringify(replay));
  }
  return parts.join('\n');
}

/** Every listener, recording into `events`. */
function listeners(events: unknown[]): StaunchListeners {
  const on: StaunchListeners = {};
  for (const name of ['attemptStart', 'attempt', 'retry', 'giveUp', 'wait', 'end'] as const) {
    on[name] = (e: unknown) => events.push(e);
  }
  on.breakerStateChange = (e) => events.push(e);
  return on;
}

/**
 * A transport that does its own basic auth from the URL's userinfo (Node's
 * fetch refuses credentials in a URL) and, when the real fetch fails, quotes
 * the URL and the key in its own message, as some transports do.
 */
function quotingTransport(hold?: () => void) {
  let calls = 0;
  const fetchImpl = async (url: string, init: RequestInit): Promise<Response> => {
    calls++;
    if (calls === 2) hold?.();
    const u = new URL(url);
    const auth = `Basic ${btoa(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`)}`;
    u.username = '';
    u.password = '';
    const headers = new Headers(init.headers);
    headers.set('authorization', auth);
    try {
      return await fetch(u.href, { ...init, headers });
    } catch (cause) {
      throw new Error(`transport: ${url} failed (x-api-key ${headers.get('x-api-key')})`, {
        cause,
      });
    }
  };
  return { fetch: fetchImpl, calls: () => calls };
}

/** Resets every connection once the request arrived: a maybe-sent failure. */
async function resetting(): Promise<RawServer> {
  const server = await rawServer((socket) => socket.once('data', () => socket.destroy()));
  cleanup.add(server);
  return server;
}

function secretUrl(server: { port: number }, path = '/v1/items'): string {
  return `http://svc:${PASSWORD}@127.0.0.1:${server.port}${path}?page=2&access_token=${TOKEN}`;
}

const headers = { 'x-api-key': API_KEY, 'idempotency-key': 'order-1' };

async function run(
  options: Omit<StaunchOptions, 'fetch' | 'on'>,
  url: string,
  hold?: () => void,
): Promise<{ err: unknown; events: unknown[] }> {
  const events: unknown[] = [];
  const transport = quotingTransport(hold);
  const fetch = createFetch({ ...options, fetch: transport.fetch, on: listeners(events) });
  const err = await fetch(url, { headers }).catch((e: unknown) => e);
  return { err, events };
}

const fast = { attempts: 2, backoff: () => 0 };

describe('no secret in any error staunch throws, its cause chain, or an event', () => {
  test('the transport really quotes the secrets (so the tests can fail)', async () => {
    const server = await resetting();
    const transport = quotingTransport();
    const raw = await transport.fetch(secretUrl(server), { headers }).catch((e: unknown) => e);
    expect(String((raw as Error).message)).toContain(PASSWORD);
    expect(String((raw as Error).message)).toContain(API_KEY);
  });

  test('NetworkError', async () => {
    const server = await resetting();
    const { err, events } = await run({ retry: fast }, secretUrl(server));
    expect(err).toBeInstanceOf(NetworkError);
    expect(server.connections).toBe(2);
    expect(everything(err, events)).not.toContain(SENTINEL);
  });

  test('CircuitOpenError after a failed attempt', async () => {
    const server = await resetting();
    const { err, events } = await run(
      // A deadline that cannot reach the next probe (250 ms): the open circuit fails fast.
      { retry: fast, breaker: { consecutiveFailures: 1 }, timeout: { total: 200 } },
      secretUrl(server),
    );
    expect(err).toBeInstanceOf(CircuitOpenError);
    expect((err as Error).cause).toBeInstanceOf(Error);
    expect(everything(err, events)).not.toContain(SENTINEL);
  });

  test('RateLimitedError after a failed attempt', async () => {
    const server = await resetting();
    const { err, events } = await run(
      { retry: fast, rateLimit: { rps: 1, burst: 1 }, timeout: { total: 500 } },
      secretUrl(server),
    );
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as Error).cause).toBeInstanceOf(Error);
    expect(everything(err, events)).not.toContain(SENTINEL);
  });

  let taker: ((url: string, init: RequestInit) => Promise<Response>) | undefined;

  for (const [name, concurrency, expected] of [
    ['QueueFullError', { max: 1, queue: 0 }, QueueFullError],
    ['QueueTimeoutError', { max: 1, queue: 1, queueTimeout: 20 }, QueueTimeoutError],
  ] as const) {
    test(`${name} after a failed attempt`, async () => {
      // Same origin (the policies count per origin): /hold is never answered, the rest is reset.
      const server = await rawServer((socket) =>
        socket.once('data', (chunk: Buffer) => {
          if (!chunk.toString().includes('/hold')) socket.destroy();
        }),
      );
      cleanup.add(server);
      const controller = new AbortController();
      cleanup.defer(() => controller.abort());
      const take = () => {
        taker?.(`http://127.0.0.1:${server.port}/hold`, { signal: controller.signal }).catch(
          () => {},
        );
      };
      const events: unknown[] = [];
      const transport = quotingTransport();
      const fetch = createFetch({
        // A short real wait before the retry, for the other request to take the slot.
        retry: { attempts: 2, backoff: () => 5 },
        concurrency,
        breaker: false,
        fetch: transport.fetch,
        on: {
          ...listeners(events),
          // The first request's attempt failed and freed its slot: another takes it before
          // the retry asks for one.
          attempt: (e) => {
            events.push(e);
            if (e.code !== undefined) take();
          },
        },
      });
      taker = fetch;
      const err = await fetch(secretUrl(server), { headers }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(expected);
      expect((err as Error).cause).toBeInstanceOf(Error);
      expect(everything(err, events)).not.toContain(SENTINEL);
    });
  }

  test('DeadlineExceededError', async () => {
    const server = await httpServer(() => {});
    cleanup.add(server);
    const { err, events } = await run({ retry: fast, timeout: { total: 50 } }, secretUrl(server));
    expect(err).toBeInstanceOf(DeadlineExceededError);
    expect(everything(err, events)).not.toContain(SENTINEL);
  });

  test('SsrfBlockedError (staunch/undici)', async () => {
    const events: unknown[] = [];
    const fetch = createUndiciFetch({ ssrf: true, on: listeners(events) });
    cleanup.add(fetch.dispatcher);
    const err = await fetch(`http://127.0.0.1:9999/v1?api_key=${TOKEN}`, { headers }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SsrfBlockedError);
    expect(everything(err, events)).not.toContain(SENTINEL);
  });

  test('the caller’s mistake (an x-api-key with a NUL): the runtime’s TypeError, scrubbed', async () => {
    const events: unknown[] = [];
    const fetch = createFetch({ on: listeners(events) });
    const err = await fetch(`http://127.0.0.1:9999/?access_token=${TOKEN}`, {
      headers: { 'x-api-key': `${API_KEY}\0` },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect(everything(err, events)).not.toContain(SENTINEL);
  });
});

describe('giveUp replay descriptions (item 6)', () => {
  test('credential-like query parameters, userinfo and secret headers are removed and named', async () => {
    const server = await httpServer((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    cleanup.add(server);
    const replays: unknown[] = [];
    const fetch = createFetch({
      retry: fast,
      on: { giveUp: (e) => replays.push(e.replay) },
      fetch: quotingTransport().fetch,
    });
    const res = await fetch(
      `http://svc:${PASSWORD}@127.0.0.1:${server.port}/v1?page=2&api_key=${API_KEY}&access_token=${TOKEN}`,
      { method: 'POST', body: 'b', headers: { ...headers, authorization: `Bearer ${TOKEN}` } },
    );
    expect(res.status).toBe(503);
    expect(replays).toHaveLength(1);
    expect(JSON.stringify(replays)).not.toContain(SENTINEL);
    expect(replays[0]).toMatchObject({
      method: 'POST',
      url: `http://127.0.0.1:${server.port}/v1?page=2`,
      idempotencyKey: 'order-1',
      removed: {
        headers: ['x-api-key', 'authorization'],
        query: ['api_key', 'access_token'],
        userinfo: true,
      },
    });
  });
});
