/**
 * createAgent's lean handler for a legacy caller (src/undici/lean.ts): with
 * the defaults (attempt 1's deadline held by undici's headers timer), a
 * plain GET is carried to its success by one flat handler, and first.ts's
 * `LegacyFirst` is built only when something else happens, to take the
 * request over from that event on. Each test checks which of the two
 * carried the request, then that the caller got what the full path gives.
 */
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Executor } from '../../src/executor.js';
import { constantBackoff } from '../../src/retry/backoff.js';
import { LEGACY_CORE } from '../../src/undici/attempt.js';
import { LegacyFirst } from '../../src/undici/first.js';
import { createAgent } from '../../src/undici/index.js';
import { until } from '../helpers/clock.js';
import { httpServer, rawServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach, rejection } from './support.js';

const open = closeAfterEach();
const fast = { attempts: 3, backoff: constantBackoff(0) };
const OFF = { breaker: false, budget: false, rateLimit: false } as const;

afterEach(() => {
  vi.restoreAllMocks();
});

interface Counts {
  run: number;
  runFull: number;
  takeOver: number;
  admitted: number;
}

/**
 * How often first.ts's legacy handler was built and for what (run whole, run after the
 * start, taken over), and how many attempts the lean path admitted. On undici 8 a legacy
 * caller goes through the new-API handler instead (first.ts, `StartedFirst`), never the
 * lean handler: there `check` asserts only that the legacy handler was never built.
 */
function slowPath() {
  const run = vi.spyOn(LegacyFirst.prototype, 'run');
  const runFull = vi.spyOn(LegacyFirst.prototype, 'runFull');
  const takeOver = vi.spyOn(LegacyFirst.prototype, 'takeOver');
  const lean = vi.spyOn(Executor.prototype, 'leanFirst');
  const counts = (): Counts => ({
    run: run.mock.calls.length,
    runFull: runFull.mock.calls.length,
    takeOver: takeOver.mock.calls.length,
    admitted: lean.mock.results.filter((r) => r.type === 'return' && r.value !== undefined).length,
  });
  return {
    check(expected: Partial<Counts>): void {
      if (LEGACY_CORE) expect(counts()).toMatchObject(expected);
      else expect(counts()).toMatchObject({ run: 0, runFull: 0, takeOver: 0 });
    },
  };
}

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  return open.add(await httpServer(handler));
}

describe("createAgent's lean handler", () => {
  it('carries a success whole (headers as undici read them, body, trailers) with nothing else built', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.setHeader('x-one', 'yes');
      res.setHeader('trailer', 'x-sum');
      res.write('hello ');
      res.addTrailers({ 'x-sum': '42' });
      res.end('world');
    });
    const path = slowPath();
    // The policies on, as by default: the first request arms its key's quiet period.
    const agent = open.add(createAgent({ retry: fast }));
    for (let i = 0; i < 5; i++) {
      const res = await request(`${server.url}/p?i=${i}`, { dispatcher: agent });
      expect(res.statusCode).toBe(200);
      expect(res.headers['set-cookie']).toEqual(['a=1', 'b=2']);
      expect(res.headers['x-one']).toBe('yes');
      expect(await res.body.text()).toBe('hello world');
      expect(res.trailers).toEqual({ 'x-sum': '42' });
    }
    expect(server.received.map((r) => r.path)).toEqual([0, 1, 2, 3, 4].map((i) => `/p?i=${i}`));
    // The first took the full path (after the lean handler asked for its key); the rest went lean.
    path.check({ run: 0, runFull: 1, takeOver: 0, admitted: 4 });
  });

  it('a 503 is taken over and retried; the final response is handed over whole', async () => {
    let calls = 0;
    const server = await serve((_req, res) => {
      calls++;
      res.statusCode = calls === 1 ? 503 : 200;
      res.end(`body ${calls}`);
    });
    const path = slowPath();
    const agent = open.add(createAgent({ ...OFF, retry: fast }));
    const res = await request(server.url, { dispatcher: agent });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('body 2');
    expect(server.received).toHaveLength(2);
    path.check({ run: 0, runFull: 0, takeOver: 1, admitted: 1 });
  });

  it('a reset before the response is taken over and retried; with retries off it fails once', async () => {
    let calls = 0;
    const server = await serve((req, res) => {
      calls++;
      if (calls === 1 || calls === 3) req.socket.destroy();
      else res.end('ok');
    });
    const path = slowPath();
    const agent = open.add(createAgent({ ...OFF, retry: fast }));
    const res = await request(server.url, { dispatcher: agent });
    expect(await res.body.text()).toBe('ok');
    expect(calls).toBe(2);
    const once = open.add(createAgent({ ...OFF, retry: false }));
    expect(await rejection(request(server.url, { dispatcher: once }))).toBeInstanceOf(Error);
    expect(calls).toBe(3);
    path.check({ run: 0, runFull: 0, takeOver: 2 });
  });

  it("the caller's abort before the response is taken over: the reason, no retry, the socket closed", async () => {
    let closed = 0;
    const server = await serve((req) => {
      req.socket.on('close', () => closed++);
    });
    const path = slowPath();
    const agent = open.add(createAgent({ ...OFF, retry: fast }));
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const pending = request(server.url, { dispatcher: agent, signal: controller.signal });
    await server.seen(1);
    controller.abort(reason);
    expect(await rejection(pending)).toBe(reason);
    await until(() => closed === 1);
    expect(server.received).toHaveLength(1);
    path.check({ run: 0, runFull: 0, takeOver: 1, admitted: 1 });
  });

  it("the caller's abort during the body ends the body with the reason, nothing taken over or retried", async () => {
    const server = await rawServer((socket) => {
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nfirst part');
      });
    });
    open.add(server);
    const path = slowPath();
    const agent = open.add(createAgent({ ...OFF, retry: fast }));
    const controller = new AbortController();
    const reason = new Error('enough');
    const res = await request(server.url, { dispatcher: agent, signal: controller.signal });
    expect(res.statusCode).toBe(200);
    const chunks: string[] = [];
    const read = (async () => {
      for await (const chunk of res.body) {
        chunks.push(String(chunk));
        controller.abort(reason);
      }
    })();
    expect(await rejection(read)).toBe(reason);
    expect(chunks).toEqual(['first part']);
    await until(() => server.closed >= 1);
    // One request, not sent again (undici may open an idle connection after the abort).
    const gets = server.data.reduce((n, d) => n + (d.toString().match(/^GET /gm)?.length ?? 0), 0);
    expect(gets).toBe(1);
    path.check({ run: 0, runFull: 0, takeOver: 0, admitted: 1 });
  });

  it('a request it does not take goes the full way: a body, a method not retried, options of its own', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const path = slowPath();
    const agent = open.add(createAgent({ ...OFF, retry: fast }));
    const sends = [
      request(server.url, { dispatcher: agent, method: 'POST', body: 'x' }),
      request(server.url, { dispatcher: agent, method: 'PUT', body: 'x' }),
      request(server.url, { dispatcher: agent, headersTimeout: 5_000 }),
    ];
    for (const res of await Promise.all(sends)) expect(await res.body.text()).toBe('ok');
    expect(server.received.map((r) => r.method)).toEqual(['POST', 'PUT', 'GET']);
    path.check({ run: 3, takeOver: 0 });
  });

  it('an attempt listener: every request on the full path, and told', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const path = slowPath();
    const attempts: number[] = [];
    const agent = open.add(createAgent({ on: { attempt: (e) => attempts.push(e.status ?? 0) } }));
    for (let i = 0; i < 3; i++)
      await (await request(server.url, { dispatcher: agent })).body.text();
    expect(attempts).toEqual([200, 200, 200]);
    path.check({ run: 0, runFull: 3, takeOver: 0, admitted: 0 });
  });

  it("the caller's abort from its own start callback: the full path, nothing sent", async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const path = slowPath();
    const agent = open.add(createAgent({ ...OFF, retry: fast }));
    const reason = new Error('not now');
    const failed = new Promise<Error>((resolve) => {
      agent.dispatch({ origin: server.url, path: '/', method: 'GET' }, {
        onConnect: (abort: (reason?: Error) => void) => abort(reason),
        onHeaders: () => true,
        onData: () => true,
        onComplete: () => {},
        onError: resolve,
      } as never);
    });
    expect(await failed).toBe(reason);
    expect(server.received).toHaveLength(0);
    path.check({ run: 0, runFull: 1, takeOver: 0, admitted: 0 });
  });

  it('a policy key that throws fails the request before anything is sent', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const agent = open.add(
      createAgent({
        key: () => {
          throw new Error('no key');
        },
      }),
    );
    const error = await rejection(request(server.url, { dispatcher: agent }));
    expect((error as Error).message).toBe('no key');
    expect(server.received).toHaveLength(0);
  });

  it('a 103 before the response is passed over; the 200 is the success', async () => {
    const server = await rawServer((socket) => {
      socket.once('data', () => {
        socket.write(
          'HTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n' +
            'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok',
        );
      });
    });
    open.add(server);
    const path = slowPath();
    const agent = open.add(createAgent({ ...OFF, retry: fast }));
    const res = await request(server.url, { dispatcher: agent });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok');
    path.check({ run: 0, runFull: 0, takeOver: 0, admitted: 1 });
  });
});
