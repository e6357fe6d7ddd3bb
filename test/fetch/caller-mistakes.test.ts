/**
 * Issue 10, item 1: a request the runtime refuses before sending anything is
 * the caller's mistake. Thrown at once as the runtime's own TypeError, never
 * retried, never a breaker failure, never charged to the budget, and it never
 * blacks out a healthy upstream.
 */
import { describe, expect, test } from 'vitest';
import { createFetch, type StaunchFetch, type StaunchListeners } from '../../src/index.js';
import { createFetch as createUndiciFetch } from '../../src/undici/index.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const SECRET = 'SENTINEL-mistake-5d1e';

let server: TestServer;
const cleanup = closeAfterEach();

async function healthy(): Promise<TestServer> {
  server = cleanup.add(await httpServer((_req, res) => res.end('ok')));
  return server;
}

/** Each mistake as `[name, url, init]`, against the healthy server's port where there is one. */
function mistakes(port: number): [string, string, RequestInit][] {
  const origin = `http://127.0.0.1:${port}`;
  return [
    ['GET with a body', `${origin}/`, { method: 'GET', body: 'x' }],
    ['HEAD with a body', `${origin}/`, { method: 'HEAD', body: 'x' }],
    ['invalid header value', `${origin}/`, { headers: { 'x-trace': 'a\nb' } }],
    [
      'invalid header value (NUL in a key)',
      `${origin}/`,
      { headers: { 'x-api-key': `${SECRET}\0` } },
    ],
    ['invalid header name', `${origin}/`, { headers: { 'x trace': 'b' } }],
    ['credentials in the URL', `http://user:${SECRET}@127.0.0.1:${port}/`, {}],
    ['unknown scheme', `htp://127.0.0.1:${port}/`, {}],
    ['blocked port 1', 'http://127.0.0.1:1/', {}],
    ['blocked port 9', 'http://127.0.0.1:9/', {}],
    ['invalid URL', 'http://exa mple.com/', {}],
    ['invalid method', `${origin}/`, { method: 'BAD METHOD' }],
  ];
}

interface Recorder {
  events: { kind: string; event: unknown }[];
  on: Partial<StaunchListeners>;
}

function recorder(): Recorder {
  const events: Recorder['events'] = [];
  const on: Partial<StaunchListeners> = {};
  for (const kind of ['attempt', 'retry', 'giveUp', 'breakerStateChange'] as const) {
    on[kind] = (event: unknown) => events.push({ kind, event });
  }
  return { events, on };
}

/** Counts the transport's calls: a retry would call it again. */
function counting(transport: typeof fetch) {
  const state = { calls: 0 };
  const wrapped = (input: string, init: RequestInit) => {
    state.calls++;
    return transport(input, init);
  };
  return { state, fetch: wrapped };
}

async function checkAdapter(
  make: (on: Partial<StaunchListeners>) => {
    fetch: StaunchFetch;
    calls: () => number;
  },
) {
  const s = await healthy();
  const r = recorder();
  const { fetch, calls } = make(r.on);
  const cases = mistakes(s.port);
  let n = 0;
  while (n < 25) {
    for (const [name, url, init] of cases) {
      if (n >= 25) break;
      n++;
      const before = calls();
      const err = await fetch(url, init).then(
        () => new Error(`${name}: resolved`),
        (e: unknown) => e,
      );
      // The runtime's own TypeError, as fetch throws it; attempted once.
      expect(err, name).toBeInstanceOf(TypeError);
      expect(calls() - before, name).toBe(1);
      const text = `${(err as Error).message} ${(err as Error).stack} ${String((err as Error).cause)}`;
      expect(text, name).not.toMatch(/may have been sent/);
      expect(text, name).not.toContain(SECRET);
    }
  }
  // Nothing reached the server, nothing was retried or given up, the breaker never moved.
  expect(s.received).toHaveLength(0);
  expect(r.events.filter((e) => e.kind !== 'attempt')).toEqual([]);
  // A valid GET to the same origin still reaches it.
  const res = await fetch(`${s.url}/valid`);
  expect(res.status).toBe(200);
  expect(await res.text()).toBe('ok');
  expect(s.received.map((x) => x.path)).toEqual(['/valid']);
}

describe('the caller’s own mistakes', () => {
  test('createFetch over Node’s fetch: 25 mistakes, then a valid GET reaches the server', async () => {
    await checkAdapter((on) => {
      const t = counting(fetch);
      return {
        fetch: createFetch({ fetch: t.fetch, on, random: () => 0 }),
        calls: () => t.state.calls,
      };
    });
  });

  test('createFetch from staunch/undici: the same', async () => {
    await checkAdapter((on) => {
      let calls = 0;
      const f = createUndiciFetch({
        on: {
          ...on,
          attemptStart: () => {
            calls++;
          },
        },
        random: () => 0,
      });
      cleanup.add(f.dispatcher);
      return { fetch: f, calls: () => calls };
    });
  });

  test('a consecutive-failures breaker does not open on them either', async () => {
    const s = await healthy();
    const fetch = createFetch({
      breaker: { consecutiveFailures: 1 },
      retry: false,
    });
    for (let i = 0; i < 5; i++) {
      await expect(fetch(`${s.url}/`, { method: 'GET', body: 'x' })).rejects.toThrow(TypeError);
    }
    expect((await fetch(`${s.url}/ok`)).status).toBe(200);
  });

  test('a stream body without duplex: half: 30 keyless POSTs, keyed POSTs and PUTs, none retried or counted', async () => {
    const s = await healthy();
    const r = recorder();
    const t = counting(fetch);
    const f = createFetch({ fetch: t.fetch, on: r.on, random: () => 0 });
    const inits: (() => RequestInit)[] = [
      () => ({ method: 'POST' }),
      () => ({ method: 'POST', idempotencyKey: 'order-1' }) as RequestInit,
      () => ({ method: 'PUT' }),
    ];
    for (let i = 0; i < 30; i++) {
      const init = inits[i % inits.length]!();
      const body = new ReadableStream<Uint8Array>({
        pull: (c) => c.enqueue(new TextEncoder().encode('chunk')),
      });
      const before = t.state.calls;
      const err = await f(`${s.url}/upload`, { ...init, body }).then(
        () => new Error('resolved'),
        (e: unknown) => e,
      );
      // The runtime's own TypeError, at once: not a NetworkError that "may have been sent".
      expect(err, init.method).toBeInstanceOf(TypeError);
      expect(err, init.method).not.toHaveProperty('maybeSent');
      expect(t.state.calls - before, init.method).toBe(1);
    }
    expect(s.received).toHaveLength(0);
    expect(r.events.filter((e) => e.kind !== 'attempt')).toEqual([]);
    // The same stream body with duplex: 'half' is sent, and the breaker let it through.
    const ok = await f(`${s.url}/upload`, {
      method: 'POST',
      body: new Blob(['payload']).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(ok.status).toBe(200);
    expect(s.received.map((x) => [x.path, x.body.toString()])).toEqual([['/upload', 'payload']]);
  });

  test('a real network error on a valid request is still a NetworkError, retried', async () => {
    const s = await httpServer((req, res) => {
      if (req.url === '/reset') req.socket.destroy();
      else res.end('ok');
    });
    cleanup.add(s);
    const t = counting(fetch);
    const f = createFetch({ fetch: t.fetch, random: () => 0 });
    const err = await f(`${s.url}/reset`).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'STAUNCH_NETWORK', maybeSent: true });
    expect(t.state.calls).toBe(3);
  });
});
