import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { NetworkError } from '../../src/errors.js';
import { createAgent, createFetch } from '../../src/undici/index.js';
import { fakeClock } from '../helpers/clock.js';
import { closeAfterEach, keepAlivePeer, rejection, tracker } from './support.js';

/** Closed after each test. */
const open = closeAfterEach();

/**
 * A peer that answers the first request of each connection and, on the
 * second, receives it and closes the connection without a byte of answer:
 * the stale keep-alive race, made deterministic.
 */
async function dropsSecondRequest() {
  return open.add(await keepAlivePeer({ onRequest: (r) => (r.index === 1 ? 'drop' : 'answer') }));
}

describe('the stale keep-alive race', () => {
  it('a GET that fails on a reused connection before any response byte is sent again at once', async () => {
    const peer = await dropsSecondRequest();
    const clock = fakeClock();
    const t = tracker();
    const stop = clock.autoAdvance(t.idle);
    // A backoff of a minute: only the immediate resend can finish this test.
    const dispatcher = createAgent({
      clock,
      on: t.on,
      connections: 1,
      retry: { attempts: 3, backoff: () => 60_000 },
    });
    open.add(dispatcher);
    try {
      const first = await request(`${peer.url}/1`, { dispatcher });
      expect(await first.body.text()).toBe('ok');
      const second = await request(`${peer.url}/2`, { dispatcher });
      expect(second.statusCode).toBe(200);
      expect(await second.body.text()).toBe('ok');
    } finally {
      stop();
    }
    expect(peer.requests.map((r) => [r.path, r.connection])).toEqual([
      ['/1', 0],
      ['/2', 0],
      ['/2', 1],
    ]);
    expect(t.retries).toHaveLength(1);
    expect(t.retries[0]).toMatchObject({ attempt: 1, delay: 0, reason: 'maybe-sent' });
    expect(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']).toContain(t.retries[0]!.code);
  });

  it('a POST without a key is not sent twice: it fails with maybeSent', async () => {
    const peer = await dropsSecondRequest();
    const t = tracker();
    const dispatcher = createAgent({ on: t.on, connections: 1, retry: { attempts: 3 } });
    open.add(dispatcher);
    await (await request(`${peer.url}/1`, { dispatcher })).body.dump();
    const error = await rejection(
      request(`${peer.url}/charge`, { method: 'POST', body: 'order-7', dispatcher }),
    );
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).maybeSent).toBe(true);
    expect(peer.requests.filter((r) => r.method === 'POST').map((r) => r.body)).toEqual([
      'order-7',
    ]);
    expect(t.giveUps.map((e) => e.reason)).toEqual(['not-replayable']);
  });

  it('the same through createFetch (undici fetch wraps the error; the mark is on its cause)', async () => {
    const peer = await dropsSecondRequest();
    const clock = fakeClock();
    const t = tracker();
    const stop = clock.autoAdvance(t.idle);
    const fetch = createFetch({
      clock,
      on: t.on,
      connections: 1,
      retry: { attempts: 3, backoff: () => 60_000 },
    });
    open.add(fetch.dispatcher);
    try {
      expect(await (await fetch(`${peer.url}/1`)).text()).toBe('ok');
      expect(await (await fetch(`${peer.url}/2`)).text()).toBe('ok');
    } finally {
      stop();
    }
    expect(t.retries.map((e) => [e.delay, e.reason])).toEqual([[0, 'maybe-sent']]);
    expect(peer.requests).toHaveLength(3);
  });

  it('hit at 19–21 ms against a peer that drops connections idle for 20 ms: every GET succeeds, no POST arrives twice', async () => {
    const peer = await keepAlivePeer({ idleMs: 20 });
    open.add(peer);
    const t = tracker();
    const dispatcher = createAgent({ connections: 1, on: t.on });
    open.add(dispatcher);
    const gets: string[] = [];
    let postsFailed = 0;
    for (let i = 0; i < 60; i++) {
      await new Promise((resolve) => setTimeout(resolve, 19 + (i % 3)));
      if (i % 3 !== 2) {
        const res = await request(`${peer.url}/get-${i}`, { dispatcher });
        gets.push(`${res.statusCode} ${await res.body.text()}`);
        continue;
      }
      try {
        const res = await request(`${peer.url}/post`, {
          method: 'POST',
          body: `post-${i}`,
          dispatcher,
        });
        await res.body.dump();
      } catch (error) {
        // The only acceptable failure: said to have maybe been sent, never resent.
        expect(error).toBeInstanceOf(NetworkError);
        expect((error as NetworkError).maybeSent).toBe(true);
        postsFailed++;
      }
    }
    expect(gets).toEqual(Array(40).fill('200 ok'));
    const posts = peer.requests.filter((r) => r.method === 'POST').map((r) => r.body);
    expect(new Set(posts).size).toBe(posts.length);
    // The race did happen (else this test proves nothing), and each time a GET
    // met it, it was sent again at once: no backoff wait.
    expect(t.retries.length).toBeGreaterThan(0);
    expect(t.retries.every((e) => e.delaySource === 'backoff' && e.reason === 'maybe-sent')).toBe(
      true,
    );
    expect(t.waits).toEqual([]);
    expect(t.giveUps.filter((e) => e.reason === 'not-replayable')).toHaveLength(postsFailed);
  });
});
