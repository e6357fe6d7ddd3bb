/** Deadlines that always hold, and a caller's abort that wins at once. */
import { getEventListeners } from 'node:events';
import type { Socket } from 'node:net';
import { describe, expect, test } from 'vitest';
import { DeadlineExceededError, isStaunchError, StaunchError } from '../../src/index.js';
import { flush, until } from '../helpers/clock.js';
import { client, settled } from '../helpers/harness.js';
import { type RawServer, rawServer, scriptServer, type TestServer } from '../helpers/server.js';
import { closeAfterEach } from '../helpers/teardown.js';

const cleanup = closeAfterEach();

/** A server that reads the request and never answers. */
async function silent(): Promise<RawServer> {
  const server = await rawServer(() => {});
  cleanup.add(server);
  return server;
}

async function always503(): Promise<TestServer> {
  return cleanup.add(await scriptServer({ after: { status: 503, body: 'down' } }));
}

/** A client whose clock moves only when the test moves it. */
function manual(options: Parameters<typeof client>[0] = {}) {
  const c = client(options, { hold: () => true });
  cleanup.defer(c.stop);
  return c;
}

describe("the caller's signal", () => {
  test('aborting mid-sleep rejects at once with the caller’s own reason, leaving nothing behind', async () => {
    const server = await always503();
    const { fetch, clock } = manual({ retry: 5 });
    const controller = new AbortController();
    const result = settled(fetch(server.url, { signal: controller.signal }));
    await until(() => clock.remaining().length === 1 && clock.remaining()[0]! < 60_000);
    expect(server.received).toHaveLength(1);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await flush(2);
    expect(result).toMatchObject({ done: true, error: reason });
    expect(clock.remaining()).toEqual([]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(server.received).toHaveLength(1);
  });

  test('aborting while an attempt is in flight rejects with the caller’s reason and closes the connection', async () => {
    const server = await silent();
    const { fetch, clock } = manual();
    const controller = new AbortController();
    const result = settled(fetch(server.url, { signal: controller.signal }));
    await server.accepted(1);
    await until(() => server.data[0]!.length > 0);
    controller.abort('stop');
    await until(() => result.done && server.closed === 1);
    expect(result.error).toBe('stop');
    expect(clock.remaining()).toEqual([]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  test('an already aborted signal sends nothing', async () => {
    const server = await always503();
    const { fetch } = manual();
    const reason = new Error('already');
    await expect(fetch(server.url, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(server.received).toHaveLength(0);
  });
});

describe('timeout.attempt', () => {
  test('a server that never answers: each attempt is cut at its deadline, then TimeoutError', async () => {
    const server = await silent();
    const { fetch, clock } = manual({ retry: 2, timeout: { attempt: 1000 } });
    const result = settled(fetch(server.url));
    await server.accepted(1);
    await until(() => clock.remaining().includes(1000));
    await clock.advance(1000);
    // The GET is replayable: a backoff sleep, then a second attempt.
    await until(() => clock.remaining().length === 1 && !clock.remaining().includes(1000));
    await clock.runNext();
    await server.accepted(2);
    await until(() => clock.remaining().includes(1000));
    expect(result.done).toBe(false);
    await clock.advance(1000);
    // Both aborted attempts' connections are closed (the transport's pool may
    // open a spare one of its own: Node 20's and 24's fetch both do).
    await until(() => result.done && server.closed >= 2);
    const err = result.error as DeadlineExceededError;
    expect(err).toBeInstanceOf(DeadlineExceededError);
    expect(err).toBeInstanceOf(StaunchError);
    expect(err.name).toBe('TimeoutError');
    expect(err.code).toBe('STAUNCH_DEADLINE');
    expect(err.timeout).toBe('attempt');
    expect(err.attempts).toBe(2);
  });

  test('a POST that timed out is not sent again (it may have been processed)', async () => {
    const server = await silent();
    const { fetch, clock } = manual({ timeout: { attempt: 1000 } });
    const result = settled(fetch(server.url, { method: 'POST', body: 'once' }));
    await server.accepted(1);
    await until(() => clock.remaining().includes(1000));
    await clock.advance(1000);
    await until(() => result.done);
    expect(result.error).toBeInstanceOf(DeadlineExceededError);
    expect(server.connections).toBe(1);
  });
});

describe('timeout.total', () => {
  test('bounds the attempt in flight: one attempt, aborted when the total runs out', async () => {
    const server = await silent();
    const { fetch, clock } = manual({ retry: 3, timeout: { attempt: 60_000, total: 2000 } });
    const result = settled(fetch(server.url));
    await server.accepted(1);
    await until(() => clock.remaining().includes(2000));
    await clock.advance(2000);
    await until(() => result.done && server.closed === 1);
    expect(result.error).toMatchObject({ code: 'STAUNCH_DEADLINE', timeout: 'total', ms: 2000 });
    expect(server.connections).toBe(1);
  });

  test('per request, timeout.total overrides the client', async () => {
    const server = await silent();
    const { fetch, clock } = manual();
    const result = settled(fetch(server.url, { staunch: { timeout: { total: 500 } } }));
    await server.accepted(1);
    await until(() => clock.remaining().includes(500));
    await clock.advance(500);
    await until(() => result.done);
    expect(result.error).toMatchObject({ timeout: 'total', ms: 500 });
  });
});

test('a server that accepts and closes at once settles: retried, then a staunch error', async () => {
  const server = await rawServer((socket: Socket) => socket.destroy());
  cleanup.add(server);
  const { fetch, clock } = manual({ retry: 2, timeout: { attempt: 1000 } });
  const result = settled(fetch(server.url));
  // Node 20's fetch may hang on such a peer; the attempt deadline still holds.
  for (let i = 0; i < 20 && !result.done; i++) {
    await flush();
    if (!result.done) await clock.runNext();
  }
  await until(() => result.done);
  expect(isStaunchError(result.error)).toBe(true);
  expect(server.connections).toBeGreaterThanOrEqual(1);
  expect(server.connections).toBeLessThanOrEqual(2);
});
