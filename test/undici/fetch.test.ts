import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { NetworkError, SsrfBlockedError } from '../../src/errors.js';
import { constantBackoff } from '../../src/retry/backoff.js';
import { CHANNELS, createFetch } from '../../src/undici/index.js';
import { httpServer, type TestServer } from '../helpers/server.js';
import { channelLog, closeAfterEach, rejection, tracker } from './support.js';

/** Closed after each test. */
const open = closeAfterEach();

async function serve(handler: Parameters<typeof httpServer>[0]): Promise<TestServer> {
  return open.add(await httpServer(handler));
}

function client(options: Parameters<typeof createFetch>[0] = {}) {
  const fetch = createFetch(options);
  open.add(fetch.dispatcher);
  return fetch;
}

const fast = { attempts: 3, backoff: constantBackoff(0) };

describe('createFetch from staunch/undici', () => {
  it('retries through the core adapter and resends the same body', async () => {
    const server = await serve((_req, res, i) => {
      res.writeHead(i === 0 ? 503 : 200);
      res.end(i === 0 ? 'busy' : 'stored');
    });
    const fetch = client({ retry: fast });
    const res = await fetch(`${server.url}/doc`, { method: 'PUT', body: '{"v":1}' });
    expect(await res.text()).toBe('stored');
    expect(server.received.map((r) => [r.method, r.body.toString()])).toEqual([
      ['PUT', '{"v":1}'],
      ['PUT', '{"v":1}'],
    ]);
  });

  it('never retries in two layers: attempts reach the server exactly `attempts` times', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    const res = await client({ retry: fast })(server.url);
    expect(res.status).toBe(503);
    expect(server.received).toHaveLength(3);
  });

  it('takes the per-request fields on the init, and Request inputs', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(500);
      res.end();
    });
    const fetch = client({ retry: fast });
    const res = await fetch(new Request(`${server.url}/r`, { method: 'POST', body: 'b' }), {
      idempotencyKey: 'k-1',
      staunch: { retry: 2 },
    });
    expect(res.status).toBe(500);
    expect(server.received.map((r) => [r.headers['idempotency-key'], r.body.toString()])).toEqual([
      ['k-1', 'b'],
      ['k-1', 'b'],
    ]);
  });

  it('throws NetworkError with maybeSent for a POST cut off after it was sent', async () => {
    const server = await serve((req) => req.socket.destroy());
    const error = await rejection(
      client({ retry: fast })(server.url, { method: 'POST', body: 'x' }),
    );
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).maybeSent).toBe(true);
    expect(server.received).toHaveLength(1);
  });

  it('throws the SsrfBlockedError itself, not a NetworkError around it', async () => {
    const server = await serve((_req, res) => res.end());
    const error = await rejection(client({ ssrf: true })(server.url));
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect(server.connections).toBe(0);
  });

  it('publishes on the diagnostics channels alongside the listeners', async () => {
    const server = await serve((_req, res, i) => {
      res.writeHead(i === 0 ? 503 : 200);
      res.end();
    });
    const t = tracker();
    const log = channelLog([CHANNELS.attemptStart, CHANNELS.retry]);
    try {
      await (await client({ retry: fast, on: t.on })(server.url)).text();
    } finally {
      log.stop();
    }
    expect(log.messages.map((m) => m.channel)).toEqual([
      'staunch:attempt:start',
      'staunch:retry',
      'staunch:attempt:start',
    ]);
    expect(log.messages[1]!.message).toBe(t.retries[0]);
  });
});

// createFetch of staunch/undici is built on dispatch, not on undici.fetch: what it returns
// and refuses must be what a fetch returns and refuses.

describe('the Response of createFetch from staunch/undici', () => {
  it('is a global Response with status, statusText, headers (set-cookie kept apart) and url', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.setHeader('x-one', 'v');
      res.writeHead(201, 'Made');
      res.end('hello');
    });
    const res = await client()(`${server.url}/p?q=1#frag`);
    expect(res).toBeInstanceOf(Response);
    expect(res.status).toBe(201);
    expect(res.statusText).toBe('Made');
    expect(res.ok).toBe(true);
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(res.headers.get('x-one')).toBe('v');
    expect(res.url).toBe(`${server.url}/p?q=1`);
    expect(res.redirected).toBe(false);
    expect(await res.text()).toBe('hello');
    expect(server.received.map((r) => r.path)).toEqual(['/p?q=1']);
    expect(server.received[0]!.headers.accept).toBe('*/*');
    expect(server.received[0]!.headers['user-agent']).toBe('node');
  });

  it('has no body for HEAD and 204', async () => {
    const server = await serve((req, res) => {
      res.writeHead(req.method === 'HEAD' ? 200 : 204, { 'content-length': '0' });
      res.end();
    });
    const fetch = client();
    expect((await fetch(server.url, { method: 'HEAD' })).body).toBeNull();
    expect((await fetch(server.url, { method: 'DELETE' })).body).toBeNull();
    expect(server.received.map((r) => r.method)).toEqual(['HEAD', 'DELETE']);
  });

  it('decodes a gzip body, as fetch does', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end(gzipSync('compressed text'));
    });
    const res = await client()(server.url);
    expect(await res.text()).toBe('compressed text');
    expect(server.received[0]!.headers['accept-encoding']).toBe('gzip, deflate, br');
  });

  it('streams a large body with backpressure, whole', async () => {
    const big = Buffer.alloc(4 * 1024 * 1024, 'z');
    const server = await serve((_req, res) => res.end(big));
    const res = await client()(server.url);
    let total = 0;
    for await (const chunk of res.body!) {
      total += chunk.byteLength;
      if (total < 256 * 1024) await new Promise((r) => setImmediate(r));
    }
    expect(total).toBe(big.length);
  });

  it('cancelling the body closes the connection under it', async () => {
    let closed: () => void = () => {};
    const gone = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const server = await serve((_req, res) => {
      res.writeHead(200);
      res.write('first');
      res.on('close', () => closed());
    });
    const res = await client()(server.url);
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('first');
    await reader.cancel();
    await gone;
    expect(server.received).toHaveLength(1);
  });

  it("the caller's abort rejects with its reason, before the headers and while the body is read", async () => {
    const server = await serve((req, res) => {
      if (req.url === '/slow') return; // never answers
      res.writeHead(200);
      res.write('part');
    });
    const fetch = client();
    const before = new AbortController();
    const pending = fetch(`${server.url}/slow`, { signal: before.signal });
    await server.seen(1);
    const reason1 = new Error('no longer needed');
    before.abort(reason1);
    expect(await rejection(pending)).toBe(reason1);

    const during = new AbortController();
    const res = await fetch(`${server.url}/body`, { signal: during.signal });
    const reader = res.body!.getReader();
    await reader.read();
    const reason2 = new Error('stop reading');
    during.abort(reason2);
    expect(await rejection(reader.read())).toBe(reason2);
    expect(server.received.map((r) => r.path)).toEqual(['/slow', '/body']);
  });
});

describe('redirects of createFetch from staunch/undici', () => {
  async function redirecting(): Promise<TestServer> {
    return serve((req, res) => {
      if (req.url === '/from') {
        res.writeHead(302, { location: '/to' });
        res.end('moved');
      } else res.end('arrived');
    });
  }

  it('follows by default: url and redirected say where it ended', async () => {
    const server = await redirecting();
    const res = await client()(`${server.url}/from`);
    expect(await res.text()).toBe('arrived');
    expect(res.url).toBe(`${server.url}/to`);
    expect(res.redirected).toBe(true);
    expect(server.received.map((r) => r.path)).toEqual(['/from', '/to']);
  });

  it("returns the redirect itself with redirect: 'manual'", async () => {
    const server = await redirecting();
    const res = await client()(`${server.url}/from`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/to');
    expect(res.redirected).toBe(false);
    expect(await res.text()).toBe('moved');
    expect(server.received).toHaveLength(1);
  });

  it("fails with a TypeError with redirect: 'error', not retried", async () => {
    const server = await redirecting();
    const error = await rejection(
      client({ retry: fast })(`${server.url}/from`, { redirect: 'error' }),
    );
    expect(error).toBeInstanceOf(TypeError);
    expect(server.received).toHaveLength(1);
  });
});

describe('request bodies of createFetch from staunch/undici, resent after a 503', () => {
  async function flaky(): Promise<TestServer> {
    return serve((_req, res, i) => {
      res.writeHead(i === 0 ? 503 : 200);
      res.end();
    });
  }

  const cases: [string, () => NonNullable<RequestInit['body']>, string, string | RegExp][] = [
    ['a string', () => 'text body', 'text body', 'text/plain;charset=UTF-8'],
    ['bytes', () => new TextEncoder().encode('byte body'), 'byte body', ''],
    [
      'URLSearchParams',
      () => new URLSearchParams({ a: '1', b: 'two' }),
      'a=1&b=two',
      'application/x-www-form-urlencoded;charset=UTF-8',
    ],
    ['a Blob', () => new Blob(['blob body'], { type: 'text/x-blob' }), 'blob body', 'text/x-blob'],
  ];
  for (const [name, make, sent, type] of cases) {
    it(`${name}: the same bytes and content-type on both attempts`, async () => {
      const server = await flaky();
      const res = await client({ retry: fast })(server.url, { method: 'PUT', body: make() });
      expect(res.status).toBe(200);
      expect(server.received.map((r) => r.body.toString())).toEqual([sent, sent]);
      for (const r of server.received) expect(r.headers['content-type'] ?? '').toMatch(type);
    });
  }

  it('FormData: one encoding, the same boundary on both attempts', async () => {
    const server = await flaky();
    const form = new FormData();
    form.set('field', 'value');
    await client({ retry: fast })(server.url, { method: 'PUT', body: form });
    const [a, b] = server.received;
    expect(a!.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(b!.headers['content-type']).toBe(a!.headers['content-type']);
    expect(b!.body.toString()).toBe(a!.body.toString());
    expect(a!.body.toString()).toContain('value');
  });

  it('a ReadableStream: sent once; after it was read, the 503 comes back', async () => {
    const server = await flaky();
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('streamed'));
        c.close();
      },
    });
    const res = await client({ retry: fast })(server.url, {
      method: 'PUT',
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(503);
    expect(server.received.map((r) => r.body.toString())).toEqual(['streamed']);
  });

  it('the per-request staunch field overrides the client (one attempt)', async () => {
    const server = await flaky();
    const res = await client({ retry: fast })(server.url, {
      staunch: { retry: { attempts: 1 } },
    } as RequestInit);
    expect(res.status).toBe(503);
    expect(server.received).toHaveLength(1);
  });
});

describe('requests fetch refuses, refused by createFetch from staunch/undici', () => {
  it('a GET with a body, a forbidden method, credentials in the URL: TypeError, nothing sent', async () => {
    const server = await serve((_req, res) => res.end());
    const fetch = client({ retry: fast });
    expect(await rejection(fetch(server.url, { method: 'GET', body: 'x' }))).toBeInstanceOf(
      TypeError,
    );
    expect(await rejection(fetch(server.url, { method: 'TRACE' }))).toBeInstanceOf(TypeError);
    const withUser = server.url.replace('http://', 'http://user:pw@');
    expect(await rejection(fetch(withUser))).toBeInstanceOf(TypeError);
    expect(server.received).toHaveLength(0);
    expect(server.connections).toBe(0);
  });

  it('a stream body without duplex: TypeError, nothing sent', async () => {
    const server = await serve((_req, res) => res.end());
    const body = new ReadableStream({ start: (c) => c.close() });
    const error = await rejection(client()(server.url, { method: 'POST', body }));
    expect(error).toBeInstanceOf(TypeError);
    expect(server.connections).toBe(0);
  });
});
