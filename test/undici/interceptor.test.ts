import { Readable } from 'node:stream';
import * as undici from 'undici';
import { Agent, type Dispatcher, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { NetworkError } from '../../src/errors.js';
import { constantBackoff } from '../../src/retry/backoff.js';
import { CHANNELS, createAgent, retryInterceptor } from '../../src/undici/index.js';
import { fakeClock, until } from '../helpers/clock.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { channelLog, closeAfterEach, rejection, tracker } from './support.js';

/** undici 7's dispatchers speak the legacy handler API; undici 8 exports a wrapper for it. */
const LEGACY_CORE = !('Dispatcher1Wrapper' in undici);

/** Closed after each test. */
const open = closeAfterEach();

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  return open.add(await httpServer(handler));
}

function agent(options: Parameters<typeof retryInterceptor>[0], base = new Agent()) {
  const dispatcher = base.compose(retryInterceptor(options));
  open.add(dispatcher);
  return dispatcher;
}

const fast = { attempts: 3, backoff: constantBackoff(0) };

describe('retryInterceptor with undici.request', () => {
  it('retries a 503 and hands back the final response with its body intact', async () => {
    const server = await serve((_req, res, i) => {
      res.writeHead(i < 2 ? 503 : 200, { 'content-type': 'text/plain' });
      res.end(i < 2 ? 'busy' : 'fine');
    });
    const t = tracker();
    const res = await request(`${server.url}/items`, {
      dispatcher: agent({ retry: fast, on: t.on }),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain');
    expect(await res.body.text()).toBe('fine');
    expect(server.received.map((r) => r.path)).toEqual(['/items', '/items', '/items']);
    expect(t.retries.map((e) => [e.attempt, e.reason, e.status])).toEqual([
      [1, 'status', 503],
      [2, 'status', 503],
    ]);
  });

  it('returns the last retryable status as the response, body intact', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end('still busy');
    });
    const res = await request(server.url, { dispatcher: agent({ retry: fast }) });
    expect(res.statusCode).toBe(503);
    expect(await res.body.text()).toBe('still busy');
    expect(server.received).toHaveLength(3);
  });

  it('does not retry a POST without a key on a 500, and says why', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(500);
      res.end('boom');
    });
    const t = tracker();
    const res = await request(server.url, {
      method: 'POST',
      body: 'charge 42',
      dispatcher: agent({ retry: fast, on: t.on }),
    });
    expect(res.statusCode).toBe(500);
    expect(await res.body.text()).toBe('boom');
    expect(server.received).toHaveLength(1);
    expect(t.giveUps.map((e) => e.reason)).toEqual(['not-replayable']);
  });

  it('retries a POST that carries an idempotency key (per request), same key and body each time', async () => {
    const server = await serve((_req, res, i) => {
      res.writeHead(i === 0 ? 502 : 201);
      res.end();
    });
    const res = await request(server.url, {
      method: 'POST',
      body: '{"amount":42}',
      dispatcher: agent({ retry: fast }),
      staunch: { idempotencyKey: 'order-42' },
    } as Parameters<typeof request>[1]);
    expect(res.statusCode).toBe(201);
    await res.body.dump();
    expect(server.received.map((r) => [r.headers['idempotency-key'], r.body.toString()])).toEqual([
      ['order-42', '{"amount":42}'],
      ['order-42', '{"amount":42}'],
    ]);
  });

  it('a 409 to a keyed POST (its key in flight) is retried with the key; one without a key is not', async () => {
    const server = await serve((req, res, i) => {
      const keyed = req.headers['idempotency-key'] !== undefined;
      res.writeHead(keyed && i === 0 ? 409 : keyed ? 201 : 409);
      res.end();
    });
    const dispatcher = agent({ retry: fast });
    const post = { method: 'POST' as const, body: 'x', dispatcher };
    const keyed = await request(server.url, {
      ...post,
      staunch: { idempotencyKey: 'order-9' },
    } as Parameters<typeof request>[1]);
    await keyed.body.dump();
    const plain = await request(server.url, { ...post, method: 'PUT' as const });
    await plain.body.dump();
    expect([keyed.statusCode, plain.statusCode]).toEqual([201, 409]);
    expect(server.received.map((r) => [r.method, r.headers['idempotency-key']])).toEqual([
      ['POST', 'order-9'],
      ['POST', 'order-9'],
      ['PUT', undefined],
    ]);
  });

  it('takes per-request retry options from `staunch` on the dispatch options', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const dispatcher = agent({ retry: fast });
    const res = await request(server.url, {
      dispatcher,
      staunch: { retry: 1 },
    } as Parameters<typeof request>[1]);
    expect(res.statusCode).toBe(503);
    await res.body.dump();
    expect(server.received).toHaveLength(1);
    const error = await rejection(
      request(server.url, {
        dispatcher,
        staunch: { retry: { attempts: 0 } },
      } as Parameters<typeof request>[1]),
    );
    expect(error).toBeInstanceOf(RangeError);
    expect(String(error)).toMatch(/staunch\.retry\.attempts .* got 0/);
    expect(server.received).toHaveLength(1);
  });

  it("rejects with the caller's own abort reason during a backoff, without another attempt", async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const clock = fakeClock();
    const t = tracker();
    const controller = new AbortController();
    const pending = request(server.url, {
      dispatcher: agent({ retry: { attempts: 3 }, clock, on: t.on }),
      signal: controller.signal,
    });
    // The retry is scheduled: the executor sleeps its backoff on the fake clock.
    await until(() => server.received.length === 1 && clock.remaining().length === 1);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    expect(await rejection(pending)).toBe(reason);
    expect(server.received).toHaveLength(1);
    // A retry is said when its attempt leaves: this one never did.
    expect(t.retries).toEqual([]);
  });

  it("rejects with the caller's reason when it aborts while attempt 1 waits, and frees the socket", async () => {
    let closed = 0;
    const server = await serve((req) => {
      req.socket.on('close', () => closed++);
    });
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const pending = request(server.url, {
      dispatcher: agent({ retry: fast }),
      signal: controller.signal,
    });
    await server.seen(1);
    controller.abort(reason);
    expect(await rejection(pending)).toBe(reason);
    await until(() => closed === 1);
    expect(server.received).toHaveLength(1);
  });

  it('sends nothing for a signal aborted before the dispatch', async () => {
    const server = await serve((_req, res) => res.end('ok'));
    const controller = new AbortController();
    const reason = new Error('never went');
    controller.abort(reason);
    const pending = request(server.url, {
      dispatcher: agent({ retry: fast }),
      signal: controller.signal,
    });
    expect(await rejection(pending)).toBe(reason);
    const after = await request(server.url, { dispatcher: agent({ retry: fast }) });
    expect(await after.body.text()).toBe('ok');
    expect(server.received).toHaveLength(1);
  });

  it('aborts attempt 1 at its deadline and sends attempt 2', async () => {
    const server = await serve((_req, res, i) => {
      if (i > 0) res.end('second');
    });
    const clock = fakeClock();
    const pending = request(server.url, {
      dispatcher: agent({ clock, retry: fast, timeout: { attempt: 5_000 } }),
    });
    await server.seen(1);
    expect(clock.remaining()).toEqual([5_000]);
    await clock.advance(5_000);
    const res = await pending;
    expect(await res.body.text()).toBe('second');
    expect(server.received).toHaveLength(2);
  });

  it("ends a success's body with the caller's reason when it aborts mid-body", async () => {
    let closed = 0;
    const server = await serve((req, res) => {
      req.socket.on('close', () => closed++);
      res.write('first part');
    });
    const controller = new AbortController();
    const reason = new Error('caller stopped reading');
    const res = await request(server.url, {
      dispatcher: agent({ retry: fast }),
      signal: controller.signal,
    });
    expect(res.statusCode).toBe(200);
    controller.abort(reason);
    expect(await rejection(res.body.text())).toBe(reason);
    await until(() => closed === 1);
    expect(server.received).toHaveLength(1);
  });

  it('never starves a pool of one connection: small failure bodies are drained, large ones dropped', async () => {
    const big = Buffer.alloc(1024 * 1024, 'x');
    const server = await serve((req, res, i) => {
      const large = req.url === '/large';
      res.writeHead(i % 3 === 2 ? 200 : 503, { 'content-length': String(large ? big.length : 4) });
      res.end(large ? big : 'busy');
    });
    const dispatcher = agent({ retry: fast }, new Agent({ connections: 1 }));
    const small = await request(`${server.url}/small`, { dispatcher });
    expect(small.statusCode).toBe(200);
    await small.body.dump();
    // Drained: the one connection was reused by every attempt.
    expect(server.connections).toBe(1);
    const large = await request(`${server.url}/large`, { dispatcher });
    expect(large.statusCode).toBe(200);
    expect((await large.body.arrayBuffer()).byteLength).toBe(big.length);
    expect(server.received).toHaveLength(6);
    // Too large to drain: each failed attempt's connection was dropped, new ones opened.
    expect(server.connections).toBeGreaterThanOrEqual(3);
  });

  it('streams a large body to the caller with backpressure', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'y');
    const server = await serve((_req, res) => {
      for (let i = 0; i < 64; i++) res.write(chunk);
      res.end();
    });
    const res = await request(server.url, {
      dispatcher: agent({ retry: fast }),
      highWaterMark: 16 * 1024,
    });
    let bytes = 0;
    for await (const piece of res.body) {
      bytes += (piece as Buffer).length;
      await new Promise((r) => setImmediate(r));
    }
    expect(bytes).toBe(64 * chunk.length);
  });

  it('sends a stream body once: not again after a failure status', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const t = tracker();
    const res = await request(server.url, {
      method: 'PUT',
      body: Readable.from([Buffer.from('part 1, '), Buffer.from('part 2')]),
      dispatcher: agent({ retry: fast, on: t.on }),
    });
    expect(res.statusCode).toBe(503);
    await res.body.dump();
    expect(server.received.map((r) => r.body.toString())).toEqual(['part 1, part 2']);
    expect(t.giveUps.map((e) => e.reason)).toEqual(['body-not-replayable']);
  });

  it('never makes two retry layers: a second interceptor below the first passes through', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const inner = createAgent({ retry: fast });
    open.add(inner);
    const outer = inner.compose(retryInterceptor({ retry: fast }));
    const res = await request(server.url, { dispatcher: outer });
    expect(res.statusCode).toBe(503);
    await res.body.dump();
    expect(server.received).toHaveLength(3);
  });

  /** What a legacy handler (undici 7's own API) is handed, dispatched straight to `dispatcher`. */
  function legacyDispatch(dispatcher: Dispatcher, url: string) {
    const { origin, pathname } = new URL(url);
    return new Promise<{ status: number; raw: string[]; body: string; trailers: number }>(
      (resolve, reject) => {
        let status = 0;
        let raw: string[] = [];
        const chunks: Buffer[] = [];
        const handler = {
          onConnect() {},
          onHeaders(statusCode: number, rawHeaders: Buffer[]) {
            status = statusCode;
            raw = rawHeaders.map((b) => b.toString('latin1'));
            return true;
          },
          onData(chunk: Buffer) {
            chunks.push(chunk);
            return true;
          },
          onComplete(trailers: Buffer[] | null) {
            resolve({
              status,
              raw,
              body: Buffer.concat(chunks).toString(),
              trailers: trailers?.length ?? 0,
            });
          },
          onError: reject,
        };
        dispatcher.dispatch({ origin, path: pathname, method: 'GET' }, handler as never);
      },
    );
  }

  // undici 8 has no legacy handler API: nothing to hand over there.
  it.runIf(LEGACY_CORE)(
    'hands a legacy handler under compose the raw headers undici read, as a bare Agent does (case, order, duplicates), after a retry too',
    async () => {
      const server = await serve((_req, res, i) => {
        res.setHeader('X-Mixed-Case', 'One');
        res.setHeader('Set-Cookie', ['a=1', 'b=2']);
        res.writeHead(i === 1 ? 503 : 200);
        res.end(i === 1 ? 'busy' : 'body');
      });
      const bare = open.add(new Agent());
      const expected = await legacyDispatch(bare, server.url);
      expect(expected.raw).toEqual(expect.arrayContaining(['X-Mixed-Case', 'Set-Cookie']));
      const composed = agent({ retry: fast });
      // Attempt 1 a success (request 2), then a 503 and its retry (requests 3 and 4).
      expect(await legacyDispatch(composed, server.url)).toEqual(expected);
      const retried = await legacyDispatch(composed, server.url);
      expect(retried.status).toBe(200);
      expect(retried.body).toBe('body');
      expect(retried.raw).toEqual(expect.arrayContaining(['X-Mixed-Case', 'Set-Cookie']));
      expect(server.received).toHaveLength(4);
    },
  );

  it('surfaces a transport failure as NetworkError with maybeSent and the undici cause', async () => {
    const server = await serve((req) => {
      req.socket.destroy();
    });
    const error = await rejection(
      request(server.url, { method: 'POST', body: 'x', dispatcher: agent({ retry: fast }) }),
    );
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).maybeSent).toBe(true);
    expect(['UND_ERR_SOCKET', 'ECONNRESET']).toContain(
      ((error as NetworkError).cause as { code?: string }).code,
    );
    expect(server.received).toHaveLength(1);
  });

  it('publishes attempt:start, retry and giveup on diagnostics channels with the event payloads', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const log = channelLog([CHANNELS.attemptStart, CHANNELS.retry, CHANNELS.giveUp]);
    const t = tracker();
    try {
      const res = await request(`${server.url}/x?api_key=s3cret`, {
        dispatcher: agent({ retry: { attempts: 2, backoff: constantBackoff(0) }, on: t.on }),
        headers: { authorization: 'Bearer topsecret' },
      });
      await res.body.dump();
    } finally {
      log.stop();
    }
    expect(log.messages.map((m) => m.channel)).toEqual([
      'staunch:attempt:start',
      'staunch:retry',
      'staunch:attempt:start',
      'staunch:giveup',
    ]);
    // The very objects the listeners got: same redaction, no secret.
    expect(log.messages[1]!.message).toBe(t.retries[0]);
    expect(log.messages[3]!.message).toBe(t.giveUps[0]);
    const text = JSON.stringify(log.messages);
    expect(text).not.toContain('s3cret');
    expect(text).not.toContain('topsecret');
    expect((log.messages[0]!.message as { url: string }).url).toBe(`${server.url}/x?api_key=***`);
  });

  it('publishes breaker state changes on staunch:breaker', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(500);
      res.end();
    });
    const log = channelLog([CHANNELS.breaker]);
    const dispatcher: Dispatcher = agent({
      retry: 1,
      breaker: { consecutiveFailures: 2 },
    });
    try {
      for (let i = 0; i < 2; i++) {
        const res = await request(server.url, { dispatcher });
        await res.body.dump();
      }
    } finally {
      log.stop();
    }
    expect(log.messages.map((m) => m.message)).toEqual([
      { key: server.url, from: 'closed', to: 'open' },
    ]);
  });
});
