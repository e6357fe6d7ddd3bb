import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { NetworkError } from '../../src/errors.js';
import { createAgent, createFetch, retryInterceptor } from '../../src/undici/index.js';
import { closeAfterEach, keepAlivePeer, rejection, tracker } from './support.js';

/** Closed after each test. */
const open = closeAfterEach();

/**
 * A server closes an idle keep-alive connection, and the client's next
 * request is a POST without an idempotency key. The peer's `closeIdle()`
 * closes the connection with close(2): on loopback the FIN is in the
 * client's receive queue before the POST is dispatched, so these tests need
 * no timing. The POST is dispatched straight from the previous response's
 * end (an I/O callback), the case where undici alone writes it on the dead
 * connection: the peer never reads it, and the client gets "other side
 * closed", which it cannot tell from a server that read it.
 */
describe('a keep-alive connection the server closed before the next request', () => {
  it('createAgent: a keyless POST goes once, on a fresh connection, without a retry', async () => {
    const peer = open.add(await keepAlivePeer());
    const t = tracker();
    const dispatcher = open.add(createAgent({ on: t.on, connections: 1, retry: { attempts: 3 } }));
    for (let round = 0; round < 5; round++) {
      await (await request(`${peer.url}/get-${round}`, { dispatcher })).body.text();
      expect(peer.closeIdle()).toBe(1);
      const res = await request(`${peer.url}/charge`, {
        method: 'POST',
        body: `order-${round}`,
        dispatcher,
      });
      expect(await res.body.text()).toBe('ok');
    }
    const posts = peer.requests.filter((r) => r.method === 'POST');
    expect(posts.map((r) => r.body)).toEqual([
      'order-0',
      'order-1',
      'order-2',
      'order-3',
      'order-4',
    ]);
    // Each POST was the first request of a fresh connection: never written on the closed one.
    expect(posts.map((r) => r.index)).toEqual([0, 0, 0, 0, 0]);
    expect(new Set(posts.map((r) => r.connection)).size).toBe(5);
    expect(t.retries).toEqual([]);
    expect(t.giveUps).toEqual([]);
  });

  it('retryInterceptor on a plain undici Agent: the same', async () => {
    const peer = open.add(await keepAlivePeer());
    const t = tracker();
    const agent = open.add(new Agent({ connections: 1 }));
    const dispatcher = agent.compose(retryInterceptor({ on: t.on }));
    await (await request(`${peer.url}/get`, { dispatcher })).body.text();
    expect(peer.closeIdle()).toBe(1);
    const res = await request(`${peer.url}/charge`, { method: 'PATCH', body: 'x', dispatcher });
    expect(await res.body.text()).toBe('ok');
    expect(peer.requests.map((r) => [r.method, r.connection])).toEqual([
      ['GET', 0],
      ['PATCH', 1],
    ]);
    expect(t.retries).toEqual([]);
  });

  it('createFetch (staunch/undici): the same', async () => {
    const peer = open.add(await keepAlivePeer());
    const t = tracker();
    const fetch = createFetch({ on: t.on, connections: 1 });
    open.add(fetch.dispatcher);
    for (let round = 0; round < 3; round++) {
      await (await fetch(`${peer.url}/get-${round}`)).text();
      expect(peer.closeIdle()).toBe(1);
      const res = await fetch(`${peer.url}/charge`, { method: 'POST', body: `order-${round}` });
      expect(await res.text()).toBe('ok');
    }
    const posts = peer.requests.filter((r) => r.method === 'POST');
    expect(posts.map((r) => [r.body, r.index])).toEqual([
      ['order-0', 0],
      ['order-1', 0],
      ['order-2', 0],
    ]);
    expect(t.retries).toEqual([]);
  });

  it('a POST aborted while it waits for the next poll rejects with the reason, unsent', async () => {
    const peer = open.add(await keepAlivePeer());
    const fetch = createFetch({ connections: 1 });
    open.add(fetch.dispatcher);
    const controller = new AbortController();
    const sent = fetch(`${peer.url}/charge`, {
      method: 'POST',
      body: 'x',
      signal: controller.signal,
    });
    controller.abort(new Error('changed my mind'));
    expect(((await rejection(sent)) as Error).message).toBe('changed my mind');
    await (await fetch(`${peer.url}/after`)).text();
    expect(peer.requests.map((r) => r.path)).toEqual(['/after']);
    expect(peer.connections).toBe(1);
  });

  it('the same through createAgent: the caller aborts before the poll', async () => {
    const peer = open.add(await keepAlivePeer());
    const t = tracker();
    const dispatcher = open.add(createAgent({ on: t.on, connections: 1 }));
    const controller = new AbortController();
    const sent = request(`${peer.url}/charge`, {
      method: 'POST',
      body: 'x',
      signal: controller.signal,
      dispatcher,
    });
    controller.abort(new Error('changed my mind'));
    // undici 7 hands the reason back as it is; under undici 8 it arrives wrapped in a NetworkError.
    expect(((await rejection(sent)) as Error).message).toContain('changed my mind');
    await (await request(`${peer.url}/after`, { dispatcher })).body.text();
    expect(peer.requests.map((r) => r.path)).toEqual(['/after']);
    expect(t.retries).toEqual([]);
  });
});

describe('what stays maybe sent', () => {
  it('a POST the server read, then closed the connection without answering: not resent', async () => {
    const peer = open.add(
      await keepAlivePeer({ onRequest: (r) => (r.method === 'POST' ? 'drop' : 'answer') }),
    );
    const t = tracker();
    const fetch = createFetch({ on: t.on, connections: 1, retry: { attempts: 3 } });
    open.add(fetch.dispatcher);
    await (await fetch(`${peer.url}/get`)).text();
    const error = await rejection(fetch(`${peer.url}/charge`, { method: 'POST', body: 'order-9' }));
    expect((error as NetworkError).maybeSent).toBe(true);
    expect(peer.requests.filter((r) => r.method === 'POST').map((r) => r.body)).toEqual([
      'order-9',
    ]);
    expect(t.giveUps.map((e) => e.reason)).toEqual(['not-replayable']);
  });

  it('a POST that crossed the server’s close (never read by it) looks the same: not resent', async () => {
    // The server closed as the request arrived and never read it; the client sees what it
    // sees when a server reads a request and dies: its write, then a FIN, no byte of answer.
    const peer = open.add(
      await keepAlivePeer({ onRequest: (r) => (r.method === 'POST' ? 'unread' : 'answer') }),
    );
    const t = tracker();
    const dispatcher = open.add(createAgent({ on: t.on, connections: 1, retry: { attempts: 3 } }));
    await (await request(`${peer.url}/get`, { dispatcher })).body.text();
    const error = await rejection(
      request(`${peer.url}/charge`, { method: 'POST', body: 'order-9', dispatcher }),
    );
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).maybeSent).toBe(true);
    expect(peer.requests.map((r) => r.method)).toEqual(['GET']);
    expect(peer.connections).toBe(1);
    expect(t.giveUps.map((e) => e.reason)).toEqual(['not-replayable']);
  });
});

describe("retiring idle connections ahead of the server's Keep-Alive hint", () => {
  // Three requests back to back: a connection kept for any time at all is reused.
  it.each([
    { hint: 2, margin: undefined, connections: [0, 1, 2], what: 'default margin (2 s): no reuse' },
    { hint: 3, margin: undefined, connections: [0, 0, 0], what: 'default margin: kept 1 s' },
    { hint: 2, margin: 1_000, connections: [0, 0, 0], what: 'keepAlive.margin 1 s: kept 1 s' },
    { hint: 1, margin: 1_000, connections: [0, 1, 2], what: 'a hint at the margin: no reuse' },
  ])('timeout=$hint, $what', async ({ hint, margin, connections }) => {
    const peer = open.add(await keepAlivePeer({ hint }));
    const dispatcher = open.add(
      createAgent({ connections: 1, ...(margin !== undefined && { keepAlive: { margin } }) }),
    );
    for (const path of ['/1', '/2', '/3']) {
      await (await request(`${peer.url}${path}`, { dispatcher })).body.text();
    }
    expect(peer.requests.map((r) => r.connection)).toEqual(connections);
  });
});
