import { Readable, Writable } from 'node:stream';
import { Agent, Dispatcher, request, stream } from 'undici';
import { describe, expect, it } from 'vitest';
import { constantBackoff } from '../../src/retry/backoff.js';
import { createAgent, retryInterceptor } from '../../src/undici/index.js';
import { AbortToken } from '../../src/undici/token.js';
import { fakeClock } from '../helpers/clock.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach, dispatchCurrent, rejection } from './support.js';

const open = closeAfterEach();
const fast = { attempts: 3, backoff: constantBackoff(0) };

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  return open.add(await httpServer(handler));
}

describe('createAgent is a Dispatcher', () => {
  it('is an instance of undici Dispatcher with its own dispatch, close and destroy', async () => {
    const agent = createAgent();
    expect(agent).toBeInstanceOf(Dispatcher);
    expect(Object.getPrototypeOf(agent)).not.toBe(Dispatcher.prototype);
    expect(agent.dispatch).toBe(Object.getPrototypeOf(agent).dispatch);
    const server = await serve((_req, res) => res.end('ok'));
    await agent.close();
    const error = (await rejection(request(server.url, { dispatcher: agent }))) as {
      code?: string;
      cause?: { code?: string };
    };
    expect(['UND_ERR_CLOSED', 'UND_ERR_DESTROYED']).toContain(error.cause?.code ?? error.code);
    await agent.destroy();
    expect(server.received).toHaveLength(0);
  });

  it("re-emits the pool's connect and disconnect events", async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const agent = createAgent();
    const events: string[] = [];
    agent.on('connect', (origin) => events.push(`connect ${String(origin)}`));
    agent.on('disconnect', (origin) => events.push(`disconnect ${String(origin)}`));
    const { body } = await request(server.url, { dispatcher: agent });
    await body.text();
    await agent.close();
    expect(events).toEqual([`connect ${server.url}/`, `disconnect ${server.url}/`]);
  });

  it('hands a legacy caller (undici.request) every header as undici read it, set-cookie twice', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.setHeader('x-one', 'v');
      res.end('body');
    });
    const agent = open.add(createAgent());
    const res = await request(server.url, { dispatcher: agent });
    expect(res.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(res.headers['x-one']).toBe('v');
    expect(await res.body.text()).toBe('body');
  });

  it("gives undici.request's response the context a bare Agent gives (none)", async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const bare = open.add(new Agent());
    const agent = open.add(createAgent());
    const plain = await request(server.url, { dispatcher: bare });
    const ours = await request(server.url, { dispatcher: agent });
    await Promise.all([plain.body.text(), ours.body.text()]);
    expect(ours.context).toBe(plain.context);
    expect(server.received).toHaveLength(2);
  });

  it('takes frozen options and every spelling of an origin, pooled as a bare Agent pools them', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const spellings = [server.url, `${server.url}/`, new URL(server.url), server.url];
    const pools = async (agent: Dispatcher): Promise<string[]> => {
      const connects: string[] = [];
      agent.on('connect', (origin) => connects.push(String(origin)));
      for (const origin of spellings) {
        const opts = Object.freeze({ origin, path: '/x', method: 'GET' as const });
        const res = await agent.request(opts);
        expect(await res.body.text()).toBe('ok');
        // The caller's options are as they were: frozen, the origin the same value.
        expect(opts.origin).toBe(origin);
      }
      return connects;
    };
    const bare = await pools(open.add(new Agent()));
    const ours = await pools(open.add(createAgent()));
    expect(ours).toEqual(bare);
    expect(server.received).toHaveLength(8);
  });

  it('retries a 503 for undici.stream (another legacy caller) and streams the final body', async () => {
    const server = await serve((_req, res, i) => {
      res.writeHead(i === 0 ? 503 : 200);
      res.end(i === 0 ? 'busy' : 'done');
    });
    const agent = open.add(createAgent({ retry: fast }));
    const chunks: Buffer[] = [];
    await stream(server.url, { method: 'GET', dispatcher: agent }, () => {
      return new Writable({
        write(chunk: Buffer, _enc, cb) {
          chunks.push(chunk);
          cb();
        },
      });
    });
    expect(Buffer.concat(chunks).toString()).toBe('done');
    expect(server.received).toHaveLength(2);
  });

  it("serves Node's own global fetch (its bundled undici's handler), retrying a 503", async () => {
    const server = await serve((_req, res, i) => {
      res.writeHead(i === 0 ? 503 : 200, { 'set-cookie': ['a=1', 'b=2'] });
      res.end(i === 0 ? 'busy' : 'done');
    });
    const agent = open.add(createAgent({ retry: fast }));
    const res = await fetch(server.url, { dispatcher: agent } as unknown as RequestInit);
    expect(res.status).toBe(200);
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.text()).toBe('done');
    expect(server.received).toHaveLength(2);
  });

  it('keeps backpressure for a legacy caller: a large body arrives whole when read slowly', async () => {
    const big = Buffer.alloc(4 * 1024 * 1024, 'z');
    const server = await serve((_req, res) => res.end(big));
    const agent = open.add(createAgent());
    const { body } = await request(server.url, { dispatcher: agent, highWaterMark: 1024 });
    let total = 0;
    for await (const chunk of Readable.from(body)) {
      total += (chunk as Buffer).length;
      if (total < 64 * 1024) await new Promise((r) => setImmediate(r));
    }
    expect(total).toBe(big.length);
  });

  it('with compose(retryInterceptor()) on top, attempts are made once, by the outer layer', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const agent = open.add(createAgent({ retry: fast }));
    const composed = agent.compose(retryInterceptor({ retry: { ...fast, attempts: 2 } }));
    const res = await request(server.url, { dispatcher: composed });
    await res.body.text();
    expect(res.statusCode).toBe(503);
    expect(server.received).toHaveLength(2);
  });

  it("the caller's abort during a backoff wait rejects at once with its reason", async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const agent = open.add(
      createAgent({ retry: { attempts: 3, backoff: constantBackoff(60_000) } }),
    );
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const pending = request(server.url, { dispatcher: agent, signal: controller.signal });
    await server.seen(1);
    await new Promise((r) => setTimeout(r, 20));
    controller.abort(reason);
    expect(await rejection(pending)).toBe(reason);
    expect(server.received).toHaveLength(1);
  });
});

describe('a success read raw (undici 7: no header parsed for a legacy caller before its own)', () => {
  it('the limiter still learns a spent quota from a 200 (X-RateLimit-Remaining: 0, any case)', async () => {
    const server = await serve((_req, res) => {
      const reset = Math.ceil((Date.now() + 120_000) / 1000);
      res.writeHead(200, { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(reset) });
      res.end('ok');
    });
    const agent = open.add(createAgent({ timeout: { total: 2_000 } }));
    const first = await request(server.url, { dispatcher: agent });
    expect(await first.body.text()).toBe('ok');
    // The window resets in two minutes, past the next request's deadline: refused, never sent.
    const error = (await rejection(request(server.url, { dispatcher: agent }))) as Error;
    expect(error.name).toBe('RateLimitedError');
    expect(server.received).toHaveLength(1);
  });

  it('a `pacing` reader gets the parsed record of a success, repeated headers and all', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('X-Quota', ['1', '2']);
      res.end('ok');
    });
    const seen: unknown[] = [];
    const agent = open.add(
      createAgent({
        pacing: (headers) => {
          seen.push((headers as Record<string, unknown>)['x-quota']);
          return undefined;
        },
      }),
    );
    const res = await request(server.url, { dispatcher: agent });
    expect(await res.body.text()).toBe('ok');
    expect(seen).toEqual([['1', '2']]);
  });

  it('a caller on the new handler API gets the parsed headers and trailers', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'X-One': 'v', Trailer: 'X-Sum' });
      res.write('a');
      res.addTrailers({ 'X-Sum': '42' });
      res.end('b');
    });
    const agent = open.add(createAgent());
    const got = await dispatchCurrent(agent, server.url);
    expect(got.headers['x-one']).toBe('v');
    expect(got.body).toBe('ab');
    expect(got.trailers).toEqual({ 'x-sum': '42' });
  });
});

describe("attempt 1's signal is a token: aborts still reach undici", () => {
  it("the caller's abort while attempt 1 waits for its headers rejects with its reason and frees the socket", async () => {
    let closed = 0;
    const server = await serve((req) => {
      req.socket.on('close', () => closed++);
    });
    const agent = open.add(createAgent({ retry: fast }));
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const pending = request(server.url, { dispatcher: agent, signal: controller.signal });
    await server.seen(1);
    controller.abort(reason);
    expect(await rejection(pending)).toBe(reason);
    await new Promise<void>((resolve) => {
      const check = (): void => (closed === 1 ? resolve() : void setImmediate(check));
      check();
    });
    expect(server.received).toHaveLength(1);
  });

  it("attempt 1's deadline aborts its dispatch, and attempt 2 goes", async () => {
    let calls = 0;
    const server = await serve((_req, res) => {
      calls++;
      if (calls > 1) res.end('ok');
    });
    const clock = fakeClock();
    const agent = open.add(createAgent({ clock, retry: fast, timeout: { attempt: 5_000 } }));
    const pending = request(server.url, { dispatcher: agent });
    await server.seen(1);
    expect(clock.remaining()).toEqual([5_000]);
    await clock.advance(5_000);
    const res = await pending;
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok');
    expect(server.received).toHaveLength(2);
  });
});

describe('attempt 1 handed straight to a legacy caller (first.ts)', () => {
  it('a caller that aborts from its own onConnect gets its reason, and nothing is sent', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const agent = open.add(createAgent({ retry: fast }));
    const controller = new AbortController();
    const reason = new Error('aborted before it went');
    controller.abort(reason);
    expect(
      await rejection(request(server.url, { dispatcher: agent, signal: controller.signal })),
    ).toBe(reason);
    const errors: unknown[] = [];
    await new Promise<void>((resolve) => {
      agent.dispatch({ origin: server.url, path: '/', method: 'GET' }, {
        onConnect: (abort: (reason?: Error) => void) => abort(reason),
        onHeaders: () => {
          errors.push('headers');
          return true;
        },
        onData: () => true,
        onComplete: () => {
          errors.push('complete');
          resolve();
        },
        onError: (error: Error) => {
          errors.push(error);
          // Anything delivered after the error would show in `errors` by the next turn.
          setImmediate(resolve);
        },
      } as unknown as Dispatcher.DispatchHandler);
    });
    expect(errors).toEqual([reason]);
    expect(server.received).toHaveLength(0);
  });

  it('a 503 then a 404: the 404 is handed over whole, its body and all, after one retry', async () => {
    let calls = 0;
    const server = await serve((_req, res) => {
      calls++;
      res.statusCode = calls === 1 ? 503 : 404;
      res.setHeader('x-call', String(calls));
      res.end(`body ${calls}`);
    });
    const agent = open.add(createAgent({ retry: fast }));
    const res = await request(server.url, { dispatcher: agent });
    expect(res.statusCode).toBe(404);
    expect(res.headers['x-call']).toBe('2');
    expect(await res.body.text()).toBe('body 2');
    expect(server.received).toHaveLength(2);
  });

  it('a success after the caller aborted mid-body ends in its reason, the socket released', async () => {
    let closed = 0;
    const server = await serve((req, res) => {
      req.socket.on('close', () => closed++);
      res.write('first part');
    });
    const agent = open.add(createAgent({ retry: fast }));
    const controller = new AbortController();
    const reason = new Error('caller stopped reading');
    const res = await request(server.url, { dispatcher: agent, signal: controller.signal });
    expect(res.statusCode).toBe(200);
    controller.abort(reason);
    expect(await rejection(res.body.text())).toBe(reason);
    await new Promise<void>((resolve) => {
      const check = (): void => (closed === 1 ? resolve() : void setImmediate(check));
      check();
    });
    expect(server.received).toHaveLength(1);
  });
});

describe('AbortToken', () => {
  it('runs each listener once on abort, none after removal, and throws its reason', () => {
    const token = new AbortToken();
    const calls: string[] = [];
    const a = (): void => void calls.push('a');
    const b = (): void => void calls.push('b');
    token.addEventListener('abort', a);
    token.addEventListener('abort', b);
    token.removeEventListener('abort', a);
    expect(() => token.throwIfAborted()).not.toThrow();
    const reason = new Error('stop');
    token.abort(reason);
    token.abort(new Error('again'));
    expect(calls).toEqual(['b']);
    expect(token.aborted).toBe(true);
    expect(token.reason).toBe(reason);
    expect(() => token.throwIfAborted()).toThrow(reason);
  });
});
