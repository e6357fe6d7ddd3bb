/**
 * Every row of DESIGN.md's retry table, against real servers that count what
 * they received.
 */
import { createServer } from 'node:http';
import { describe, expect, test } from 'vitest';
import {
  exponentialBackoff,
  type GiveUpEvent,
  NetworkError,
  type RetryEvent,
} from '../../src/index.js';
import { client, waits } from '../helpers/harness.js';
import { closedPort, rawServer, scriptServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();

/** A server answering `statuses[i]` to the i-th request, then 200. */
async function answering(statuses: number[], headers: Record<string, string> = {}) {
  const script = statuses.map((status, i) =>
    status === 200 ? { body: 'ok' } : { status, headers, body: `failure ${i}` },
  );
  return cleanup.add(await scriptServer({ script, after: { body: 'ok' } }));
}

function setup(options: Parameters<typeof client>[0] = {}, hold?: () => boolean) {
  const events = { retry: [] as RetryEvent[], giveUp: [] as GiveUpEvent[] };
  const c = client(
    {
      ...options,
      on: {
        retry: (e) => {
          events.retry.push(e);
          options.on?.retry?.(e);
        },
        giveUp: (e) => events.giveUp.push(e),
      },
    },
    hold === undefined ? {} : { hold },
  );
  cleanup.defer(c.stop);
  return { ...c, events };
}

/**
 * A port that refuses the first attempt and opens (a real server, recording
 * each body) when the first retry is scheduled; the clock waits for it.
 */
async function opensOnRetry(options: Parameters<typeof client>[0] = {}) {
  const port = await closedPort();
  const bodies: string[] = [];
  let opening = false;
  let server: ReturnType<typeof createServer> | undefined;
  const c = setup(
    {
      ...options,
      on: {
        retry: () => {
          if (server) return;
          opening = true;
          server = createServer((req, res) => {
            let body = '';
            req.on('data', (chunk) => {
              body += chunk;
            });
            req.on('end', () => {
              bodies.push(`${req.method} ${body}`);
              res.end('created');
            });
          }).listen(port, '127.0.0.1', () => {
            opening = false;
          });
          cleanup.defer(() => new Promise((r) => server?.close(r)));
        },
      },
    },
    () => opening,
  );
  return { ...c, url: `http://127.0.0.1:${port}/`, bodies };
}

describe('connection never established: every method', () => {
  test('a refused POST is sent again, and arrives exactly once when the port opens', async () => {
    const { fetch, url, bodies, events } = await opensOnRetry();
    const res = await fetch(url, { method: 'POST', body: 'order-1' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('created');
    expect(bodies).toEqual(['POST order-1']);
    expect(events.retry[0]).toMatchObject({ attempt: 1, reason: 'unsent', code: 'ECONNREFUSED' });
  });

  test('refused on every attempt: NetworkError with maybeSent false and the cause code', async () => {
    const port = await closedPort();
    const { fetch, calls, events } = setup({ retry: 4 });
    const err = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: 'x' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NetworkError);
    expect(err).toMatchObject({ code: 'STAUNCH_NETWORK', maybeSent: false, attempts: 4 });
    expect(errorCodeOf((err as Error).cause)).toBe('ECONNREFUSED');
    expect(calls).toHaveLength(4);
    expect(events.giveUp).toEqual([expect.objectContaining({ reason: 'attempts', attempts: 4 })]);
  });
});

function errorCodeOf(e: unknown): unknown {
  let cur = e as { code?: unknown; cause?: unknown } | undefined;
  while (cur && cur.code === undefined) cur = cur.cause as typeof cur;
  return cur?.code;
}

describe('the server said it did not process it: every method', () => {
  test.each([
    [429, {}],
    [408, {}],
    [503, { 'retry-after': '1' }],
    [503, { 'retry-after-ms': '20' }],
  ])('%i %o on a POST is retried', async (status, headers) => {
    const server = await answering([status], headers);
    const { fetch } = setup();
    const res = await fetch(`${server.url}/pay`, { method: 'POST', body: 'charge' });
    expect(res.status).toBe(200);
    expect(server.received.map((r) => `${r.method} ${r.body}`)).toEqual([
      'POST charge',
      'POST charge',
    ]);
  });
});

describe('x-should-retry: the server’s word wins', () => {
  test('true on a 400 POST: retried', async () => {
    const server = await answering([400], { 'x-should-retry': 'true' });
    const { fetch } = setup();
    expect((await fetch(server.url, { method: 'POST', body: 'b' })).status).toBe(200);
    expect(server.received).toHaveLength(2);
  });

  test('false on a 503 GET with Retry-After: not retried, the 503 comes back', async () => {
    const server = await answering([503], { 'x-should-retry': 'false', 'retry-after': '1' });
    const { fetch, events } = setup();
    const res = await fetch(server.url);
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('failure 0');
    expect(server.received).toHaveLength(1);
    expect(events.giveUp).toEqual([]);
  });
});

describe('500, 502, 503 without Retry-After, 504, 529: replayable requests only', () => {
  test.each([500, 502, 503, 504, 529])(
    '%i: GET retried, POST not, keyed POST retried',
    async (status) => {
      const server = await answering([status, status, 200, status, status]);
      const { fetch, events } = setup();

      const get = await fetch(`${server.url}/get`);
      expect(get.status).toBe(200);
      expect(server.received).toHaveLength(3);

      const post = await fetch(`${server.url}/post`, { method: 'POST', body: 'p' });
      expect(post.status).toBe(status);
      expect(await post.text()).toBe('failure 3');
      expect(server.received).toHaveLength(4);
      expect(events.giveUp.at(-1)).toMatchObject({ reason: 'not-replayable', status, attempts: 1 });

      const keyed = await fetch(`${server.url}/keyed`, {
        method: 'POST',
        body: 'k',
        idempotencyKey: 'order-42',
      });
      expect(keyed.status).toBe(200);
      const tail = server.received.slice(4);
      expect(tail.map((r) => r.headers['idempotency-key'])).toEqual(['order-42', 'order-42']);
      expect(tail.map((r) => r.body.toString())).toEqual(['k', 'k']);
    },
  );

  test('after the last attempt the retryable status comes back with its body intact', async () => {
    const server = await answering([502, 502, 502]);
    const { fetch, events } = setup();
    const res = await fetch(server.url);
    expect(res.status).toBe(502);
    expect(await res.text()).toBe('failure 2');
    expect(server.received).toHaveLength(3);
    expect(events.giveUp).toEqual([
      expect.objectContaining({ reason: 'attempts', status: 502, attempts: 3 }),
    ]);
  });
});

describe('reset after the request was sent: replayable requests only', () => {
  async function resetting() {
    const server = await rawServer((socket) => {
      socket.once('data', () => socket.destroy());
    });
    cleanup.add(server);
    return server;
  }

  test('a GET is retried on a fresh connection', async () => {
    const server = await resetting();
    const { fetch, events } = setup();
    const err = await fetch(server.url).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'STAUNCH_NETWORK', maybeSent: true });
    expect(server.connections).toBe(3);
    expect(events.retry.map((e) => e.reason)).toEqual(['maybe-sent', 'maybe-sent']);
  });

  test('a POST is not retried and says it may have been sent', async () => {
    const server = await resetting();
    const { fetch, events } = setup();
    const err = await fetch(server.url, { method: 'POST', body: 'once' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(err).toMatchObject({ maybeSent: true, attempts: 1 });
    expect((err as Error).message).toMatch(/may have been sent/);
    expect(server.connections).toBe(1);
    expect(server.data[0]!.toString()).toContain('once');
    expect(events.giveUp).toEqual([expect.objectContaining({ reason: 'not-replayable' })]);
  });

  test('a keyed POST is retried with the same key', async () => {
    const server = await resetting();
    const { fetch } = setup();
    await fetch(server.url, { method: 'POST', body: 'b', idempotencyKey: 'k-1' }).catch(() => {});
    expect(server.connections).toBe(3);
    for (const d of server.data) expect(d.toString()).toMatch(/idempotency-key: k-1/i);
  });
});

describe('any other 4xx: never', () => {
  test.each([400, 401, 403, 404, 409, 422])('%i is returned at once', async (status) => {
    const server = await answering([status]);
    const { fetch, events } = setup();
    const res = await fetch(server.url);
    expect(res.status).toBe(status);
    expect(server.received).toHaveLength(1);
    expect(events.retry).toEqual([]);
    expect(events.giveUp).toEqual([]);
  });
});

describe('a ReadableStream body', () => {
  const stream = (text: string) =>
    new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(text));
        c.close();
      },
    });

  test('is never sent twice, even with a key and a retryable status', async () => {
    const server = await answering([503]);
    const { fetch, events } = setup();
    const res = await fetch(server.url, {
      method: 'PUT',
      body: stream('streamed'),
      duplex: 'half',
      idempotencyKey: 'k',
    } as RequestInit);
    expect(res.status).toBe(503);
    expect(server.received.map((r) => r.body.toString())).toEqual(['streamed']);
    expect(events.giveUp).toEqual([expect.objectContaining({ reason: 'body-not-replayable' })]);
  });

  test('is sent whole on the next attempt when the first never connected', async () => {
    const { fetch, url, bodies } = await opensOnRetry();
    const res = await fetch(url, {
      method: 'POST',
      body: stream('all of it'),
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(200);
    expect(bodies).toEqual(['POST all of it']);
  });
});

test('backoff delays follow the default generator (decorrelated jitter, random 0.5)', async () => {
  const server = await answering([503, 503, 503, 503]);
  const { fetch, clock } = setup({ retry: 5 });
  await fetch(server.url);
  // min(20 s, U(250, 3 × previous)), previous = 250 at first: 250 + 0.5 × (3p − 250).
  expect(waits(clock)).toEqual([500, 875, 1437.5, 2281.25]);
});

test('backoff delays follow a configured generator (full jitter, random 0.5)', async () => {
  const server = await answering([503, 503, 503, 503]);
  const { fetch, clock } = setup({
    retry: { attempts: 5, backoff: exponentialBackoff({ jitter: 'full' }) },
  });
  await fetch(server.url);
  expect(waits(clock)).toEqual([125, 250, 500, 1000]);
});
