/** Bodies and keys are the same, byte for byte, on every attempt. */
import { describe, expect, test } from 'vitest';
import { client } from '../helpers/harness.js';
import {
  closedPort,
  httpServer,
  rawServer,
  scriptServer,
  type TestServer,
} from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

let server: TestServer;
const open = closeAfterEach();

/** 503 to the first two requests, then 200. */
async function flaky() {
  server = open.add(await scriptServer({ script: [503, 503] }));
}

function keyed(options: Parameters<typeof client>[0] = {}) {
  const c = client(options);
  open.defer(c.stop);
  return c.fetch;
}

describe('every attempt carries the same body and content type', () => {
  const form = () => {
    const f = new FormData();
    f.append('field', 'value');
    f.append('file', new Blob(['file contents'], { type: 'text/plain' }), 'a.txt');
    return f;
  };
  test.each([
    ['string', () => 'plain text'],
    ['Uint8Array', () => new Uint8Array([0, 1, 2, 255])],
    ['ArrayBuffer', () => new Uint8Array([9, 8, 7]).buffer],
    ['Blob', () => new Blob(['blob bytes'], { type: 'application/x-test' })],
    ['URLSearchParams', () => new URLSearchParams({ a: '1', b: 'two words' })],
    ['FormData', form],
  ])('%s', async (_name, make) => {
    await flaky();
    const fetch = keyed();
    const res = await fetch(server.url, {
      method: 'POST',
      body: make() as NonNullable<RequestInit['body']>,
      idempotencyKey: 'same-key',
    });
    expect(res.status).toBe(200);
    const [first, ...rest] = server.received;
    expect(server.received).toHaveLength(3);
    expect(first!.body.length).toBeGreaterThan(0);
    for (const r of rest) {
      expect(r.body.equals(first!.body)).toBe(true);
      expect(r.headers['content-type']).toBe(first!.headers['content-type']);
      expect(r.headers['idempotency-key']).toBe('same-key');
    }
  });
});

test('idempotency.auto gives a POST one fresh key, the same on every attempt', async () => {
  await flaky();
  const fetch = keyed({ idempotency: { auto: true } });
  await fetch(server.url, { method: 'POST', body: 'x' });
  await fetch(server.url, { method: 'POST', body: 'y' });
  const keys = server.received.map((r) => r.headers['idempotency-key']);
  expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(keys.slice(0, 3)).toEqual([keys[0], keys[0], keys[0]]);
  expect(keys[3]).not.toBe(keys[0]);
});

test('idempotency.auto keeps a key the caller already set, and leaves GET alone', async () => {
  await flaky();
  const fetch = keyed({ idempotency: { auto: true, header: 'X-Request-Key' } });
  await fetch(server.url, { method: 'PATCH', body: 'x', headers: { 'x-request-key': 'mine' } });
  await fetch(server.url);
  expect(server.received.map((r) => r.headers['x-request-key'])).toEqual([
    'mine',
    'mine',
    'mine',
    undefined,
  ]);
});

test('a Request input is cloned once: every attempt sends its body, the caller’s stays unread', async () => {
  await flaky();
  const fetch = keyed();
  const request = new Request(server.url, {
    method: 'PUT',
    body: 'from a Request',
    headers: { 'x-custom': '1' },
  });
  const res = await fetch(request);
  expect(res.status).toBe(200);
  expect(server.received.map((r) => r.body.toString())).toEqual([
    'from a Request',
    'from a Request',
    'from a Request',
  ]);
  expect(server.received.every((r) => r.headers['x-custom'] === '1')).toBe(true);
  expect(request.bodyUsed).toBe(false);
  expect(await request.text()).toBe('from a Request');
});

test('per-request fields never reach the transport', async () => {
  await flaky();
  const c = client();
  open.defer(c.stop);
  await c.fetch(server.url, {
    method: 'PUT',
    body: 'b',
    staunch: { retry: { attempts: 3 }, timeout: { total: 10_000 } },
    idempotencyKey: 'k',
  });
  for (const init of c.calls) {
    expect(Object.keys(init)).not.toContain('staunch');
    expect(Object.keys(init)).not.toContain('idempotencyKey');
    expect(Object.keys(init)).not.toContain('idempotencyKey');
    expect(init.signal).toBeInstanceOf(AbortSignal);
  }
});

describe('a ReadableStream body is cancelled once, with the reason, when the request fails', () => {
  /** A stream of `chunks` chunks of `size` bytes, made as they are pulled, that records each cancel. */
  function source(chunks = 3, size = 0) {
    const cancels: unknown[] = [];
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent++ < chunks) c.enqueue(new TextEncoder().encode(`chunk${sent};`.padEnd(size, '.')));
        else c.close();
      },
      cancel(reason) {
        cancels.push(reason);
      },
    });
    return { stream, cancels };
  }
  /** Far more than socket buffers hold: the server stops it before it ends. */
  const LARGE = [256, 16 * 1024] as const;
  const half = (init: RequestInit & { idempotencyKey?: string }): RequestInit =>
    ({ duplex: 'half', ...init }) as RequestInit;

  test('a transport error with retry: false', async () => {
    const port = await closedPort();
    const c = client({ retry: false });
    open.defer(c.stop);
    const { stream, cancels } = source();
    const err = await c
      .fetch(`http://127.0.0.1:${port}/`, half({ method: 'POST', body: stream }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'STAUNCH_NETWORK' });
    expect(c.calls).toHaveLength(1);
    expect(cancels).toEqual([err]);
    expect(stream.locked).toBe(false);
  });

  test('attempts spent: three refused connections, then one cancel', async () => {
    const port = await closedPort();
    const c = client();
    open.defer(c.stop);
    const { stream, cancels } = source();
    const err = await c
      .fetch(`http://127.0.0.1:${port}/`, half({ method: 'PUT', body: stream }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'STAUNCH_NETWORK', attempts: 3 });
    expect(c.calls).toHaveLength(3);
    expect(cancels).toEqual([err]);
    expect(stream.locked).toBe(false);
  });

  test('a reset once part of the body was sent: not sent again, cancelled once', async () => {
    const raw = open.add(
      await rawServer((socket) => socket.once('data', () => socket.resetAndDestroy())),
    );
    const c = client();
    open.defer(c.stop);
    const { stream, cancels } = source(...LARGE);
    const err = await c
      .fetch(raw.url, half({ method: 'PUT', body: stream, idempotencyKey: 'k' }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'STAUNCH_NETWORK', attempts: 1 });
    expect(raw.connections).toBe(1);
    expect(cancels).toEqual([err]);
    expect(stream.locked).toBe(false);
  });

  test('the caller’s abort: cancelled with the caller’s own reason', async () => {
    server = await httpServer(() => {}); // never answers
    open.add(server);
    const c = client();
    open.defer(c.stop);
    const { stream, cancels } = source(...LARGE);
    const controller = new AbortController();
    const reason = new Error('user gave up');
    const pending = c.fetch(
      server.url,
      half({ method: 'POST', body: stream, signal: controller.signal }),
    );
    await server.seen(1);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(cancels).toEqual([reason]);
    expect(stream.locked).toBe(false);
  });

  test('a mistake in init.staunch: the TypeError, and the stream cancelled with it', async () => {
    const c = client();
    open.defer(c.stop);
    const { stream, cancels } = source();
    const err = await c
      .fetch(
        'http://127.0.0.1:9/',
        half({ method: 'POST', body: stream, staunch: { retry: -1 } } as never),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RangeError);
    expect(c.calls).toHaveLength(0);
    expect(cancels).toEqual([err]);
  });

  test('a request that succeeds: the whole stream sent, never cancelled, its reader released', async () => {
    server = await httpServer((_req, res) => res.end('ok'));
    open.add(server);
    const c = client();
    open.defer(c.stop);
    const { stream, cancels } = source();
    const res = await c.fetch(server.url, half({ method: 'POST', body: stream }));
    expect(await res.text()).toBe('ok');
    expect(server.received.map((r) => r.body.toString())).toEqual(['chunk1;chunk2;chunk3;']);
    expect(cancels).toEqual([]);
    expect(stream.locked).toBe(false);
  });
});
